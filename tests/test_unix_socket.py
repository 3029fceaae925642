"""Unix socket safety end to end (SECURITY.md, "Unix sockets"): the
clients refuse a socket whose listening process runs as another uid before
they send it anything, the Python client (pyarrow.flight) and the JVM data
source alike, in the same words; serve's default socket lives in a
directory only its user may enter, at the path the Python client computes.

The squatter is a real process of another uid (nobody, 65534): it binds as
root, hands the socket file to nobody, drops to nobody and then listens,
so SO_PEERCRED reports nobody. It counts the connections and bytes it
receives. The window between bind and chmod on the server side is tested
in Go (internal/unixsock TestListenNoWindow).
"""

import os
import re
import stat
import subprocess
import sys

import pytest

from conftest import BIN, Sidecar
from pixelflight import Client
from pixelflight.client import PEER_MESSAGE, ForeignSocket, default_endpoint
from test_plugin import find_jar

NOBODY = 65534

SQUATTER = r"""
import os, socket, sys, threading, time
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chown(path, 65534, 65534)
os.chmod(path, 0o777)
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
s.listen(16)  # SO_PEERCRED: the credentials of listen's caller
conns, nbytes = [], []

def read(c):
    while True:
        b = c.recv(65536)
        if not b:
            return
        nbytes.append(len(b))

def serve():
    while True:
        c, _ = s.accept()
        conns.append(c)
        threading.Thread(target=read, args=(c,), daemon=True).start()

threading.Thread(target=serve, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
time.sleep(0.3)
print(len(conns), sum(nbytes), flush=True)
"""


class Squatter:
    """A process of uid nobody listening at path."""

    def __init__(self, path):
        if os.geteuid() != 0:
            pytest.skip("needs root, to run a process as another uid")
        self.path = str(path)
        self.proc = subprocess.Popen([sys.executable, "-c", SQUATTER, self.path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline() == "ready\n"

    def received(self):
        """(connections, bytes) it received; ends it."""
        out, _ = self.proc.communicate(timeout=30)
        conns, nbytes = out.split()
        return int(conns), int(nbytes)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for k in ("PIXELFLIGHT_ENDPOINT", "PIXELFLIGHT_TOKEN", "PIXELFLIGHT_TOKEN_FILE", "XDG_RUNTIME_DIR", "TMPDIR"):
        monkeypatch.delenv(k, raising=False)


def test_python_client_refuses_another_users_socket(tmp_path):
    """The token, the command and the rows never reach a squatter: every
    call is refused with ForeignSocket, naming the path and both uids."""
    import pyarrow as pa
    sq = Squatter(tmp_path / "squat.sock")
    want = PEER_MESSAGE % (sq.path, NOBODY, os.geteuid())
    batch = pa.RecordBatch.from_arrays([pa.array([b"secret image bytes"])], names=["content"])
    with Client("grpc+unix://" + sq.path, token="secret-token-123") as c:
        with pytest.raises(ForeignSocket) as e:
            c.health()
        assert str(e.value) == want
        with pytest.raises(ForeignSocket) as e:
            list(c.map_batches("echo", [batch]))
        assert str(e.value) == want
        with pytest.raises(ForeignSocket):
            c.check("echo", {})
    conns, nbytes = sq.received()
    assert conns >= 3 and nbytes == 0, (conns, nbytes)


def test_health_and_bench_refuse_another_users_socket(tmp_path):
    """`pixelflight health` and `bench` (Go's client) refuse the squatter
    in the same words, before the token leaves."""
    sq = Squatter(tmp_path / "squat.sock")
    env = dict(os.environ, PIXELFLIGHT_TOKEN="secret-token-123")
    want = PEER_MESSAGE % (sq.path, NOBODY, os.geteuid())
    for args in (["health", "--endpoint", "grpc+unix://" + sq.path],
                 ["bench", "--endpoint", "grpc+unix://" + sq.path, "--generate", "64x64", "--count", "1"]):
        p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and want in p.stderr, (args, p.stderr)
    conns, nbytes = sq.received()
    assert conns >= 2 and nbytes == 0, (conns, nbytes)


DATASOURCE_JOB = r"""
import sys
from pyspark.sql import SparkSession
jar, images, endpoint = sys.argv[1:4]
spark = (SparkSession.builder.master("local[1]").config("spark.jars", jar)
         .config("spark.ui.enabled", "false").getOrCreate())
spark.read.format("pixelflight").option("op", "info").option("endpoint", endpoint).load(images).collect()
"""


def test_datasource_refuses_another_users_socket(tmp_path, images):
    """The JVM client (Channels.checkPeer) refuses the squatter in the same
    words, before the token or a file's bytes leave."""
    sq = Squatter(tmp_path / "squat.sock")
    p = subprocess.run([sys.executable, "-c", DATASOURCE_JOB, find_jar(), os.path.join(images, "good"),
                        "grpc+unix://" + sq.path],
                       env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                                PIXELFLIGHT_TOKEN="secret-token-123", PIXELFLIGHT_RETRY_SECONDS="1"),
                       capture_output=True, text=True, timeout=300)
    conns, nbytes = sq.received()
    assert p.returncode != 0
    assert PEER_MESSAGE % (sq.path, NOBODY, os.geteuid()) in p.stderr, p.stderr[-4000:]
    assert conns >= 1 and nbytes == 0, (conns, nbytes)


def serve_default(env):
    """serve's default --listen under env, from its --help."""
    out = subprocess.run([BIN, "serve", "--help"], env=env, capture_output=True, text=True, timeout=30)
    m = re.search(r'--listen string\n.*\(default "([^"]+)"\)', out.stdout + out.stderr)
    assert m, out.stdout + out.stderr
    return m.group(1)


@pytest.mark.check
def test_default_socket_agrees_with_serve(tmp_path, monkeypatch):
    """The Python client's default endpoint is serve's default --listen,
    with and without XDG_RUNTIME_DIR and TMPDIR."""
    base = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "TMPDIR")}
    cases = [{}, {"TMPDIR": str(tmp_path) + "/"}, {"TMPDIR": ""}, {"XDG_RUNTIME_DIR": "/run/user/1000"},
             {"XDG_RUNTIME_DIR": "relative/dir", "TMPDIR": str(tmp_path)}]
    for env in cases:
        with monkeypatch.context() as mp:
            for k, v in env.items():
                mp.setenv(k, v)
            ours = default_endpoint()
        assert ours == serve_default(dict(base, **env)), env
    assert default_endpoint() == "grpc+unix:///tmp/pixelflight-%d/pixelflight.sock" % os.geteuid()


@pytest.mark.check
def test_serve_makes_the_default_directory_private(tmp_path, monkeypatch):
    """serve with no --listen makes $XDG_RUNTIME_DIR/pixelflight 0700, its
    socket 0600, and a client with no endpoint finds it; a directory
    others may use is refused at start."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    loc = default_endpoint()
    path = loc[len("grpc+unix://"):]
    s = Sidecar(loc, "--metrics-listen", "")
    try:
        assert stat.S_IMODE(os.stat(tmp_path / "pixelflight").st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with Client() as c:
            assert c.source.startswith("the default") and c.health()["status"] == "SERVING"
    finally:
        assert s.stop() == 0, "".join(s.logs[-20:])
    os.chmod(tmp_path / "pixelflight", 0o755)
    p = subprocess.run([BIN, "serve", "--metrics-listen", ""], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "the socket directory %s has mode 0755" % (tmp_path / "pixelflight") in p.stderr, p.stderr
