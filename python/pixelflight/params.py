"""Op parameters checked on the driver, before any Spark task runs.

params.json is the sidecar's own list of each op's parameters (generated
from its registry by tools/paramschema; a Go test fails when the two
differ): names, types, choices (fft_convolve's kernel, mode, ...) and
ranges (sigma, scale_factor, ...), which a Go test proves are exactly what
the sidecar refuses. check_params checks all of them with no sidecar, and
the rules joining two parameters (``_joined``: sigma only with the
gaussian kernel, png_scale only with output png, ...), which
tests/test_spark.py proves agree with a sidecar's. A bound set by a flag
of the sidecars (``limit``: sizes up to --max-kernel) is checked when the
caller knows the sidecars' flags (the executor plugin's, from the Spark
conf: plugin_limits), and so are detect_faces' cascade names (``names``:
those of Debian's opencv-data, which the plugin's sidecars have unless
--cascade-dir adds more). What only a sidecar knows (other sidecars'
cascades, the matrix's total weight) is checked by a sidecar when one
answers where the driver runs, with the code the tasks would run; else by
the tasks.
"""

import difflib
import json
import logging
import math
import os

import pyarrow as pa
import pyarrow.flight as flight

log = logging.getLogger("pixelflight")

_SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "params.json")


def schema():
    """Every op's parameters: {op: [{"name", "type", "default", "doc"}]}."""
    with open(_SCHEMA_FILE) as f:
        return json.load(f)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _matrix(v):
    if not isinstance(v, (list, tuple)) or not v:
        return False
    rows = [r for r in v if isinstance(r, (list, tuple)) and r and all(_number(x) for x in r)]
    return len(rows) == len(v) and len({len(r) for r in rows}) == 1


# Each type params.json names: its check and what it wants, in words.
_TYPES = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "float": (_number, "a finite number"),
    "int": (_whole, "a whole number (int)"),
    "bool": (lambda v: isinstance(v, bool), "True or False"),
    "list of rows of floats": (_matrix, "a list of rows of finite numbers, all rows as long"),
    "[w, h] or int": (lambda v: _whole(v) or (isinstance(v, (list, tuple)) and len(v) == 2 and all(map(_whole, v))),
                      "an int or a [width, height] pair of ints"),
}


PLUGIN = "org.pixelflight.spark.PixelflightPlugin"


def plugin_limits(conf_get):
    """The flags that bound parameters, {flag: value}, as the executor
    plugin's sidecars run with them: from spark.pixelflight.args, else
    spark.executorEnv.PIXELFLIGHT_<FLAG>; absent ones are serve's defaults.
    A flag that adds names (a param's ``names``: --cascade-dir) is 1 when
    set. None when the tasks use no plugin's sidecar (no plugin, or
    spark.executorEnv.PIXELFLIGHT_ENDPOINT set). conf_get(key) is a Spark
    conf value or None."""
    plugins = ",".join(conf_get(k) or "" for k in ("spark.plugins", "spark.plugins.defaultList"))
    if PLUGIN not in [x.strip() for x in plugins.split(",")] or conf_get("spark.executorEnv.PIXELFLIGHT_ENDPOINT"):
        return None
    args = (conf_get("spark.pixelflight.args") or "").split()
    flags = {b["limit"] for ps in schema().values() for p in ps
             for b in (p.get("min"), p.get("max")) if b and "limit" in b}
    named = {p["names"]["flag"] for ps in schema().values() for p in ps if p.get("names")}
    limits = {}
    for flag in flags:
        v = conf_get("spark.executorEnv.PIXELFLIGHT_" + flag.upper().replace("-", "_"))
        for i, a in enumerate(args):  # the last one wins, as in serve
            name, eq, given = a.lstrip("-").partition("=")
            if a.startswith("-") and name == flag:
                v = given if eq else (args[i + 1] if i + 1 < len(args) else v)
        try:
            if v is not None:
                limits[flag] = float(v)
        except ValueError:  # the sidecars will not start: the plugin says why
            pass
    for flag in named:
        v = conf_get("spark.executorEnv.PIXELFLIGHT_" + flag.upper().replace("-", "_"))
        for i, a in enumerate(args):
            name, eq, given = a.lstrip("-").partition("=")
            if a.startswith("-") and name == flag:
                v = given if eq else (args[i + 1] if i + 1 < len(args) else v)
        if v:
            limits[flag] = 1.0
    return limits


def check_params(op, params, endpoint=None, timeout=3.0, limits=None):
    """Raises ValueError, in the caller's terms, when op's params are wrong.

    Names, types, choices and ranges are checked against params.json; the
    bounds that a flag of the sidecars sets, only with ``limits`` ({flag:
    value}, absent flags at their defaults; None: the sidecars' flags are
    not known). Then, when a sidecar answers at the driver's endpoint
    (``endpoint``, else as resolve_endpoint finds it), the call is sent to
    it with no rows, which
    checks the rest as the tasks would; no sidecar there is not an error
    (under the executor plugin the driver has none), an endpoint that is no
    Flight location at all is (client.InvalidEndpoint, a ValueError).
    """
    ops = schema()
    if op not in ops:
        raise ValueError("unknown op %r: want one of %s" % (op, ", ".join(sorted(ops))))
    known = {p["name"]: p for p in ops[op]}
    for name, value in params.items():
        p = known.get(name)
        if p is None:
            near = difflib.get_close_matches(name, known, n=1)
            raise ValueError("%s has no parameter %r%s; %s" % (
                op, name, " (did you mean %r?)" % near[0] if near else "",
                "its parameters: " + ", ".join(known) if known else "it takes none"))
        if value is None:  # the sidecar's default
            continue
        ok, want = _TYPES[p["type"]]
        if ok(value):
            want = _constraint(p, value, limits)
        if want:
            raise ValueError("%s parameter %s=%r: want %s (%s)" % (op, name, value, want, p["doc"]))
    side = next((_bound(p["max"], limits) for p in ops[op] if p.get("max", {}).get("limit") == "max-kernel"), None)
    why = _joined(op, {k: v for k, v in params.items() if v is not None and v != ""},
                  {p["name"]: p.get("default") for p in ops[op]}, side and side["value"])
    if why:
        raise ValueError("%s: %s" % (op, why))
    _ask_sidecar(op, params, endpoint, timeout)


def _joined(op, given, defaults, max_kernel=None):
    """What breaks a rule joining two of op's parameters (those given, each
    of its type and inside its range), or one of them and the sidecars'
    --max-kernel (max_kernel; None: not known), in the sidecar's words;
    else None."""
    if op == "fft_convolve":
        kernel = given.get("kernel", "matrix" if "matrix" in given else "gaussian")
        if "matrix" in given and kernel != "matrix":
            return "matrix is given, so kernel must be \"matrix\" or omitted, not %s" % json.dumps(kernel)
        if "sigma" in given and kernel != "gaussian":
            return "sigma applies only to kernel gaussian, not %s" % json.dumps(kernel)
        if "size" in given and kernel not in ("gaussian", "box"):
            return "size applies only to kernels gaussian and box, not %s" % json.dumps(kernel)
        if kernel == "matrix" and "matrix" not in given:
            return "kernel matrix needs a matrix: a non-empty list of non-empty rows"
        if "png_scale" in given and given.get("output", "f32") != "png":
            return "png_scale applies only to output png, not %s" % json.dumps(given.get("output", "f32"))
        if kernel == "gaussian" and "size" not in given and max_kernel is not None:
            sigma = given.get("sigma", 1.0)
            size = 2 * math.ceil(3 * sigma) + 1  # the sidecar's default size
            if size > max_kernel:
                return "sigma %s: its default size, 2*ceil(3*sigma)+1 = %d, passes %s: give a size (1 to %s)" % (
                    _num(sigma), size, _num(max_kernel), _num(max_kernel))
    if op == "detect_blobs":
        lo, hi = (float(given.get(k, defaults[k])) for k in ("min_sigma", "max_sigma"))
        if hi < lo:
            return "max_sigma below min_sigma (%s < %s)" % (_num(hi), _num(lo))
        if max_kernel is not None and hi > max_kernel:
            return "max_sigma %s: want at most %s (the kernel side limit)" % (_num(hi), _num(max_kernel))
    return None


def _num(v):
    """v as Go's %v and %g print it: 50, 0.1234567, 1e+21."""
    s = repr(float(v))
    return s[:-2] if s.endswith(".0") else s


def _constraint(p, value, limits=None):
    """What p wants when value (of p's type) breaks its choices or range, else None."""
    choices = p.get("choices")
    if choices and value != "" and value not in choices:  # "": the default
        near = difflib.get_close_matches(value, choices, n=1)
        return "%s or %r%s" % (", ".join(map(repr, choices[:-1])), choices[-1],
                               " (did you mean %r?)" % near[0] if near else "")
    names = p.get("names")
    if names and limits is not None and not limits.get(names["flag"]) and value != "" and value not in names["known"]:
        near = difflib.get_close_matches(value, names["known"], n=1)
        return "one the sidecars have%s: %s (the executor plugin's sidecars have Debian's opencv-data; " \
            "--%s in spark.pixelflight.args, or spark.executorEnv.PIXELFLIGHT_%s, adds yours)" % (
                " (did you mean %r?)" % near[0] if near else "", ", ".join(names["known"]), names["flag"],
                names["flag"].upper().replace("-", "_"))
    lo, hi = (_bound(b, limits) for b in (p.get("min"), p.get("max")))
    if not (lo or hi):
        return None
    values = value if isinstance(value, (list, tuple)) else [value]
    if all((not lo or _inside(v, lo, 1)) and (not hi or _inside(v, hi, -1)) for v in values):
        return None
    each = "each side " if p["type"] == "[w, h] or int" else ""
    if lo and hi and not lo.get("exclusive") and not hi.get("exclusive"):
        return "%s%g to %g" % (each, lo["value"], hi["value"])
    words = []
    if lo:
        words.append(("more than %g" if lo.get("exclusive") else "at least %g") % lo["value"])
    if hi:
        words.append(("less than %g" if hi.get("exclusive") else "at most %g") % hi["value"])
    return each + " and ".join(words)


def _bound(b, limits):
    """b with the value of its flag from limits; None when b's flag is not known."""
    if not b or "limit" not in b:
        return b
    if limits is None:
        return None
    return dict(b, value=limits.get(b["limit"], b["value"]))


def _inside(v, bound, side):
    """Whether v is inside bound, a minimum (side 1) or a maximum (side -1)."""
    d = (v - bound["value"]) * side
    return d > 0 or (d == 0 and not bound.get("exclusive"))


def _ask_sidecar(op, params, endpoint, timeout):
    from .client import Client, InvalidEndpoint, SidecarUnavailable

    try:
        client = Client(endpoint, timeout=timeout, retry_seconds=0)
    except InvalidEndpoint:  # not a location at all: no task could use it either
        raise
    except (ValueError, pa.ArrowException) as e:  # settings this driver cannot use: the tasks will say
        log.debug("pixelflight: parameters not checked by a sidecar: %s", e)
        return
    with client:
        try:
            client.check(op, params)
        except (SidecarUnavailable, flight.FlightUnavailableError, flight.FlightTimedOutError,
                flight.FlightUnauthenticatedError, flight.FlightUnauthorizedError) as e:
            log.debug("pixelflight: no sidecar on the driver checked the parameters: %s", e)
        except pa.ArrowInvalid as e:
            raise ValueError("%s: %s (checked by the sidecar at %s)" % (op, _reason(e), client.endpoint)) from None


def _reason(err):
    """The sidecar's reason: the message of its BAD_COMMAND ErrorInfo
    (docs/protocol.md, Status codes; Client.check sets err.error_info),
    without gRPC's and Arrow's wrapping and the "op NAME: bad command: "
    before it; else the error's message as pyarrow gives it."""
    info = getattr(err, "error_info", None)
    if info is not None and info[0] == "BAD_COMMAND" and "message" in info[1]:
        return info[1]["message"]
    return str(err)
