"""Arrow Flight client for the pixelflight sidecar."""

import collections
import json
import logging
import os
import socket
import struct
import threading
import time

import pyarrow as pa
import pyarrow.flight as flight

from .params import PLUGIN

ENV = "PIXELFLIGHT_ENDPOINT"
# Written by the Spark executor plugin (spark-plugin/) into the executor's
# working directory, which is where the executor's Python workers run, and
# into its files directory, where the Python workers of a Spark Connect
# session run in a directory named after the session's artifacts
# (SPARK_JOB_ARTIFACT_UUID).
ENDPOINT_FILE = "pixelflight.endpoint"


def default_socket_path(environ=None):
    """The sidecar's default socket, in a directory only its user may
    enter: $XDG_RUNTIME_DIR/pixelflight/pixelflight.sock when
    XDG_RUNTIME_DIR is an absolute path, else
    $TMPDIR/pixelflight-<uid>/pixelflight.sock ($TMPDIR: /tmp when unset or
    empty; <uid>: the effective uid). serve's default --listen
    (internal/unixsock.DefaultPath) and the data source's default
    (spark-plugin's Channels.defaultEndpoint) follow the same rule."""
    env = os.environ if environ is None else environ
    run = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(run):
        return os.path.normpath(os.path.join(run, "pixelflight", "pixelflight.sock"))
    tmp = env.get("TMPDIR") or "/tmp"
    return os.path.normpath(os.path.join(tmp, "pixelflight-%d" % os.geteuid(), "pixelflight.sock"))


def default_endpoint():
    """The sidecar's default location: grpc+unix:// and default_socket_path()."""
    return "grpc+unix://" + default_socket_path()


def resolve_endpoint(endpoint=None):
    """Returns (endpoint, where it came from): the argument, else
    PIXELFLIGHT_ENDPOINT, else the executor plugin's pixelflight.endpoint file
    in the working directory (or its parent, in a Spark Connect session's
    directory), else the default socket. ``unix:///path`` is taken as
    ``grpc+unix:///path``, as serve and ``pixelflight health`` take it."""
    found, source = _find_endpoint(endpoint)
    if found[:7].lower() == "unix://":
        found = "grpc+unix://" + found[7:]
    return found, source


def _find_endpoint(endpoint):
    if endpoint:
        return endpoint, "the endpoint argument"
    if os.environ.get(ENV):
        return os.environ[ENV], "the environment variable " + ENV
    files = [ENDPOINT_FILE]
    session = os.environ.get("SPARK_JOB_ARTIFACT_UUID")
    if session and os.path.basename(os.getcwd()) == session:
        files.append(os.path.join(os.pardir, ENDPOINT_FILE))
    for path in files:
        try:
            with open(path) as f:
                found = f.read().strip()
            if found:
                return found, "%s (written by the executor plugin)" % os.path.abspath(path)
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


class InvalidEndpoint(ValueError):
    """The endpoint is not a location a Flight client can use."""


def _flight_client(endpoint, source, kwargs):
    """A FlightClient for endpoint; InvalidEndpoint, naming the endpoint and
    where it came from, when pyarrow cannot parse it or has no transport
    for its scheme, or when it is a grpc+unix location with a host or a
    relative path (pyarrow drops the host: grpc+unix://tmp/x.sock connects
    to /x.sock)."""
    why = _unix_problem(endpoint)
    if why:
        raise InvalidEndpoint("the pixelflight endpoint %r (from %s) is not one a Flight client can use: %s"
                              % (endpoint, source, why))
    try:
        return flight.FlightClient(endpoint, **kwargs)
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowNotImplementedError) as e:
        raise InvalidEndpoint("the pixelflight endpoint %r (from %s) is not one a Flight client can use: %s; want "
                              "grpc+unix:///path.sock (or unix:///path.sock), grpc://host:port or "
                              "grpc+tls://host:port" % (endpoint, source, e)) from None


def _unix_problem(endpoint):
    """What is wrong with a grpc+unix endpoint's socket path, or None."""
    if not endpoint.lower().startswith("grpc+unix:"):
        return None
    rest = endpoint[len("grpc+unix:"):]
    path = rest[2:] if rest.startswith("//") else rest
    host = path.split("/", 1)[0] if rest.startswith("//") else ""
    if host:
        return "want grpc+unix:///absolute/path.sock (three slashes): %r would be read as a host" % host
    if not path.startswith("/"):
        return "want an absolute socket path, as in grpc+unix:///tmp/pixelflight.sock"
    return None


# SECURITY.md's rule for Unix sockets, which the JVM client
# (spark-plugin's Channels) applies with the same words: before a call, the
# client connects to the socket, reads the uid of the process listening
# there (SO_PEERCRED) and closes without sending a byte; a uid other than
# its own effective uid is refused.
PEER_MESSAGE = ("refusing the Unix socket %s: the process listening there runs as uid %d, not as uid %d like this "
                "client; nothing was sent to it (another user's socket could capture the token and the images: "
                "see SECURITY.md)")


class ForeignSocket(PermissionError):
    """The process listening at a grpc+unix endpoint runs as another uid."""


def socket_peer_uid(path, timeout=5.0):
    """Connects to the Unix socket at path, returns the uid of the process
    listening there (SO_PEERCRED: its uid when it called listen) and closes
    the connection without sending anything. OSError when none listens."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
    return struct.unpack("iII", cred)[1]


def check_unix_socket(path):
    """Raises ForeignSocket (PEER_MESSAGE) when the process listening at
    the Unix socket path runs as another uid than this process's effective
    uid, and pyarrow.flight.FlightUnavailableError when none listens there."""
    try:
        uid = socket_peer_uid(path)
    except OSError as e:
        raise flight.FlightUnavailableError("connecting to %s: %s" % (path, e.strerror or e)) from None
    ours = os.geteuid()
    if uid != ours:
        raise ForeignSocket(PEER_MESSAGE % (path, uid, ours))


def _unix_path(endpoint):
    """The socket path of a grpc+unix endpoint (checked by _unix_problem), else None."""
    if endpoint.lower().startswith("grpc+unix://"):
        return endpoint[len("grpc+unix://"):]
    return None


log = logging.getLogger("pixelflight")

RETRY_ENV = "PIXELFLIGHT_RETRY_SECONDS"
DEFAULT_RETRY_SECONDS = 60.0
RETRY_PAUSE, MAX_RETRY_PAUSE = 0.1, 1.0  # first and longest pause between reconnection attempts
# How long a sidecar that has never answered this client is tried, when
# shorter than the retry setting: an endpoint that was never reachable
# (a wrong path or port) fails in seconds. The executor plugin's endpoint
# is the exception: the plugin restarts its sidecar, so it is waited for.
FIRST_CONTACT_SECONDS = 5.0


def retry_setting(seconds=None):
    """Returns (seconds, where from): how long map_batches keeps trying to
    reach a sidecar that became unavailable. The argument, else
    PIXELFLIGHT_RETRY_SECONDS, else 60; 0 turns retries off."""
    source = "the retry_seconds argument"
    if seconds is None:
        raw = os.environ.get(RETRY_ENV, "")
        if not raw:
            return DEFAULT_RETRY_SECONDS, "the default"
        source = RETRY_ENV
        try:
            seconds = float(raw)
        except ValueError:
            raise ValueError("%s=%r: want a number of seconds (0: no retries)" % (RETRY_ENV, raw)) from None
    if not seconds >= 0:
        raise ValueError("%s is %r: want a number of seconds, 0 or more (0: no retries)" % (source, seconds))
    return float(seconds), source


# outputs.json is each op's result columns, as the sidecar's registry gives
# them (generated by tools/paramschema; a Go test fails when the two
# differ): {op: {"fields": [...]}} where they are fixed, else
# {op: {"param", "param_type", "default", "values": {value: [...]}}}.
_OUTPUTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "outputs.json")
_outputs = None

# The Arrow types outputs.json names; "list<struct>" is a list of structs of
# the field's "fields".
_ARROW = {"int32": pa.int32(), "float32": pa.float32(), "float64": pa.float64(), "string": pa.string(),
          "binary": pa.binary()}


def _known_outputs():
    global _outputs
    if _outputs is None:
        with open(_OUTPUTS_FILE) as f:
            _outputs = json.load(f)
    return _outputs


def _arrow_field(f):
    if f["type"] == "list<struct>":
        t = pa.list_(pa.struct([_arrow_field(c) for c in f["fields"]]))
    else:
        t = _ARROW[f["type"]]
    return pa.field(f["name"], t, nullable=f["nullable"])


def _either(names):
    names = list(names)
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def result_schema(op, params=None):
    """The result columns the sidecar returns for op (the last is ``error``).

    Known locally so that Spark can plan a job without asking a sidecar:
    from outputs.json, which the sidecar's registry writes.
    """
    known = _known_outputs()
    out = known.get(op) if isinstance(op, str) else None
    if out is None:
        raise ValueError("unknown op %r: want %s" % (op, _either(known)))
    fields = out.get("fields")
    if fields is None:  # chosen by one param's value
        value = (params or {}).get(out["param"])
        if out["param_type"] == "bool":
            value = "true" if value else "false"
        else:
            value = value or out["default"]  # None and "": the sidecar's default
        fields = out["values"].get(value) if isinstance(value, str) else None
        if fields is None:
            raise ValueError("%s %s %r: want %s" % (op, out["param"], value, _either(out["values"])))
    return pa.schema([_arrow_field(f) for f in fields])


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

    ``endpoint`` is a Flight location (``grpc+unix:///path.sock``, or
    ``unix:///path.sock`` for the same, ``grpc://host:port`` or
    ``grpc+tls://host:port``); by default it comes from PIXELFLIGHT_ENDPOINT
    (see resolve_endpoint). One pyarrow cannot use raises InvalidEndpoint, a
    ValueError naming it and where it came from. The token and TLS settings (``token``,
    ``token_file``, ``tls_ca``, ``client_cert``, ``client_key``,
    ``override_hostname``) default to their PIXELFLIGHT_* variables: see
    connection_settings. ``retry_seconds`` (default PIXELFLIGHT_RETRY_SECONDS,
    else 60; 0: off) is how long map_batches retries a sidecar that became
    unavailable.

    For a ``grpc+unix`` endpoint, every call first checks who listens at the
    socket (check_unix_socket): a process of another uid is refused with
    ForeignSocket, a PermissionError, before the token, the command or a row
    is sent.
    """

    def __init__(self, endpoint=None, window=4, max_rows=64, max_bytes=32 << 20, timeout=None, *, token=None,
                 token_file=None, tls_ca=None, client_cert=None, client_key=None, override_hostname=None,
                 retry_seconds=None):
        self.endpoint, self.source = resolve_endpoint(endpoint)
        self.retry_seconds, self.retry_source = retry_setting(retry_seconds)
        self.window, self.max_rows, self.max_bytes = window, max_rows, max_bytes
        kwargs, headers = connection_settings(
            self.endpoint, token=token, token_file=token_file, tls_ca=tls_ca, client_cert=client_cert,
            client_key=client_key, override_hostname=override_hostname)
        self.options = flight.FlightCallOptions(timeout=timeout, headers=headers)
        self._details = _StatusDetails()  # the sidecar's ErrorInfo of each call (_error_info)
        kwargs = dict(kwargs, middleware=[self._details])
        self._client = _flight_client(self.endpoint, self.source, kwargs)
        self._socket = _unix_path(self.endpoint)
        self._kwargs = kwargs  # for _reconnect
        self._answered = False  # whether the sidecar has answered this client

    def _reconnect(self):
        """A new connection: a gRPC channel that failed waits out its
        reconnect backoff (1 s, growing 1.6 times a try) before it connects
        again, so it could keep a restarted sidecar waiting for seconds."""
        self._client.close()
        self._client = _flight_client(self.endpoint, self.source, self._kwargs)

    def _check_socket(self):
        """Before a call, which may connect: who listens at a grpc+unix endpoint."""
        if self._socket is not None:
            check_unix_socket(self._socket)

    def close(self):
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _patience(self):
        """(seconds, whether cut short): how long map_batches keeps trying
        a sidecar that is unavailable now."""
        if self._answered or "executor plugin" in self.source or self.retry_seconds <= FIRST_CONTACT_SECONDS:
            return self.retry_seconds, False
        return FIRST_CONTACT_SECONDS, True

    def _unavailable(self, err, waited=None):
        if "executor plugin" in self.source:
            advice = ("The executor plugin restarts its sidecar when it exits (at most spark.pixelflight.maxRestarts "
                      "times): the executor's log says why it stopped, and pixelflight-<executor id>.log beside %s "
                      "holds the sidecar's own log." % ENDPOINT_FILE)
        elif self.source.startswith("the default"):
            advice = ("On Spark, the executor plugin starts one on each executor: set spark.plugins=%s (with the "
                      "plugin jar in spark.jars). Or start one with `pixelflight serve --listen %s` on each machine, "
                      "or point spark.executorEnv.%s at a running one." % (PLUGIN, self.endpoint, ENV))
        else:
            advice = ("Start one with `pixelflight serve --listen %s`, or point %s (for executors: "
                      "spark.executorEnv.%s) at a running one." % (self.endpoint, ENV, ENV))
        if waited is None:
            retried = ""
        elif self._patience()[1]:
            retried = (" It never answered: tried for %.1f s (a sidecar that has answered is waited for %g s, "
                       "from %s)." % (waited, self.retry_seconds, self.retry_source))
        elif self.retry_seconds:
            retried = " Retried for %.1f s (%g s from %s)." % (waited, self.retry_seconds, self.retry_source)
        else:
            retried = " Not retried (0 s from %s)." % self.retry_source
        return SidecarUnavailable("no pixelflight sidecar answers at %s (from %s): %s.%s %s"
                                  % (self.endpoint, self.source, err, retried, advice))

    def action(self, name):
        """Runs a DoAction (capabilities, health, stats) and returns its JSON."""
        try:
            self._check_socket()
            results = list(self._client.do_action(flight.Action(name, b""), self.options))
        except flight.FlightUnavailableError as e:
            raise self._unavailable(e) from e
        return json.loads(results[0].body.to_pybytes())

    def capabilities(self):
        return self.action("capabilities")

    def check(self, op, params):
        """Sends op and params with no rows: the sidecar checks them as for
        a stream (pyarrow.ArrowInvalid names what is wrong; its error_info is
        the sidecar's ErrorInfo, ("BAD_COMMAND", {"message": ...}), or None).
        Not retried."""
        desc = flight.FlightDescriptor.for_command(json.dumps({"op": op, "params": params}).encode())
        try:
            self._check_socket()
            writer, reader = self._client.do_exchange(desc, self.options)
        except flight.FlightUnavailableError as e:
            raise self._unavailable(e) from e
        call = self._details.started()
        try:
            writer.begin(pa.schema([("content", pa.binary())]))
            writer.done_writing()
            reader.read_all()
        except pa.ArrowInvalid as e:
            e.error_info = call.info
            raise
        finally:
            _close(writer)

    def health(self):
        return self.action("health")

    def stats(self):
        return self.action("stats")

    def map_batches(self, op, batches, column="content", keep=(), strict=False, **params):
        """Streams record batches through op in one exchange.

        Yields batches of the ``keep`` columns and the op's result columns,
        every input row once, in input order: one batch per input slice, or
        several where a slice's results are larger than the sidecar's result
        batches (64 MiB). At most ``window`` slices are in flight at once.

        When the sidecar becomes unavailable (gRPC UNAVAILABLE: it was
        killed, restarted, or stopped draining), the client connects again
        and sends the slices not answered yet on a new exchange, so each
        result is still yielded exactly once and in order. It keeps trying
        for ``retry_seconds`` from the failure (any answer starts the count
        again), then raises SidecarUnavailable. A sidecar that has never
        answered this client is tried for FIRST_CONTACT_SECONDS (5) at most,
        unless the endpoint is the executor plugin's. Other errors (a bad command
        or params, a refused token, a failing row in strict mode) are
        raised at once: trying again would fail the same way. A
        pyarrow.ArrowInvalid (INVALID_ARGUMENT) has error_info, the
        sidecar's ErrorInfo as (reason, metadata), or None (docs/protocol.md,
        Status codes); a failing row in strict mode is named by its ``path``
        where the batch has one.
        """
        desc = flight.FlightDescriptor.for_command(
            json.dumps({"op": op, "column": column, "params": params, "strict": strict}).encode())
        want = result_schema(op, params)
        parts = (part for batch in batches for part in _slices(batch, self.max_rows, self.max_bytes))
        pending = collections.deque()  # slices sent and not answered yet, oldest first
        done = 0  # rows of pending[0] answered
        more = True  # parts may remain
        writer = reader = None
        call = None  # the exchange's _CallDetails
        down = None  # when the sidecar failed, if it has not answered since
        pause = RETRY_PAUSE

        def exchange():  # a new exchange, sending every pending slice
            nonlocal call
            self._check_socket()
            w, r = self._client.do_exchange(desc, self.options)
            call = self._details.started()
            try:
                w.begin(pending[0].select([column]).schema)
                for part in pending:
                    w.write_batch(part.select([column]))
                if not more:
                    w.done_writing()
            except BaseException:
                _close(w)
                raise
            return w, r

        try:
            while True:
                try:
                    while more and len(pending) < self.window:
                        part = next(parts, None)
                        if part is None:
                            more = False
                            if writer is not None:
                                writer.done_writing()
                        else:
                            pending.append(part)
                            if writer is None:  # the first slice, or the first after a failure
                                writer, reader = exchange()
                            else:
                                writer.write_batch(part.select([column]))
                    if not pending:
                        return
                    if writer is None:  # after a failure, with no slice to add
                        writer, reader = exchange()
                    try:
                        res = reader.read_chunk().data
                    except StopIteration:
                        raise RuntimeError("the sidecar at %s ended the %s exchange with %d slices unanswered"
                                           % (self.endpoint, op, len(pending))) from None
                except pa.ArrowInvalid as e:  # INVALID_ARGUMENT, from a read or from a write after it
                    e.error_info = call.info if call is not None else None
                    failed = _strict_failure(e.error_info, pending[0]) if strict and pending else None
                    if failed is None:
                        raise
                    err = pa.ArrowInvalid(failed)  # the file and the cause, once
                    err.error_info = e.error_info
                    raise err from None
                except flight.FlightUnavailableError as e:
                    _close(writer)
                    writer = reader = None
                    if done:  # send only what is unanswered
                        pending[0], done = pending[0].slice(done), 0
                    now = time.monotonic()
                    if down is None:
                        down = now
                        if self.retry_seconds:
                            log.warning("the pixelflight sidecar at %s is unavailable (%s): retrying for up to %g s, "
                                        "then sending the %d unanswered slices again", self.endpoint, e,
                                        self._patience()[0], len(pending))
                    patience = self._patience()[0]
                    if now - down >= patience:
                        raise self._unavailable(e, now - down) from e
                    time.sleep(min(pause, down + patience - now))
                    pause = min(2 * pause, MAX_RETRY_PAUSE)
                    self._reconnect()
                    continue
                self._answered = True
                if down is not None:
                    log.warning("the pixelflight sidecar at %s answers again after %.1f s", self.endpoint,
                                time.monotonic() - down)
                    down, pause = None, RETRY_PAUSE
                if not res.schema.equals(want):
                    raise RuntimeError("sidecar returned %s for %s, expected %s: client and sidecar versions differ?"
                                       % (res.schema, op, want))
                src = pending[0]
                if done + res.num_rows > src.num_rows:
                    raise RuntimeError("the sidecar at %s answered %d rows for the %d left of a slice"
                                       % (self.endpoint, res.num_rows, src.num_rows - done))
                yield pa.RecordBatch.from_arrays([src.column(k).slice(done, res.num_rows) for k in keep]
                                                 + res.columns, names=list(keep) + res.schema.names)
                done += res.num_rows
                if done == src.num_rows:
                    pending.popleft()
                    done = 0
        finally:
            _close(writer)


# The sidecar puts what a client acts on in its status's details: a
# google.rpc.ErrorInfo of domain "pixelflight" in gRPC's
# grpc-status-details-bin trailer (docs/protocol.md, Status codes). pyarrow
# raises INVALID_ARGUMENT as pyarrow.ArrowInvalid without the trailer; only
# client middleware sees it, as the call's headers where the sidecar sent
# none (it sends none), so each call's middleware keeps the ErrorInfo.
_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_DOMAIN = "pixelflight"


class _StatusDetails(flight.ClientMiddlewareFactory):
    """A _CallDetails for each call; started() is the last one this thread
    started (pyarrow starts a call's middleware on the calling thread)."""

    def __init__(self):
        self._local = threading.local()

    def start_call(self, info):
        self._local.call = _CallDetails()
        return self._local.call

    def started(self):
        return getattr(self._local, "call", None) or _CallDetails()


class _CallDetails(flight.ClientMiddleware):
    """The sidecar's ErrorInfo of one call, as (reason, metadata), once the
    call has ended with one; else None."""

    info = None

    def received_headers(self, headers):
        for value in headers.get(_DETAILS_KEY, ()):
            info = _error_info(value)
            if info is not None:
                self.info = info


def _error_info(status):
    """The ErrorInfo of domain _ERROR_DOMAIN in a serialized google.rpc.Status
    (Status: 3 details, Any; Any: 1 type_url, 2 value; ErrorInfo: 1 reason,
    2 domain, 3 metadata, map entries of 1 key, 2 value), as (reason,
    {key: value}); None when there is none or the bytes are not one."""
    try:
        for number, detail in _proto_fields(status):
            if number != 3:
                continue
            any_ = dict(_proto_fields(detail))
            if not _text(any_.get(1, b"")).endswith("/google.rpc.ErrorInfo"):
                continue
            reason, domain, metadata = "", "", {}
            for n, v in _proto_fields(any_.get(2, b"")):
                if n == 1:
                    reason = _text(v)
                elif n == 2:
                    domain = _text(v)
                elif n == 3:
                    entry = dict(_proto_fields(v))
                    metadata[_text(entry.get(1, b""))] = _text(entry.get(2, b""))
            if domain == _ERROR_DOMAIN:
                return reason, metadata
    except ValueError:  # not protobuf, or not UTF-8 where a string is (UnicodeDecodeError)
        pass
    return None


def _text(value):
    """A protobuf string field's value; ValueError if it is not one."""
    if not isinstance(value, bytes):
        raise ValueError("not a protobuf string")
    return value.decode()


def _proto_fields(data):
    """Yields a protobuf message's fields as (number, value): varints as
    ints, length-delimited fields as bytes; ValueError where it is cut short
    or of an unknown wire type, or is not bytes."""
    if not isinstance(data, bytes):
        raise ValueError("not a protobuf message")

    def varint(i):
        n = shift = 0
        while True:
            if i >= len(data) or shift > 63:
                raise ValueError("protobuf varint cut short")
            b = data[i]
            n |= (b & 0x7F) << shift
            i, shift = i + 1, shift + 7
            if not b & 0x80:
                return n, i

    i = 0
    while i < len(data):
        key, i = varint(i)
        kind = key & 7
        if kind == 0:
            value, i = varint(i)
        elif kind in (1, 2, 5):
            n, i = (8, i) if kind == 1 else (4, i) if kind == 5 else varint(i)
            if i + n > len(data):
                raise ValueError("protobuf field cut short")
            value, i = data[i:i + n], i + n
        else:
            raise ValueError("protobuf wire type %d" % kind)
        yield key >> 3, value


def _strict_failure(info, sent):
    """A strict-mode failure's message naming the row's file (its ``path``
    column, where the batch has one) and the cause, first, from the
    sidecar's STRICT_ROW ErrorInfo (info); else None. The sidecar names the
    row of the batch it got, the oldest unanswered slice."""
    if info is None or info[0] != "STRICT_ROW":
        return None
    try:
        row = int(info[1]["row"])
    except (KeyError, ValueError):
        return None
    where = "row %d of the slice" % row
    if "path" in sent.schema.names and 0 <= row < sent.num_rows:
        where = str(sent.column("path")[row].as_py())
    return "pixelflight: %s: %s (strict mode: the row failed, so the call did)" % (
        where, info[1].get("message", "").strip())


def _close(writer):
    """Ends an exchange; an error here is the one that ended it, already
    raised or being retried."""
    if writer is not None:
        try:
            writer.close()
        except pa.ArrowException:
            pass
