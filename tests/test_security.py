"""Transport security end to end: a real sidecar started with --token-file,
--tls-cert/--tls-key and --tls-client-ca, called through pixelflight.Client
(pyarrow.flight) and `pixelflight health`.

Certificates come from internal/testpki (ECDSA, valid for an hour), written
by `go run` since the venv has no `cryptography`. Path-like cascade names
are refused in tests/test_faces.py::test_bad_params (end to end) and in
server TestCascadeNamesNeverPaths (Go).
"""

import json
import os
import shutil
import stat
import subprocess
import sys

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from conftest import BIN, ROOT, Sidecar
from pixelflight import Client, SidecarUnavailable
from test_docs import doc_block, run_block
from test_plugin import find_jar

TOKEN = "py-test-token-6f1c0a9e2b7d4458"
CLIENT_VARS = ("PIXELFLIGHT_TOKEN", "PIXELFLIGHT_TOKEN_FILE", "PIXELFLIGHT_TLS_CA", "PIXELFLIGHT_CLIENT_CERT",
               "PIXELFLIGHT_CLIENT_KEY", "PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME", "PIXELFLIGHT_ENDPOINT")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Each test sets the client variables it means to use, nothing else."""
    for k in CLIENT_VARS:
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    go = os.environ.get("GO") or shutil.which("go")
    if not go:
        pytest.fail("the Go toolchain is needed to write test certificates (go run ./internal/testpki/cmd/testpki)")
    out = subprocess.run([go, "run", "./internal/testpki/cmd/testpki", str(d)], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=300)
    files = json.loads(out.stdout)
    tok = d / "token"
    tok.write_text(TOKEN + "\n")
    tok.chmod(0o600)
    files["Token"] = str(tok)
    return files


def start(listen, env, *args):
    """A sidecar; env holds the client variables its readiness check needs
    (set only while it starts: serve ignores them)."""
    with pytest.MonkeyPatch.context() as mp:
        for k in CLIENT_VARS:
            mp.delenv(k, raising=False)
        for k, v in env.items():
            mp.setenv(k, v)
        return Sidecar(listen, "--metrics-listen", "", *args)


@pytest.fixture(scope="module")
def token_sidecar(pki, tmp_path_factory):
    sock = tmp_path_factory.mktemp("tok") / "s.sock"
    s = start("grpc+unix://%s" % sock, {"PIXELFLIGHT_TOKEN": TOKEN}, "--token-file", pki["Token"])
    yield s
    assert s.stop() == 0, "".join(s.logs[-20:])
    assert TOKEN not in "".join(s.logs), "the token is in the sidecar's logs"


@pytest.fixture(scope="module")
def tls_sidecar(pki):
    s = start("grpc+tls://127.0.0.1:0", {"PIXELFLIGHT_TOKEN": TOKEN, "PIXELFLIGHT_TLS_CA": pki["CA"]},
              "--tls-cert", pki["ServerCert"], "--tls-key", pki["ServerKey"], "--token-file", pki["Token"])
    yield s
    assert s.stop() == 0, "".join(s.logs[-20:])


@pytest.fixture(scope="module")
def mtls_sidecar(pki):
    s = start("grpc+tls://localhost:0", {"PIXELFLIGHT_TLS_CA": pki["CA"], "PIXELFLIGHT_CLIENT_CERT": pki["ClientCert"],
                                         "PIXELFLIGHT_CLIENT_KEY": pki["ClientKey"]},
              "--tls-cert", pki["ServerCert"], "--tls-key", pki["ServerKey"], "--tls-client-ca", pki["CA"])
    yield s
    assert s.stop() == 0, "".join(s.logs[-20:])


def echo(client):
    b = pa.RecordBatch.from_arrays([pa.array([b"abc", b"xyz"])], names=["content"])
    [out] = list(client.map_batches("echo", [b]))
    return out.column("data").to_pylist()


@pytest.mark.check
def test_default_socket_is_private(sidecar):
    path = sidecar.location[len("grpc+unix://"):]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.check
def test_token_from_env(token_sidecar, pki, monkeypatch):
    monkeypatch.setenv("PIXELFLIGHT_TOKEN_FILE", pki["Token"])
    with Client(token_sidecar.location) as c:
        assert c.health()["status"] == "SERVING"
        assert echo(c) == [b"abc", b"xyz"]
    monkeypatch.delenv("PIXELFLIGHT_TOKEN_FILE")
    monkeypatch.setenv("PIXELFLIGHT_TOKEN", TOKEN)
    with Client(token_sidecar.location) as c:
        assert echo(c) == [b"abc", b"xyz"]


@pytest.mark.check
def test_wrong_or_missing_token(token_sidecar, monkeypatch):
    wrong = "not-the-token-123456"
    monkeypatch.setenv("PIXELFLIGHT_TOKEN", wrong)
    with Client(token_sidecar.location) as c:
        for call in (c.health, lambda: echo(c)):
            with pytest.raises(flight.FlightUnauthenticatedError, match="does not match") as e:
                call()
            assert wrong not in str(e.value) and TOKEN not in str(e.value)
    monkeypatch.delenv("PIXELFLIGHT_TOKEN")
    with Client(token_sidecar.location) as c:
        for call in (c.health, lambda: echo(c)):
            with pytest.raises(flight.FlightUnauthenticatedError, match="authorization: Bearer <token>"):
                call()


@pytest.mark.check
def test_bad_token_settings_say_which(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    monkeypatch.setenv("PIXELFLIGHT_TOKEN_FILE", str(empty))
    with pytest.raises(ValueError, match="PIXELFLIGHT_TOKEN_FILE=.*empty"):
        Client("grpc://127.0.0.1:1")
    monkeypatch.setenv("PIXELFLIGHT_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="cannot read the token file"):
        Client("grpc://127.0.0.1:1")
    with pytest.raises(ValueError, match="the token argument must be printable ASCII"):
        Client("grpc://127.0.0.1:1", token="two words")


@pytest.mark.check
def test_tls_with_ca(tls_sidecar, pki, monkeypatch):
    assert tls_sidecar.location.startswith("grpc+tls://127.0.0.1:")
    monkeypatch.setenv("PIXELFLIGHT_TOKEN", TOKEN)
    monkeypatch.setenv("PIXELFLIGHT_TLS_CA", pki["CA"])
    with Client(tls_sidecar.location) as c:
        assert echo(c) == [b"abc", b"xyz"]
    # The name checked can differ from the endpoint's host.
    with Client(tls_sidecar.location, override_hostname="localhost") as c:
        assert c.health()["status"] == "SERVING"
    # A CA that did not sign the server's certificate: no connection.
    monkeypatch.setenv("PIXELFLIGHT_TLS_CA", pki["OtherCA"])
    with pytest.raises(SidecarUnavailable):
        Client(tls_sidecar.location).health()
    # Plain text to a TLS port: no connection either.
    with pytest.raises(SidecarUnavailable):
        Client(tls_sidecar.location.replace("grpc+tls://", "grpc://")).health()


@pytest.mark.check
def test_mtls(mtls_sidecar, pki, monkeypatch):
    monkeypatch.setenv("PIXELFLIGHT_TLS_CA", pki["CA"])
    with Client(mtls_sidecar.location, client_cert=pki["ClientCert"], client_key=pki["ClientKey"]) as c:
        assert echo(c) == [b"abc", b"xyz"]
    monkeypatch.setenv("PIXELFLIGHT_CLIENT_CERT", pki["ClientCert"])
    monkeypatch.setenv("PIXELFLIGHT_CLIENT_KEY", pki["ClientKey"])
    with Client(mtls_sidecar.location) as c:
        assert c.health()["status"] == "SERVING"
    for k in ("PIXELFLIGHT_CLIENT_CERT", "PIXELFLIGHT_CLIENT_KEY"):
        monkeypatch.delenv(k)
    with pytest.raises(SidecarUnavailable):
        Client(mtls_sidecar.location).health()
    with pytest.raises(SidecarUnavailable):
        Client(mtls_sidecar.location, client_cert=pki["OtherClientCert"], client_key=pki["OtherClientKey"]).health()
    with pytest.raises(ValueError, match="needs both"):
        Client(mtls_sidecar.location, client_cert=pki["ClientCert"])


def health(*args, env=None):
    e = {k: v for k, v in os.environ.items() if k not in CLIENT_VARS}
    e.update(env or {})
    return subprocess.run([BIN, "health", "--timeout", "5s", *args], capture_output=True, text=True, env=e, timeout=30)


@pytest.mark.check
def test_health_command_tls_and_token(tls_sidecar, pki):
    loc = tls_sidecar.location
    r = health("--endpoint", loc, "--tls-ca", pki["CA"], "--token-file", pki["Token"])
    assert (r.returncode, r.stdout) == (0, "SERVING\n"), r.stderr
    r = health(env={"PIXELFLIGHT_ENDPOINT": loc, "PIXELFLIGHT_TLS_CA": pki["CA"], "PIXELFLIGHT_TOKEN_FILE": pki["Token"]})
    assert (r.returncode, r.stdout) == (0, "SERVING\n"), r.stderr
    r = health("--endpoint", loc, "--tls-ca", pki["CA"])
    assert r.returncode == 1 and "Unauthenticated" in r.stderr, r.stderr
    r = health("--endpoint", loc, "--tls-ca", pki["CA"], env={"PIXELFLIGHT_TOKEN": "wrong-token-abc"})
    assert r.returncode == 1 and "does not match" in r.stderr and "wrong-token-abc" not in r.stderr, r.stderr


@pytest.mark.check
def test_health_command_mtls(mtls_sidecar, pki):
    base = ["--endpoint", mtls_sidecar.location, "--tls-ca", pki["CA"]]
    r = health(*base, "--client-cert", pki["ClientCert"], "--client-key", pki["ClientKey"])
    assert (r.returncode, r.stdout) == (0, "SERVING\n"), r.stderr
    r = health(*base)
    assert r.returncode == 1 and "not reachable" in r.stderr, r.stderr


# The data source in a JVM of its own (local[2]), whose environment, or
# spark.executorEnv.* (argv[4], JSON), holds the client variables: reads
# the images twice, then maps them through pixelflight_map (map_images'
# JVM path), prints the rows as JSON.
DATASOURCE_JOB = r"""
import json, sys
from pyspark.sql import SparkSession
from pixelflight.spark import EXTENSIONS, map_images, read_images
jar, images, endpoint, conf = sys.argv[1:5]
b = (SparkSession.builder.master("local[2]").config("spark.jars", jar).config("spark.sql.extensions", EXTENSIONS)
     .config("spark.ui.enabled", "false"))
for k, v in json.loads(conf).items():
    b = b.config("spark.executorEnv." + k, v)
spark = b.getOrCreate()
rows = [[r.asDict() for r in read_images(spark, images, "info", endpoint=endpoint)
         .select("path", "width", "error").collect()] for _ in range(2)]
mapped = map_images(spark.read.format("binaryFile").load(images), "info", endpoint=endpoint, runner="jvm")
print(json.dumps(rows + [[r.asDict() for r in mapped.select("path", "width", "error").collect()]]))
"""


@pytest.mark.parametrize("mode", ["tls+token", "mtls"])
def test_datasource_tls(tls_sidecar, mtls_sidecar, pki, images, mode):
    """The JVM data source and table function over TLS with a bearer
    token, the settings in the executor's environment, and over mutual
    TLS, the settings in spark.executorEnv.* (local mode keeps those out of
    the JVM's environment): every file answered, three times, on the
    executor's shared channel."""
    if mode == "tls+token":
        sidecar, env = tls_sidecar, {"PIXELFLIGHT_TLS_CA": pki["CA"], "PIXELFLIGHT_TOKEN_FILE": pki["Token"]}
    else:
        sidecar, env = mtls_sidecar, {"PIXELFLIGHT_TLS_CA": pki["CA"], "PIXELFLIGHT_CLIENT_CERT": pki["ClientCert"],
                                      "PIXELFLIGHT_CLIENT_KEY": pki["ClientKey"]}
    good = os.path.join(images, "good")
    conf = {}
    if mode == "mtls":
        env, conf = {}, env
    p = subprocess.run([sys.executable, "-c", DATASOURCE_JOB, find_jar(), good, sidecar.location, json.dumps(conf)],
                       env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, **env),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    runs = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(runs) == 3
    for rows in runs:
        assert sorted(os.path.basename(r["path"]) for r in rows) == sorted(os.listdir(good))
        assert all(r["error"] is None and r["width"] > 0 for r in rows), rows


def test_datasource_tls_without_the_ca(tls_sidecar, images):
    """No PIXELFLIGHT_TLS_CA: the certificate is not trusted, and the job's
    error says so, and where the endpoint came from."""
    p = subprocess.run([sys.executable, "-c", DATASOURCE_JOB, find_jar(), os.path.join(images, "good"),
                        tls_sidecar.location, "{}"],
                       env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                                PIXELFLIGHT_RETRY_SECONDS="1"),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0
    assert "no sidecar answers at %s (from the endpoint option)" % tls_sidecar.location in p.stderr, \
        p.stderr[-4000:]
    assert "unable to find valid certification path" in p.stderr, p.stderr[-4000:]


@pytest.mark.check
def test_plain_text_beyond_loopback_needs_a_choice():
    r = subprocess.run([BIN, "serve", "--listen", "grpc://0.0.0.0:0", "--metrics-listen", ""],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "--tls-cert" in r.stderr and "--insecure-listen-any" in r.stderr, r.stderr
    s = Sidecar("grpc://0.0.0.0:0", "--insecure-listen-any", "--metrics-listen", "")
    try:
        assert any("--insecure-listen-any" in line and '"warn"' in line for line in s.logs), s.logs
    finally:
        assert s.stop() == 0


def test_protocol_doc_token_example(token_sidecar):
    """docs/protocol.md's token example as written: health answers with it."""
    client = flight.FlightClient(token_sidecar.location)
    [res] = run_block(doc_block("docs/protocol.md", "options = flight.FlightCallOptions"),
                      {"flight": flight, "client": client, "token": TOKEN})
    assert json.loads(res[0].body.to_pybytes())["status"] == "SERVING"
