"""The container image, built and run for real (issue 29).

`make image` builds the Dockerfile once per test session with buildah
(root; its own store under build/image, scripts/buildah.sh) on a local
Debian bookworm base made once by debootstrap (build/image-base), from a
context of the client's sources and the prebuilt artifacts of `make build`,
`make build-cuda` and `make plugin` (prebuilt/: part of the context by
design, the Dockerfile's ARTIFACTS=prebuilt). Then its containers run:

- the sidecar (the Kubernetes pattern of spark-conf/k8s): `serve` as the
  image's user 10001 with a socket directory bind-mounted from the host; a
  PySpark job on the host, as the same uid, calls map_images through that
  socket; the socket is mode 0600 (SECURITY.md); the image's health check
  command answers from a second container; with no GPU it serves on the CPU
  and says so;
- the YARN Docker executor image (spark-conf/emr): `IMAGE bash -c ...`
  through the entrypoint runs a local-mode PySpark job inside the container
  whose executors start their sidecar with the plugin jar in the image, as
  YARN would (pyspark is the job's, as YARN ships Spark to its containers:
  the host venv's pyspark and py4j are mounted read-only);
- pixelflight-cuda without a driver: refused by the dynamic loader
  (libcuda.so.1), no crash; the default binary is what falls back;
- the image's config: user, entrypoint, health check, and
  NVIDIA_DRIVER_CAPABILITIES with video.

Not run here: a Docker engine or Podman, a GPU in a container, EMR or
Kubernetes. Skipped, with the reason, where buildah cannot run (not root,
no buildah: `make debs` installs it)."""

import json
import math
import os
import shutil
import site
import stat
import subprocess
import sys
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "localhost/pixelflight:test"
BUILDAH = os.path.join(ROOT, "scripts", "buildah.sh")
CONTEXT = os.path.join(ROOT, "build", "image", "context")
IMAGES = os.environ.get("PIXELFLIGHT_TEST_IMAGES", os.path.join(ROOT, "build", "images"))
UID = 10001
# The host job's Python (as uid 10001): the system's, with this Python's packages.
HOST_PY = "/usr/bin/python3"

JOB = r'''
import json, sys
from pyspark.sql import SparkSession
from pixelflight.spark import map_images
mode, images = sys.argv[1], sys.argv[2]
b = (SparkSession.builder.master("local[2]").appName("pixelflight-image-test")
     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
endpoint = None
if mode == "plugin":
    b = (b.config("spark.jars", sys.argv[3]).config("spark.plugins", "org.pixelflight.spark.PixelflightPlugin")
         .config("spark.pixelflight.binary", sys.argv[4])
         .config("spark.pixelflight.args", "--workers 1 --metrics-listen="))
else:
    endpoint = sys.argv[3]
spark = b.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.format("binaryFile").load(images)
rows = map_images(df, "fft_convolve", output="stats", endpoint=endpoint).select("path", "mean", "error").collect()
print("RESULT " + json.dumps({r.path.rsplit("/", 1)[-1]: [r.mean, r.error] for r in rows}))
'''


def _why_not():
    if os.environ.get("PIXELFLIGHT_TEST_IMAGE") == "0":
        return "PIXELFLIGHT_TEST_IMAGE=0"
    if os.geteuid() != 0:
        return "the image test needs root (buildah with chroot isolation runs containers as root here)"
    if shutil.which("buildah") is None:
        return "no buildah on PATH (make debs installs it)"
    if not os.path.exists(HOST_PY) or subprocess.run(
            [HOST_PY, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
            text=True).stdout.strip() != str(tuple(sys.version_info[:2])):
        return "no %s of this Python's version for the host job as uid 10001" % HOST_PY
    if shutil.which("setpriv") is None or shutil.which("unshare") is None:
        return "no setpriv or unshare (util-linux) to run the host's Spark job as the sidecar's uid"
    return None


WHY_NOT = _why_not()
# On CI (CI=true: root, and `make debs` installed buildah) a skip would hide
# that the image went untested: there the module fails to load instead.
if WHY_NOT is not None and os.environ.get("CI") == "true" and os.environ.get("PIXELFLIGHT_TEST_IMAGE") != "0":
    raise RuntimeError("tests/test_image.py cannot run on CI: " + WHY_NOT)
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


def buildah(*args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run([BUILDAH, *args], **kw)


@pytest.fixture(scope="module")
def image():
    """make image, once: the tag, and how long it took."""
    t0 = time.monotonic()
    p = subprocess.run(["make", "-s", "image", "IMAGE=" + TAG], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, QUIET="1"))
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    print("make image: %.0f s" % (time.monotonic() - t0))
    return TAG


class Container:
    """A working container of the image (buildah from); run() runs a command
    in it as the image's user unless told, with bind mounts."""

    def __init__(self, image, mounts=()):
        self.name = "pixelflight-test-" + uuid.uuid4().hex[:8]
        p = buildah("from", "--name", self.name, image)
        assert p.returncode == 0, p.stderr
        self.mounts = [a for src, dst in mounts for a in ("-v", "%s:%s" % (src, dst))]

    def argv(self, *cmd):
        return [BUILDAH, "run", *self.mounts, self.name, "--", *cmd]

    def run(self, *cmd, timeout=300):
        return subprocess.run(self.argv(*cmd), capture_output=True, text=True, timeout=timeout)

    def remove(self):
        buildah("rm", self.name)


@pytest.fixture
def container(image):
    made = []

    def make(mounts=()):
        c = Container(image, mounts)
        made.append(c)
        return c
    yield make
    for c in made:
        c.remove()


def config(image):
    p = buildah("inspect", "--type", "image", image)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["Docker"]["config"]


def test_builds_from_its_context_alone(image):
    """The context make image built from: the Dockerfile, the client's
    tracked sources, two scripts, and prebuilt/ (by design: what make build,
    build-cuda and plugin made). The build ran with --pull-never on the
    local base; nothing is mounted into it."""
    files = set()
    for d, _, names in os.walk(CONTEXT):
        files |= {os.path.relpath(os.path.join(d, n), CONTEXT) for n in names}
    tracked = set(subprocess.run(["git", "ls-files", "python"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split())
    tracked = {f for f in tracked if os.path.exists(os.path.join(ROOT, f))}
    prebuilt = {"prebuilt/usr/local/bin/pixelflight", "prebuilt/usr/local/bin/pixelflight-cuda",
                "prebuilt/opt/pixelflight/pixelflight-spark-plugin.jar",
                "prebuilt/opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar",
                "prebuilt/opt/pixelflight/cuda/lib/libcufft.so.11", "prebuilt/opt/pixelflight/cuda/lib/libnvjpeg.so.12"}
    assert files == tracked | prebuilt | {"Dockerfile", ".dockerignore", "spark-conf/discover-gpus.sh",
                                          "scripts/docker-entrypoint.sh"}
    with open(os.path.join(ROOT, "Dockerfile")) as a, open(os.path.join(CONTEXT, "Dockerfile")) as b:
        assert a.read() == b.read()
    labels = json.loads(buildah("inspect", "--type", "image", image).stdout)["Docker"]["config"]["Labels"]
    assert labels["org.opencontainers.image.title"] == "pixelflight"


def test_config_user_entrypoint_health_and_video(image):
    c = config(image)
    env = dict(e.split("=", 1) for e in c["Env"])
    # The hardware JPEG decoder (nvJPEG) is mounted only with `video`.
    assert "video" in env["NVIDIA_DRIVER_CAPABILITIES"].split(",")
    assert {"compute", "utility"} <= set(env["NVIDIA_DRIVER_CAPABILITIES"].split(","))
    assert c["User"] == "10001:10001"
    assert c["Entrypoint"] == ["/usr/local/bin/docker-entrypoint"] and c["Cmd"] == ["serve"]
    assert c["Healthcheck"]["Test"][:3] == ["CMD", "pixelflight", "health"]
    assert env["PIXELFLIGHT_LISTEN"] == "grpc+unix:///var/run/pixelflight/pixelflight.sock"


def test_runtime_contents(container):
    c = container()
    p = c.run("sh", "-c", "id -u; java -version 2>&1 | head -1; "
              "python3 -c 'import pixelflight, pyarrow, pandas, numpy; print(pyarrow.__version__, pandas.__version__, numpy.__version__)'; "
              "test -f /usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml && echo cascades; "
              "ldconfig -p | grep -c -E 'libturbojpeg.so.0 |libdeflate.so.0 |libcufft.so.11 |libnvjpeg.so.12 '; "
              "pixelflight version")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == str(UID)
    assert '"17.' in lines[1]
    pins = dict(line.split("==") for line in open(os.path.join(ROOT, "python", "requirements.txt"))
                if line.split("==")[0] in ("pyarrow", "pandas", "numpy"))
    assert lines[2].split() == [pins["pyarrow"].strip(), pins["pandas"].strip(), pins["numpy"].strip()]
    assert lines[3] == "cascades" and lines[4] == "4"
    assert lines[5].startswith("pixelflight ")


def test_cuda_build_without_a_driver(container):
    """pixelflight-cuda links libcuda.so.1: with no driver the dynamic loader
    refuses it with its message (exit 127), not a signal; the default
    binary's auto backend is what falls back (test_sidecar_serves_the_host)."""
    p = container().run("pixelflight-cuda", "version")
    assert p.returncode == 127, (p.returncode, p.stdout, p.stderr)
    assert "libcuda.so.1: cannot open shared object file" in p.stderr


def run_job(argv, env, timeout=240):
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    [line] = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def check_results(res, n):
    assert len(res) == n, res
    for name, (mean, error) in res.items():
        assert error is None and mean is not None and math.isfinite(mean), (name, mean, error)


def pngs():
    good = os.path.join(IMAGES, "good")
    names = sorted(n for n in os.listdir(good) if n.endswith(".png"))
    assert names, "no PNGs in %s (make data)" % good
    return good, names


@pytest.fixture(scope="module")
def shared_tmp():
    """A directory uid 10001 can reach (pytest's own are root's, 0700)."""
    import tempfile
    d = tempfile.mkdtemp(prefix="pixelflight-image-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def host_results(image, shared_tmp):
    """The sidecar container serving a PySpark job on the host through a
    bind-mounted socket directory (the Kubernetes emptyDir), both as uid
    10001 (the socket is 0600 and the client checks the listener's uid)."""
    import pathlib
    tmp = pathlib.Path(shared_tmp)
    sockdir, home = tmp / "sock", tmp / "home"
    for d in (sockdir, home):
        d.mkdir()
        os.chown(d, UID, UID)
        d.chmod(0o700)
    job = tmp / "job.py"
    job.write_text(JOB)
    # At /run/pixelflight: /var/run is Debian's symlink to /run, and buildah
    # 1.28's chroot isolation does not follow it for a bind mount (Docker's and
    # Kubernetes' runtimes do); the same directory in the image either way.
    server = Container(image, [(str(sockdir), "/run/pixelflight")])
    log = open(tmp / "serve.log", "w+")
    # The image's CMD through its ENTRYPOINT (buildah run applies neither).
    proc = subprocess.Popen(server.argv("/usr/local/bin/docker-entrypoint", "serve", "--metrics-listen="),
                            stdout=log, stderr=subprocess.STDOUT)
    checker = Container(image, [(str(sockdir), "/run/pixelflight")])
    try:
        sock = sockdir / "pixelflight.sock"
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, open(tmp / "serve.log").read()
            time.sleep(0.2)
        st = os.stat(sock)
        # The image's health check command, from a second container sharing the directory.
        health = checker.run(*config(image)["Healthcheck"]["Test"][1:], timeout=60)
        good, names = pngs()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_SUBMIT", "PIXELFLIGHT_"))}
        # The system Python with this one's packages: a venv's interpreter may
        # lie where uid 10001 cannot reach (pyenv under /root, 0700).
        env.update(HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=HOST_PY, PYSPARK_DRIVER_PYTHON=HOST_PY,
                   PYTHONPATH=os.pathsep.join(site.getsitepackages() + [os.path.join(ROOT, "python")]))
        # The job runs as uid 10001, which Java and Hadoop need a passwd entry
        # for: the host's /etc/passwd plus one, bind-mounted over it in a
        # mount namespace of the job's own (the host's file is untouched).
        passwd = tmp / "passwd"
        with open("/etc/passwd") as f:
            passwd.write_text(f.read() + "pixelflight:x:%d:%d::%s:/usr/sbin/nologin\n" % (UID, UID, home))
        res = run_job(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       'mount --bind "$0" /etc/passwd && exec setpriv --reuid=%d --regid=%d --clear-groups "$@"'
                       % (UID, UID), str(passwd),
                       HOST_PY, str(job), "host", "file://" + good + "/*.png",
                       "grpc+unix://%s" % sock], env)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        server.remove()
        checker.remove()
    log.seek(0)
    return {"results": res, "n": len(names), "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid,
            "is_socket": stat.S_ISSOCK(st.st_mode), "health": health, "log": log.read()}


def test_sidecar_serves_the_host(host_results):
    r = host_results
    check_results(r["results"], r["n"])
    # SECURITY.md: mode 0600, the sidecar's user's.
    assert r["is_socket"] and r["mode"] == 0o600 and r["uid"] == UID
    assert r["health"].returncode == 0 and "SERVING" in r["health"].stdout, r["health"]
    # No GPU here: auto serves on the CPU and says why.
    assert "no NVIDIA driver: serving on the CPU" in r["log"], r["log"]


def test_yarn_executor_image(image, container, host_results, shared_tmp):
    """`IMAGE bash -c ...` (YARN's Docker runtime starts executors as `bash
    launch_container.sh`): the entrypoint passes bash through, and a
    local-mode PySpark job in the container calls map_images through the
    executor plugin, which starts the image's pixelflight from the image's
    jar. Same results as the host's job through the sidecar."""
    import pyspark
    import py4j
    good, names = pngs()
    c = container([(os.path.dirname(pyspark.__file__), "/opt/spark-python/pyspark:ro"),
                   (os.path.dirname(py4j.__file__), "/opt/spark-python/py4j:ro"),
                   (good, "/data:ro"), (shared_tmp, "/job:ro")])
    jar = "/opt/pixelflight/pixelflight-spark-plugin.jar"
    if pyspark.__version__.startswith("3."):
        jar = "/opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar"
    script = ("export HOME=/tmp SPARK_LOCAL_IP=127.0.0.1 PYTHONPATH=/opt/spark-python "
              "PYSPARK_PYTHON=/usr/bin/python3 JAVA_TOOL_OPTIONS='%s'; cd /tmp; "
              "exec python3 /job/job.py plugin 'file:///data/*.png' %s /usr/local/bin/pixelflight"
              % (os.environ.get("JAVA_TOOL_OPTIONS", ""), jar))
    res = run_job(c.argv("/usr/local/bin/docker-entrypoint", "bash", "-c", script), dict(os.environ))
    check_results(res, len(names))
    host = host_results["results"]
    for name, (mean, _) in res.items():
        assert math.isclose(mean, host[name][0], rel_tol=1e-6), (name, mean, host[name][0])
