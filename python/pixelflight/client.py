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


# The client's security settings, each also a Client argument (see
# connection_settings). Distinct from serve's own variables
# (PIXELFLIGHT_TLS_CERT is the server's certificate), except the token
# file, which names the same token on both sides.
TOKEN_ENV = "PIXELFLIGHT_TOKEN"
TOKEN_FILE_ENV = "PIXELFLIGHT_TOKEN_FILE"
TLS_CA_ENV = "PIXELFLIGHT_TLS_CA"
CLIENT_CERT_ENV = "PIXELFLIGHT_CLIENT_CERT"
CLIENT_KEY_ENV = "PIXELFLIGHT_CLIENT_KEY"
OVERRIDE_HOSTNAME_ENV = "PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME"


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError("cannot read %s: %s" % (what, e)) from None


def connection_settings(endpoint, token=None, token_file=None, tls_ca=None, client_cert=None, client_key=None,
                        override_hostname=None):
    """Returns (keyword arguments for pyarrow.flight.FlightClient, call
    headers) for a sidecar at endpoint.

    Each argument, when not given, comes from its environment variable:

    - ``token`` (the bearer token itself), else ``token_file`` (a file
      holding it, whitespace trimmed), else PIXELFLIGHT_TOKEN, else the file
      PIXELFLIGHT_TOKEN_FILE names: sent as ``authorization: Bearer
      <token>`` with every call, to a sidecar started with --token-file;
    - for ``grpc+tls://`` endpoints only: ``tls_ca`` / PIXELFLIGHT_TLS_CA, a
      PEM file of the CA certificates to trust (default: the system's);
      ``client_cert`` / PIXELFLIGHT_CLIENT_CERT and ``client_key`` /
      PIXELFLIGHT_CLIENT_KEY, PEM files of a client certificate for a
      sidecar that asks for one (--tls-client-ca); ``override_hostname`` /
      PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME, the name to check the sidecar's
      certificate against instead of the endpoint's host.

    Errors name the setting and never the token.
    """
    env = os.environ.get
    headers = []
    source = path = None
    if token:
        source = "the token argument"
    elif token_file:
        source, path = "token_file=%s" % token_file, token_file
    elif env(TOKEN_ENV):
        source, token = TOKEN_ENV, env(TOKEN_ENV)
    elif env(TOKEN_FILE_ENV):
        path = env(TOKEN_FILE_ENV)
        source = "%s=%s" % (TOKEN_FILE_ENV, path)
    if path:
        token = _read(path, "the token file (%s)" % source).decode("ascii", "replace")
    if source:
        token = token.strip()
        if not token:
            raise ValueError("the bearer token from %s is empty" % source)
        if not all("!" <= c <= "~" for c in token):
            raise ValueError("the bearer token from %s must be printable ASCII without spaces" % source)
        headers.append((b"authorization", b"Bearer " + token.encode("ascii")))

    kwargs = {}
    if endpoint.startswith("grpc+tls://"):
        tls_ca = tls_ca or env(TLS_CA_ENV)
        client_cert = client_cert or env(CLIENT_CERT_ENV)
        client_key = client_key or env(CLIENT_KEY_ENV)
        override_hostname = override_hostname or env(OVERRIDE_HOSTNAME_ENV)
        if tls_ca:
            kwargs["tls_root_certs"] = _read(tls_ca, "the CA file %s" % tls_ca)
        if bool(client_cert) != bool(client_key):
            raise ValueError("a client certificate needs both %s and %s (client_cert, client_key)"
                             % (CLIENT_CERT_ENV, CLIENT_KEY_ENV))
        if client_cert:
            kwargs["cert_chain"] = _read(client_cert, "the client certificate %s" % client_cert)
            kwargs["private_key"] = _read(client_key, "the client key %s" % client_key)
        if override_hostname:
            kwargs["override_hostname"] = override_hostname
    return kwargs, headers


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

    ``endpoint`` is a Flight location (``grpc+unix:///path.sock``,
    ``grpc://host:port`` or ``grpc+tls://host:port``); by default it comes
    from PIXELFLIGHT_ENDPOINT. The token and TLS settings (``token``,
    ``token_file``, ``tls_ca``, ``client_cert``, ``client_key``,
    ``override_hostname``) default to their PIXELFLIGHT_* variables: see
    connection_settings.
    """

    def __init__(self, endpoint=None, window=4, max_rows=64, max_bytes=32 << 20, timeout=None, *, token=None,
                 token_file=None, tls_ca=None, client_cert=None, client_key=None, override_hostname=None):
        self.endpoint, self.source = resolve_endpoint(endpoint)
        self.window, self.max_rows, self.max_bytes = window, max_rows, max_bytes
        kwargs, headers = connection_settings(
            self.endpoint, token=token, token_file=token_file, tls_ca=tls_ca, client_cert=client_cert,
            client_key=client_key, override_hostname=override_hostname)
        self.options = flight.FlightCallOptions(timeout=timeout, headers=headers)
        self._client = flight.FlightClient(self.endpoint, **kwargs)

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
