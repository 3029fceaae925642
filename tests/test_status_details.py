"""The facts a client acts on come in the gRPC status's details (a
google.rpc.ErrorInfo in grpc-status-details-bin, docs/protocol.md, Status
codes), not from the message's text: the real sidecar sends them, and a
stand-in Flight server whose messages say otherwise than its details shows
that the Python client and the plugin jar's Java client read the details."""

import json
import os
import sys
from concurrent import futures

import grpc
import pyarrow as pa
import pytest
from google.protobuf import any_pb2, empty_pb2
from google.protobuf.unknown_fields import UnknownFieldSet
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from conftest import CONNECT, session_builder
from pixelflight import Client
from pixelflight.params import check_params
from test_plugin import find_jar

pytestmark = [pytest.mark.check, pytest.mark.matrix]  # make check, and every leg of the version matrix (pyarrow 15 to 22: the middleware)

MARK = b"pixelflight-test-row:"


class Standin:
    """A Flight service whose DoExchange ends every exchange with
    INVALID_ARGUMENT, at its first record batch or at the end of its input:
    answer(names) gives the message and the ErrorInfo's reason and metadata,
    names being the rows' contents after MARK, in the batch's order."""

    def __init__(self, answer):
        self.answer = answer
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.method_handlers_generic_handler(
            "arrow.flight.protocol.FlightService", {"DoExchange": grpc.stream_stream_rpc_method_handler(self.exchange)})
        self.server.add_generic_rpc_handlers((handler,))
        self.location = "grpc://127.0.0.1:%d" % self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def exchange(self, requests, context):
        names = []
        for raw in requests:  # FlightData: its field 1000 is the message's body
            body = b"".join(f.data for f in UnknownFieldSet(empty_pb2.Empty.FromString(raw)) if f.field_number == 1000)
            if body:
                names = [n.split(b"\0")[0].decode() for n in body.split(MARK)[1:]]
                break
        message, reason, metadata = self.answer(names)
        info = any_pb2.Any()
        info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="pixelflight", metadata=metadata))
        context.abort_with_status(rpc_status.to_status(
            status_pb2.Status(code=grpc.StatusCode.INVALID_ARGUMENT.value[0], message=message, details=[info])))

    def stop(self):
        self.server.stop(None)


@pytest.fixture
def standin():
    made = []

    def start(answer):
        made.append(Standin(answer))
        return made[-1]
    yield start
    for s in made:
        s.stop()


def test_the_sidecars_details(sidecar, images):
    bad = os.path.join(images, "bad", "notes.png")
    good = os.path.join(images, "good", "pixel_1x1.png")
    batch = pa.record_batch([pa.array(["g", "b"]), pa.array([open(good, "rb").read(), open(bad, "rb").read()])],
                            names=["path", "content"])
    with Client(sidecar.location) as c:
        with pytest.raises(pa.ArrowInvalid) as e:
            list(c.map_batches("info", [batch], strict=True))
        reason, meta = e.value.error_info
        assert reason == "STRICT_ROW" and meta["row"] == "1", e.value.error_info
        assert str(e.value) == "pixelflight: b: %s (strict mode: the row failed, so the call did)" % meta["message"]
        with pytest.raises(pa.ArrowInvalid, match="sigma -1: want more than 0") as e:
            c.check("fft_convolve", {"sigma": -1})
        assert e.value.error_info == ("BAD_COMMAND", {"message": "sigma -1: want more than 0 and at most 1024"})


def test_python_client_reads_the_strict_row_from_the_details(standin):
    # The message names row 0 (decoy.png); the detail, row 2.
    s = standin(lambda names: ("strict mode: row 0 of the batch failed: what the message says", "STRICT_ROW",
                               {"row": str(names.index("target")), "message": "what the detail says"}))
    names = ["decoy", "other", "target"]
    batch = pa.record_batch([pa.array([n + ".png" for n in names]), pa.array([MARK + n.encode() for n in names])],
                            names=["path", "content"])
    with Client(s.location, retry_seconds=0) as c:
        with pytest.raises(pa.ArrowInvalid) as e:
            list(c.map_batches("info", [batch], strict=True))
    assert str(e.value) == "pixelflight: target.png: what the detail says (strict mode: the row failed, so the call did)"


def test_python_client_reads_the_bad_commands_problem_from_the_details(standin):
    s = standin(lambda names: ("op info: bad command: op decoy: bad command: what the message says", "BAD_COMMAND",
                               {"message": "what the detail says"}))
    with pytest.raises(ValueError) as e:
        check_params("info", {}, s.location, limits={})
    assert str(e.value) == "info: what the detail says (checked by the sidecar at %s)" % s.location


@pytest.fixture(scope="module")
def spark():
    if CONNECT:
        pytest.skip("the data source's executors are the Spark Connect server's")
    jar = find_jar()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    s = (session_builder("local[2]").appName("pixelflight-status-details-test").config("spark.jars", jar)
         .config("spark.ui.enabled", "false").getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    s.sql("ADD JAR '%s'" % jar)  # where an earlier module started the JVM without it
    yield s
    s.stop()


def test_java_client_reads_the_strict_row_from_the_details(spark, standin, tmp_path):
    # One file, one row: the message names a row 3 that the batch does not
    # have; the detail, row 0.
    (tmp_path / "target.png").write_bytes(MARK + b"target")
    s = standin(lambda names: ("strict mode: row 3 of the batch failed: what the message says", "STRICT_ROW",
                               {"row": str(names.index("target")), "message": "what the detail says"}))
    reader = (spark.read.format("pixelflight").option("op", "info").option("params", json.dumps({}))
              .option("strict", "true").option("endpoint", s.location).option("retrySeconds", "0"))
    with pytest.raises(Exception, match=r"target\.png: the sidecar at .*what the message says"):
        reader.load(str(tmp_path)).collect()
