"""The deployment templates: EMR classifications, the Dataproc cluster
script, the Kubernetes pod template and spark-defaults, the Dockerfile and
every shell script. Spark keys are checked against this Spark's own
registry (test_spark_conf.known); each checker also runs on bad fixtures
(spark-conf/testdata/*.bad.*), each of which must fail with its own error."""

import fnmatch
import glob
import json
import os
import re
import shlex
import subprocess

import pytest

from test_spark_conf import PLUGIN_KEYS, ROOT, known, parse, problems  # noqa: F401  (known is a fixture)

pytestmark = pytest.mark.check  # the whole module is in make check

CONF = os.path.join(ROOT, "spark-conf")
TESTDATA = os.path.join(CONF, "testdata")
PLUGIN = "org.pixelflight.spark.PixelflightPlugin"


def read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


def spark_problems(props, known, where):
    """The spark-defaults checks of test_spark_conf on a {key: value} dict."""
    text = "\n".join("%s %s" % (k, v) for k, v in props.items())
    return ["%s: %s" % (where, re.sub(r"^line \d+: ", "", e)) for e in problems(text, known)]


# --- EMR configuration classifications -------------------------------------

# The classifications these templates may use, and which may nest which: EMR
# nests the sections of container-executor.cfg (docker, gpu, cgroups) under
# container-executor, and shell exports under the *-env ones; nothing else.
EMR_CLASSIFICATIONS = {"spark", "spark-defaults", "spark-env", "yarn-site", "yarn-env", "capacity-scheduler",
                       "container-executor", "core-site", "hadoop-env"}
EMR_NESTING = {"container-executor": {"docker", "gpu", "cgroups"}, "spark-env": {"export"},
               "yarn-env": {"export"}, "hadoop-env": {"export"}}


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    if dups:
        raise ValueError("duplicate key %s" % ", ".join(dups))
    return dict(pairs)


def emr_problems(text, known):
    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except ValueError as e:
        return ["not valid JSON: %s" % e]
    if not isinstance(data, list):
        return ["the top level must be a list of classifications"]
    errs = []

    def walk(items, parent):
        seen = set()
        for item in items:
            if not isinstance(item, dict):
                errs.append("a classification must be an object")
                continue
            name = item.get("Classification")
            for field in sorted(set(item) - {"Classification", "Properties", "Configurations"}):
                errs.append("%s: unknown field %s (want Classification, Properties, Configurations)" % (name, field))
            if not isinstance(name, str):
                errs.append("an object has no Classification")
                continue
            if parent is None and name not in EMR_CLASSIFICATIONS:
                errs.append("unknown classification %s" % name)
            elif parent is not None and name not in EMR_NESTING.get(parent, set()):
                errs.append("%s cannot nest %s (EMR nests: %s)" % (parent, name, ", ".join(
                    "%s > %s" % (p, "/".join(sorted(c))) for p, c in sorted(EMR_NESTING.items()))))
            if name in seen:
                errs.append("%s appears twice" % name)
            seen.add(name)
            props = item.get("Properties", {})
            if not isinstance(props, dict):
                errs.append("%s: Properties must be an object" % name)
                props = {}
            for k, v in props.items():
                if not isinstance(v, str):
                    errs.append("%s: value of %s is not a string" % (name, k))
            if name == "spark-defaults" and parent is None:
                errs.extend(spark_problems({k: v for k, v in props.items() if isinstance(v, str)}, known, name))
            nested = item.get("Configurations", [])
            if not isinstance(nested, list):
                errs.append("%s: Configurations must be a list" % name)
            elif nested:
                walk(nested, name)

    walk(data, None)
    return errs


def classifications(path):
    return {c["Classification"]: c for c in json.loads(read(path))}


EMR_TEMPLATES = sorted(glob.glob(os.path.join(CONF, "emr", "*.json")))


@pytest.mark.parametrize("path", EMR_TEMPLATES + [os.path.join(TESTDATA, "emr.nested.good.json")],
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_emr_template(known, path):
    assert emr_problems(read(path), known) == []


@pytest.mark.parametrize("name,want", [
    ("emr.nesting.bad.json", "spark-defaults cannot nest docker"),
    ("emr.field.bad.json", "yarn-site: unknown field Property"),
    ("emr.value.bad.json", "spark-defaults: value of spark.executor.cores is not a string"),
    ("emr.key.bad.json", "spark.executor.resource.gpu.ammount is not a key this Spark knows"),
    ("emr.classification.bad.json", "unknown classification spark-default"),
    ("emr.duplicate.bad.json", "duplicate key spark.executor.cores"),
    ("emr.toplevel.bad.json", "the top level must be a list of classifications"),
])
def test_emr_bad_fixtures(known, name, want):
    [err] = emr_problems(read(TESTDATA, name), known)
    assert want in err


def image_paths():
    """What the image puts where: {file name: path} from the final stage's
    COPY instructions, and its ENV."""
    stages = dockerfile_stages(read(ROOT, "Dockerfile"))
    paths, env = {}, {}
    for instr, args, _ in stages[-1]["instructions"]:
        if instr == "COPY":
            dest = shlex.split(args)[-1]
            paths[os.path.basename(dest)] = dest
        elif instr == "ENV":
            env.update(dict(kv.split("=", 1) for kv in shlex.split(args)))
    return paths, env


def test_emr_docker_variant_matches_the_image():
    c = classifications(os.path.join(CONF, "emr", "configurations.json"))
    props = c["spark-defaults"]["Properties"]
    # Executors and the application master run in the same Docker image.
    for var in ("YARN_CONTAINER_RUNTIME_TYPE", "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE", "JAVA_HOME"):
        assert props["spark.executorEnv." + var] == props["spark.yarn.appMasterEnv." + var], var
    assert props["spark.executorEnv.YARN_CONTAINER_RUNTIME_TYPE"] == "docker"
    # Paths inside the image, as the Dockerfile lays it out.
    paths, env = image_paths()
    assert props["spark.pixelflight.binary"] == paths["pixelflight"]
    assert props["spark.jars"] == "local:" + paths["pixelflight-spark-plugin-spark3.5.jar"]  # EMR 7: Spark 3.5
    assert props["spark.executor.resource.gpu.discoveryScript"] == paths["discover-gpus.sh"]
    assert props["spark.executorEnv.JAVA_HOME"] == env["JAVA_HOME"]
    assert props["spark.plugins"] == PLUGIN
    # The image's registry is trusted by container-executor's docker section.
    registry = props["spark.executorEnv.YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"].split("/")[0]
    docker = {n["Classification"]: n["Properties"] for n in c["container-executor"]["Configurations"]}
    assert registry in docker["docker"]["docker.trusted.registries"].split(",")
    # GPU scheduling: YARN's GPU plugin, its cgroup paths agreeing, DRF.
    yarn = c["yarn-site"]["Properties"]
    assert yarn["yarn.nodemanager.resource-plugins"] == "yarn.io/gpu"
    assert "yarn.io/gpu" in yarn["yarn.resource-types"].split(",")
    assert docker["gpu"]["module.enabled"] == "true"
    assert docker["cgroups"]["root"] == yarn["yarn.nodemanager.linux-container-executor.cgroups.mount-path"]
    assert docker["cgroups"]["yarn-hierarchy"] == yarn["yarn.nodemanager.linux-container-executor.cgroups.hierarchy"]
    assert yarn["yarn.nodemanager.resource-plugins.gpu.docker-plugin"] == "nvidia-docker-v2"
    assert "nvidia" in docker["docker"]["docker.allowed.runtimes"].split(",")
    assert c["capacity-scheduler"]["Properties"]["yarn.scheduler.capacity.resource-calculator"] == \
        "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
    # The bootstrap action's --gpu mounts that cgroup root.
    assert "/devices" in read(CONF, "emr", "bootstrap.sh") and docker["cgroups"]["root"] in read(CONF, "emr", "bootstrap.sh")


def daemon_listen(script):
    m = re.search(r"ExecStart=\S+ serve --listen (\S+)", read(script))
    assert m, script
    return m.group(1)


def test_emr_daemon_variant_matches_the_bootstrap():
    props = classifications(os.path.join(CONF, "emr", "configurations-daemon.json"))["spark-defaults"]["Properties"]
    assert props["spark.executorEnv.PIXELFLIGHT_ENDPOINT"] == daemon_listen(os.path.join(CONF, "emr", "bootstrap.sh"))
    # The jar, for the pixelflight data source, where bootstrap.sh puts it.
    assert props["spark.jars"] == "local:/opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar"
    assert "spark.plugins" not in props  # the node's sidecar, not one per executor


# --- Dataproc -----------------------------------------------------------------

def dataproc_properties(text):
    """{variant: [(key, value)]} from create-cluster.sh's property arrays."""
    out = {}
    for name, body in re.findall(r"^(\w+)=\(\n(.*?)^\)", text, re.M | re.S):
        props = []
        for item in shlex.split(body, comments=True):
            prefix, _, kv = item.partition(":")
            key, _, value = kv.partition("=")
            props.append((prefix, key, value))
        out[name] = props
    return out


def dataproc_problems(text, known):
    errs = []
    variants = dataproc_properties(text)
    if not variants:
        return ["no property arrays (name=( ... )) in the script"]
    for name, props in variants.items():
        for prefix, key, _ in props:
            if prefix != "spark":
                errs.append("%s: %s:%s is not a spark: property" % (name, prefix, key))
        errs.extend(spark_problems({k: v for p, k, v in props if p == "spark"}, known, name))
    return errs


def test_dataproc_properties(known):
    text = read(CONF, "dataproc", "create-cluster.sh")
    assert dataproc_problems(text, known) == []
    variants = {n: {k: v for _, k, v in p} for n, p in dataproc_properties(text).items()}
    assert set(variants) == {"plugin", "daemon"}
    init = read(CONF, "dataproc", "pixelflight-init.sh")
    plugin = variants["plugin"]
    assert plugin["spark.plugins"] == PLUGIN
    # Paths where the init action puts the files.
    assert 'dir=/opt/pixelflight' in init
    assert plugin["spark.pixelflight.binary"] == "/opt/pixelflight/pixelflight"
    # Dataproc 2.2/2.3: Spark 3.5
    assert plugin["spark.jars"] == "file:///opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar"
    assert plugin["spark.executor.resource.gpu.discoveryScript"] == "/opt/pixelflight/discover-gpus.sh"
    for f in ("pixelflight", "pixelflight-spark-plugin-spark3.5.jar", "discover-gpus.sh"):
        assert f in init
    assert variants["daemon"]["spark.jars"] == plugin["spark.jars"]
    assert variants["daemon"]["spark.executorEnv.PIXELFLIGHT_ENDPOINT"] == \
        daemon_listen(os.path.join(CONF, "dataproc", "pixelflight-init.sh"))
    # The metadata the script sets is what the init action reads.
    set_keys = set(re.findall(r"(pixelflight-[a-z]+)=", text))
    read_keys = set(re.findall(r"meta (pixelflight-[a-z]+)", init))
    assert set_keys <= read_keys and "pixelflight-url" in set_keys


@pytest.mark.parametrize("text,want", [
    ("plugin=(\n\tspark:spark.exector.cores=4\n)\n", "plugin: spark.exector.cores is not a key this Spark knows"),
    ("plugin=(\n\tspark.executor.cores=4\n)\n", "is not a spark: property"),
    ("plugin=(\n\tspark:spark.plugins=com.example.Other\n)\n", "must name org.pixelflight.spark.PixelflightPlugin"),
    ("gcloud dataproc clusters create x --properties=spark:spark.executor.cores=4\n", "no property arrays"),
])
def test_dataproc_bad(known, text, want):
    [err] = dataproc_problems(text, known)
    assert want in err


# --- Kubernetes -----------------------------------------------------------------

@pytest.fixture(scope="module")
def k8scheck():
    """tools/k8scheck (its own Go module: k8s.io/api, sigs.k8s.io/yaml), as `make k8scheck` builds it."""
    exe = os.path.join(ROOT, "build", "k8scheck")
    if not os.path.exists(exe):
        pytest.fail("%s is missing: run `make k8scheck` (make test does)" % exe)

    def run(template, container, endpoint):
        p = subprocess.run([exe, "-container", container, "-endpoint", endpoint, template],
                           capture_output=True, text=True)
        assert p.returncode in (0, 1), p.stderr
        return [line.split(": ", 1)[1] for line in p.stdout.splitlines()]
    return run


def k8s_conf():
    return {k: v for _, k, v in parse(read(CONF, "k8s", "spark-defaults.conf"))}


def test_k8s_pod_template(k8scheck):
    conf = k8s_conf()
    template = os.path.join(ROOT, conf["spark.kubernetes.executor.podTemplateFile"])
    assert k8scheck(template, conf["spark.kubernetes.executor.podTemplateContainerName"],
                    conf["spark.executorEnv.PIXELFLIGHT_ENDPOINT"]) == []
    # The GPU is the sidecar's: the executors ask for none.
    assert not any(k.startswith("spark.executor.resource.gpu.") for k in conf)
    assert "spark.plugins" not in conf
    # The probes ask the same socket.
    text = read(template)
    assert text.count('"--endpoint", "%s"' % conf["spark.executorEnv.PIXELFLIGHT_ENDPOINT"]) == 2


@pytest.mark.parametrize("name,want", [
    ("pod-template.plain-sidecar.good.yaml", None),
    ("pod-template.typo.bad.yaml", 'unknown field "volumeMount"'),
    ("pod-template.no-gpu.bad.yaml", 'sidecar "pixelflight" has no nvidia.com/gpu limit'),
    ("pod-template.unshared.bad.yaml", 'executor container "spark-executor" does not mount /var/run/pixelflight'),
    ("pod-template.blocking-init.bad.yaml", "needs restartPolicy: Always"),
    ("pod-template.other-socket.bad.yaml", "listens on grpc+unix:///var/run/pixelflight/s.sock, but"),
    ("pod-template.hostpath.bad.yaml", 'volume "sock" is not an emptyDir'),
])
def test_k8s_fixtures(k8scheck, name, want):
    conf = k8s_conf()
    errs = k8scheck(os.path.join(TESTDATA, name), conf["spark.kubernetes.executor.podTemplateContainerName"],
                    conf["spark.executorEnv.PIXELFLIGHT_ENDPOINT"])
    if want is None:
        assert errs == []
    else:
        assert len(errs) == 1 and want in errs[0], errs


# --- Dockerfile -----------------------------------------------------------------

def dockerfile_instructions(text):
    """[(INSTRUCTION, args, [heredoc bodies])]: continuation lines joined,
    comments and parser directives dropped."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cmd = line
        while cmd.rstrip().endswith("\\") and i < len(lines):
            nxt = lines[i]
            i += 1
            cmd = cmd.rstrip()[:-1] + ("" if nxt.lstrip().startswith("#") else " " + nxt.strip())
        bodies = []
        for m in re.finditer(r"<<-?(['\"]?)(\w+)\1", cmd):
            body = []
            while i < len(lines) and lines[i] != m.group(2):
                body.append(lines[i])
                i += 1
            i += 1
            bodies.append("\n".join(body) + "\n")
        instr, _, args = cmd.strip().partition(" ")
        out.append((instr.upper(), args.strip(), bodies))
    return out


def dockerfile_stages(text):
    """The stages, each FROM's image with the global ARGs' defaults (the ARGs
    before the first FROM: base images as build arguments) put in."""
    stages, defaults = [], {}
    for instr, args, bodies in dockerfile_instructions(text):
        if instr == "ARG" and not stages:
            name, _, value = args.partition("=")
            defaults[name.strip()] = value.strip()
        if instr == "FROM":
            args = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: defaults.get(m.group(1) or m.group(2), m.group(0)), args)
            words = [w for w in args.split() if not w.startswith("--")]
            stages.append({"image": words[0], "name": words[2] if len(words) > 2 and words[1].upper() == "AS" else None,
                           "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((instr, args, bodies))
    return stages


def dockerignore(root):
    path = os.path.join(root, ".dockerignore")
    if not os.path.exists(path):
        return []
    return [p.strip().rstrip("/") for p in read(path).splitlines() if p.strip() and not p.startswith("#")]


def ignored(path, patterns):
    """Whether .dockerignore patterns leave path (or a parent) out of the context."""
    parts = os.path.normpath(path).split("/")
    for n in range(1, len(parts) + 1):
        prefix = "/".join(parts[:n])
        for p in patterns:
            if fnmatch.fnmatchcase(prefix, p) or (p.startswith("**/") and fnmatch.fnmatchcase(prefix, p[3:])):
                return True
    return False


def used_stages(stages):
    """Indexes of the stages the default build runs: the last, and those it
    reaches through FROM a stage and COPY --from."""
    index = {s["name"]: i for i, s in enumerate(stages) if s["name"]}
    used, todo = set(), [len(stages) - 1] if stages else []
    while todo:
        i = todo.pop()
        if i in used:
            continue
        used.add(i)
        if stages[i]["image"] in index:
            todo.append(index[stages[i]["image"]])
        for instr, args, _ in stages[i]["instructions"]:
            m = re.search(r"--from=(\S+)", args) if instr == "COPY" else None
            if m and m.group(1) in index:
                todo.append(index[m.group(1)])
    return used


def dockerfile_problems(text, root):
    errs = []
    stages = dockerfile_stages(text)
    names = {s["name"] for s in stages if s["name"]}
    if len(stages) < 2:
        errs.append("not a multi-stage build")
    for s in stages:
        image = s["image"]
        if image in names or image == "scratch":  # a stage, or no image at all
            continue
        ref = image.split("@")[0]
        tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else None
        if "@sha256:" not in image and (tag is None or tag == "latest" or "$" in image):
            errs.append("base image %s is not pinned to a tag" % image)
    patterns = dockerignore(root)
    used = used_stages(stages)
    runs = []
    for i, s in enumerate(stages):
        for instr, args, _ in s["instructions"]:
            if instr == "RUN":
                runs.append(args)
            # A stage the default build leaves out (the Dockerfile's prebuilt
            # one, whose context scripts/image.sh assembles and
            # tests/test_image.py builds) is not checked against this one.
            if instr not in ("COPY", "ADD") or i not in used:
                continue
            words = shlex.split(args)
            if any(w.startswith("--from") for w in words):
                continue
            srcs = [w for w in words if not w.startswith("--")][:-1]
            for src in srcs:
                if src.startswith("<<"):
                    continue
                if src != "." and ignored(src, patterns):
                    errs.append("%s source %s is excluded by .dockerignore" % (instr, src))
                elif not os.path.exists(os.path.join(root, src)):
                    errs.append("%s source %s does not exist" % (instr, src))
    for target, what in (("build", "the binary"), ("plugin", "the plugin jar")):
        if not any(re.search(r"\bmake %s\b" % target, r) for r in runs):
            errs.append("no RUN builds %s with `make %s` (what CI runs)" % (what, target))
    final = stages[-1]["instructions"] if stages else []
    users = [a for i, a, _ in final if i == "USER"]
    if not users:
        errs.append("no USER: the image runs as root")
    elif users[-1].split(":")[0] in ("root", "0"):
        errs.append("USER %s: the image runs as root" % users[-1])
    if not any(i == "HEALTHCHECK" and "pixelflight" in a and "health" in a for i, a, _ in final):
        errs.append("no HEALTHCHECK running `pixelflight health`")
    if not any(i == "ENTRYPOINT" for i, _, _ in final):
        errs.append("no ENTRYPOINT")
    labels = " ".join(a for i, a, _ in final if i == "LABEL")
    for label in ("title", "source", "version"):
        if "org.opencontainers.image.%s=" % label not in labels:
            errs.append("no org.opencontainers.image.%s label" % label)
    return errs


def test_dockerfile():
    assert dockerfile_problems(read(ROOT, "Dockerfile"), ROOT) == []
    assert dockerfile_problems(read(TESTDATA, "Dockerfile.good"), ROOT) == []


@pytest.mark.parametrize("name,want", [
    ("Dockerfile.latest.bad", "base image nvidia/cuda:latest is not pinned"),
    ("Dockerfile.untagged.bad", "base image golang is not pinned"),
    ("Dockerfile.root.bad", "USER root: the image runs as root"),
    ("Dockerfile.nohealth.bad", "no HEALTHCHECK"),
    ("Dockerfile.gobuild.bad", "no RUN builds the binary with `make build`"),
    ("Dockerfile.missing.bad", "COPY source spark-plugins does not exist"),
    ("Dockerfile.ignored.bad", "COPY source build/images is excluded by .dockerignore"),
])
def test_dockerfile_bad_fixtures(name, want):
    [err] = dockerfile_problems(read(TESTDATA, name), ROOT)
    assert want in err


def make_prereqs(makefile, target):
    """target's prerequisites in the Makefile, its `VAR := ...` variables expanded."""
    defs = dict(re.findall(r"^(\w+)\s*:=\s*(.*)$", makefile, re.M))

    def expand(words):
        out = []
        for w in words:
            m = re.fullmatch(r"\$\((\w+)\)", w)
            out += expand(defs[m.group(1)].split()) if m else [w]
        return out
    return expand(re.search(r"^%s:(.*)$" % re.escape(target), makefile, re.M).group(1).split())


def test_dockerfile_builds_what_ci_builds():
    stages = dockerfile_stages(read(ROOT, "Dockerfile"))
    makefile = read(ROOT, "Makefile")
    # CI (make test) builds with the same targets: test-py needs build and plugin.
    prereqs = make_prereqs(makefile, "test-py")
    assert {"build", "plugin"} <= set(prereqs)
    # The final stage copies the Makefile's outputs from the build stages.
    jars = [re.search(r"^%s\s*:= (\S+)$" % v, makefile, re.M).group(1) for v in ("PLUGIN", "PLUGIN_35")]
    assert re.search(r"^bin/pixelflight:", makefile, re.M)
    # The final stage copies from the artifacts stage, which is (by default)
    # the source stage: the Makefile's outputs from the build stages, laid
    # out as in the image (the prebuilt stage takes the same layout from
    # the context make image assembles).
    def froms(stage):
        out = {}
        for instr, args, _ in stage["instructions"]:
            m = re.match(r"--from=(\S+) (\S+) (\S+)", args)
            if instr == "COPY" and m:
                out.setdefault(m.group(1), []).append((m.group(2), m.group(3)))
        return out
    [source] = [s for s in stages if s["name"] == "source"]
    [artifacts] = [s for s in stages if s["name"] == "artifacts"]
    assert artifacts["image"] == "source"
    built = froms(source)
    assert built["go"][0][0].endswith("/bin/pixelflight")
    assert sorted(src for src, _ in built["jvm"]) == sorted("/src/" + j for j in jars)
    final = froms(stages[-1])["artifacts"]
    for src, dest in built["go"] + built["jvm"]:
        assert (dest, dest) in final, dest
    # Runtime Python: the runtime pins of requirements.txt, not the test-only ones.
    run = " ".join(a for i, a, _ in stages[-1]["instructions"] if i == "RUN")
    picked = re.search(r"grep -E '\^\(([\w|]+)\)=='", run).group(1).split("|")
    pins = dict(line.split("==") for line in read(ROOT, "python", "requirements.txt").splitlines()
                if "==" in line and not line.startswith("#"))
    assert set(picked) == {"pyarrow", "pandas", "numpy"} and set(picked) <= set(pins)
    for test_only in ("pytest", "scipy", "scikit-image", "opencv-python-headless", "pyspark"):
        assert test_only not in run
    assert "opencv-data" in run and "openjdk-17-jre-headless" in run and "python3" in run


def test_dockerignore():
    patterns = dockerignore(ROOT)
    for path in (".venv", "build", "bin", "spark-plugin/target", ".git", "python/pixelflight.egg-info"):
        assert ignored(path, patterns), path
    for path in ("go.mod", "cmd", "python/pixelflight", "spark-conf/discover-gpus.sh", "spark-plugin/pom.xml"):
        assert not ignored(path, patterns), path


def test_image_entrypoint_runs_pixelflight_and_yarn_commands(shellcheck, tmp_path):
    """The entrypoint (scripts/docker-entrypoint.sh, which the Dockerfile
    copies) passes `bash ...` through, as YARN's Docker runtime starts
    executors, and runs pixelflight otherwise."""
    [src] = [shlex.split(a)[-2] for i, a, _ in dockerfile_stages(read(ROOT, "Dockerfile"))[-1]["instructions"]
             if i == "COPY" and shlex.split(a)[-1] == "/usr/local/bin/docker-entrypoint"]
    script = tmp_path / "docker-entrypoint"
    script.write_text(read(ROOT, src))
    shell_ok(str(script))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pixelflight").write_text("#!/bin/sh\necho pixelflight \"$@\"\n")
    (fake / "pixelflight").chmod(0o755)
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % fake)
    for args, want in ((["serve"], "pixelflight serve"), (["--help"], "pixelflight --help"),
                       (["health", "--timeout", "1s"], "pixelflight health --timeout 1s"),
                       (["bash", "-c", "echo launched"], "launched"), ([], "pixelflight")):
        out = subprocess.run(["sh", str(script), *args], env=env, capture_output=True, text=True, check=True).stdout
        assert out.strip() == want, (args, out)


# --- Shell scripts --------------------------------------------------------------

def shell_scripts():
    """Every *.sh, as `make lint-sh` finds them."""
    skip = {".venv", "build", ".git", "spark-conf/testdata"}
    out = []
    for dirpath, dirnames, files in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        dirnames[:] = [d for d in dirnames if os.path.normpath(os.path.join(rel, d)) not in skip]
        out += [os.path.join(dirpath, f) for f in files if f.endswith(".sh")]
    return sorted(out)


def shell_problems(path):
    p = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    if p.returncode != 0:
        return ["bash -n: " + p.stderr.strip()]
    p = subprocess.run(["shellcheck", "--severity=warning", "--format=gcc", path], capture_output=True, text=True)
    return p.stdout.splitlines()


def shell_ok(path):
    assert shell_problems(path) == []


@pytest.fixture(scope="module")
def shellcheck():
    if subprocess.run(["sh", "-c", "command -v shellcheck"], capture_output=True).returncode != 0:
        pytest.fail("shellcheck is missing: `make lint-sh` installs it (make test does)")


def test_every_shell_script(shellcheck):
    scripts = shell_scripts()
    for must in ("scripts/demo.sh", "spark-conf/discover-gpus.sh", "spark-conf/emr/bootstrap.sh",
                 "spark-conf/dataproc/pixelflight-init.sh", "spark-conf/dataproc/create-cluster.sh"):
        assert os.path.join(ROOT, must) in scripts, must
    for path in scripts:
        assert shell_problems(path) == [], path
        assert os.access(path, os.X_OK), "%s is not executable" % path


@pytest.mark.parametrize("name,want", [
    ("syntax.bad.sh.txt", "syntax error: unexpected end of file"),
    ("cd.bad.sh.txt", "SC2164"),
])
def test_shell_bad_fixtures(shellcheck, name, want):
    [err] = shell_problems(os.path.join(TESTDATA, name))
    assert want in err


# --- README ---------------------------------------------------------------------

def test_readme_lists_every_folder():
    readme = read(CONF, "README.md")
    for d in sorted(os.listdir(CONF)):
        if os.path.isdir(os.path.join(CONF, d)) and d != "testdata":
            assert "`%s/`" % d in readme, d
    assert "Still to come" not in readme
