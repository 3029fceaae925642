"""Arrow Flight client for the pixelflight sidecar."""

import json
import os
import tempfile

import pyarrow as pa
import pyarrow.flight as flight

ENV = "PIXELFLIGHT_ENDPOINT"
# Written by the Spark executor plugin (spark-plugin/) into the executor's
# working directory, which is where the executor's Python workers run.
ENDPOINT_FILE = "pixelflight.endpoint"


def default_endpoint():
    """The sidecar's default location: a Unix socket in the temp dir."""
    return "grpc+unix://" + os.path.join(tempfile.gettempdir(), "pixelflight.sock")


def resolve_endpoint(endpoint=None):
    """Returns (endpoint, where it came from): the argument, else
    PIXELFLIGHT_ENDPOINT, else the executor plugin's pixelflight.endpoint file
    in the working directory, else the default socket."""
    if endpoint:
        return endpoint, "the endpoint argument"
    if os.environ.get(ENV):
        return os.environ[ENV], "the environment variable " + ENV
    try:
        with open(ENDPOINT_FILE) as f:
            found = f.read().strip()
        if found:
            return found, "%s (written by the executor plugin)" % os.path.abspath(ENDPOINT_FILE)
    except OSError:
        pass
    return default_endpoint(), "the default (no endpoint argument, no %s, no %s)" % (ENV, ENDPOINT_FILE)


class SidecarUnavailable(ConnectionError):
    """No sidecar answers at the endpoint."""


def result_schema(op, params=None):
    """The result columns the sidecar returns for op (the last is ``error``).

    Known locally so that Spark can plan a job without asking a sidecar.
    """
    params = params or {}
    i32, f64 = pa.int32(), pa.float64()
    if op == "echo":
        fields = [("data", pa.binary())]
    elif op == "info":
        fields = [("format", pa.string()), ("width", i32), ("height", i32), ("channels", i32)]
    elif op == "fft_convolve":
        out = params.get("output", "f32")
        if out == "f32":
            fields = [("height", i32), ("width", i32), ("data", pa.binary())]
        elif out == "png":
            fields = [("height", i32), ("width", i32), ("png", pa.binary())]
        elif out == "stats":
            fields = [("min", f64), ("max", f64), ("mean", f64), ("std", f64)]
        else:
            raise ValueError("fft_convolve output %r: want f32, png or stats" % out)
    elif op == "detect_blobs":
        blob = pa.struct([pa.field(n, pa.float32(), nullable=False) for n in ("y", "x", "sigma")])
        fields = [("blobs", pa.list_(blob))]
    elif op == "watershed":
        fields = [("segments", i32), ("labels", pa.binary())]
    elif op == "detect_faces":
        face = pa.struct([pa.field(n, i32, nullable=False) for n in ("x", "y", "w", "h", "neighbors")])
        fields = [("faces", pa.list_(face))]
        if params.get("annotate"):
            fields.append(("annotated", pa.binary()))
    else:
        raise ValueError("unknown op %r: want echo, info, fft_convolve, detect_blobs, watershed or detect_faces" % op)
    return pa.schema(fields + [("error", pa.string())])


def _slices(batch, max_rows, max_bytes):
    """Cuts a batch into slices of at most max_rows rows and about max_bytes."""
    n = batch.num_rows
    if n == 0:
        return
    per_row = max(1, batch.nbytes // n)
    step = max(1, min(max_rows, max_bytes // per_row))
    for start in range(0, n, step):
        yield batch.slice(start, step)


class Client:
    """A connection to one sidecar.

    ``endpoint`` is a Flight location (``grpc+unix:///path.sock`` or
    ``grpc://host:port``); by default it comes from PIXELFLIGHT_ENDPOINT.
    """

    def __init__(self, endpoint=None, window=4, max_rows=64, max_bytes=32 << 20, timeout=None):
        self.endpoint, self.source = resolve_endpoint(endpoint)
        self.window, self.max_rows, self.max_bytes = window, max_rows, max_bytes
        self.options = flight.FlightCallOptions(timeout=timeout)
        self._client = flight.FlightClient(self.endpoint)

    def close(self):
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _unavailable(self, err):
        return SidecarUnavailable(
            "no pixelflight sidecar answers at %s (from %s): %s. Start one with "
            "`pixelflight serve --listen %s`, or point %s (for executors: "
            "spark.executorEnv.%s) at a running one."
            % (self.endpoint, self.source, err, self.endpoint, ENV, ENV))

    def action(self, name):
        """Runs a DoAction (capabilities, health, stats) and returns its JSON."""
        try:
            results = list(self._client.do_action(flight.Action(name, b""), self.options))
        except flight.FlightUnavailableError as e:
            raise self._unavailable(e) from e
        return json.loads(results[0].body.to_pybytes())

    def capabilities(self):
        return self.action("capabilities")

    def health(self):
        return self.action("health")

    def stats(self):
        return self.action("stats")

    def map_batches(self, op, batches, column="content", keep=(), strict=False, **params):
        """Streams record batches through op in one exchange.

        Yields, for each input slice, a batch of the ``keep`` columns and the
        op's result columns, in input order. At most ``window`` slices are in
        flight at once.
        """
        cmd = json.dumps({"op": op, "column": column, "params": params, "strict": strict}).encode()
        want = result_schema(op, params)
        writer = reader = None
        sent = []

        def receive():
            src = sent.pop(0)
            res = reader.read_chunk().data
            if not res.schema.equals(want):
                raise RuntimeError("sidecar returned %s for %s, expected %s: client and sidecar versions differ?"
                                   % (res.schema, op, want))
            cols = [src.column(k) for k in keep] + res.columns
            return pa.RecordBatch.from_arrays(cols, names=list(keep) + res.schema.names)

        try:
            for batch in batches:
                for part in _slices(batch, self.max_rows, self.max_bytes):
                    data = part.select([column])
                    if writer is None:  # open the exchange at the first row
                        desc = flight.FlightDescriptor.for_command(cmd)
                        writer, reader = self._client.do_exchange(desc, self.options)
                        writer.begin(data.schema)
                    writer.write_batch(data)
                    sent.append(part)
                    if len(sent) >= self.window:
                        yield receive()
            if writer is not None:
                writer.done_writing()
                while sent:
                    yield receive()
        except flight.FlightUnavailableError as e:
            raise self._unavailable(e) from e
        finally:
            if writer is not None:
                try:
                    writer.close()
                except pa.ArrowException:
                    pass  # the error that ended the call is already raised
