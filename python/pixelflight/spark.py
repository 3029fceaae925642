"""Running pixelflight ops over Spark DataFrames."""

import json

import pyarrow as pa

from .client import ENV, Client, resolve_endpoint, result_schema
from .params import check_params, plugin_limits


def _spark_type(t):
    """The Spark type (pyspark.sql.types) of an Arrow result type, every
    field nullable."""
    from pyspark.sql import types as T

    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return T.BinaryType()
    if pa.types.is_int32(t):
        return T.IntegerType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_string(t):
        return T.StringType()
    if pa.types.is_float32(t):
        return T.FloatType()
    if pa.types.is_list(t):
        return T.ArrayType(_spark_type(t.value_type), True)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, _spark_type(f.type), True) for f in t])
    raise TypeError("no Spark type for %s" % t)


def _spark_schema(schema):
    """The Spark StructType of an Arrow schema, every field nullable."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, _spark_type(f.type), True) for f in schema])


def _ddl(schema):
    """An Arrow schema as Spark's DDL, each column as StructField.simpleString gives it."""
    return ", ".join("`%s` %s" % (f.name, f.dataType.simpleString()) for f in _spark_schema(schema).fields)


def _nullable(t):
    """Spark type t with every field, element and value nullable, as a DDL
    string of it would declare them."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_nullable(t.elementType), True)
    if isinstance(t, T.MapType):
        return T.MapType(_nullable(t.keyType), _nullable(t.valueType), True)
    return t


def _quote(name):
    """A column name as Spark reads it literally: in backticks, a backtick doubled."""
    return "`%s`" % name.replace("`", "``")


def _case_sensitive(session):
    """Whether Spark matches column names with their case (spark.sql.caseSensitive)."""
    try:
        return str(session.conf.get("spark.sql.caseSensitive", "false")).strip().lower() == "true"
    except Exception:  # a session that cannot say: Spark's default
        return False


def _columns(df, names, case_sensitive):
    """The DataFrame's own names of names, matched as Spark matches them;
    ValueError for one it has not, or has twice."""
    key = (lambda n: n) if case_sensitive else (lambda n: n.lower())
    have = [f.name for f in df.schema.fields]
    out, missing = [], []
    for name in names:
        found = [h for h in have if key(h) == key(name)]
        if not found:
            missing.append(name)
        elif len(found) > 1:
            raise ValueError("column %r is ambiguous in the DataFrame: it has %s%s" % (
                name, found, "" if case_sensitive else " (spark.sql.caseSensitive is false)"))
        else:
            out.append(found[0])
    if missing:
        raise ValueError("DataFrame has no column %s (columns: %s)" % (missing, have))
    return out


EXTENSIONS = "org.pixelflight.spark.PixelflightExtensions"


def map_images(df, op, column="content", keep=("path",), endpoint=None, strict=False, runner="auto", **params):
    """Runs op over the images in ``column`` of df through the sidecar.

    Returns a DataFrame of the ``keep`` columns plus the op's result columns
    (the last is ``error``: null for good rows, the reason for bad ones), one
    row per input row. Each Spark task streams its partition through one
    Flight exchange. The sidecar is found through ``endpoint``, else the
    executor's PIXELFLIGHT_ENDPOINT. A sidecar that dies or restarts under a
    task is retried for PIXELFLIGHT_RETRY_SECONDS (set it with
    spark.executorEnv.*), resending what it had not answered.

    ``runner``: where the tasks talk to the sidecar. ``"jvm"``: in the
    executors' JVMs, through the plugin jar's ``pixelflight_map`` table
    function (SQL over a temporary view, on classic Spark and Spark Connect;
    needs spark.sql.extensions to name
    org.pixelflight.spark.PixelflightExtensions, and ``column`` binary).
    ``"python"``: in PySpark's Python workers (mapInArrow). ``"auto"``
    (default): the JVM where the session has the extensions and ``column`` is
    binary, else Python. Both give the same rows, columns and types.

    ``column`` holds encoded image bytes (the binaryFile source's
    ``content``) or Spark's image struct (the image source's ``image``).
    ``keep`` and ``column`` name df's columns as Spark matches names (a case
    apart only with spark.sql.caseSensitive; a dot or space is part of the
    name) and come back under df's own names; keep may hold ``column``.

    Wrong parameters raise ValueError here, on the driver, before any task
    runs: see pixelflight.params.check_params.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    check_params(op, params, endpoint, limits=_sidecar_limits(df.sparkSession, endpoint))
    if isinstance(keep, str):
        keep = (keep,)
    case_sensitive = _case_sensitive(df.sparkSession)
    key = (lambda n: n) if case_sensitive else (lambda n: n.lower())
    *keep, column = _columns(df, tuple(keep) + (column,), case_sensitive)
    twice = sorted({k for k in keep if keep.count(k) > 1})
    if twice:
        raise ValueError("keep names the column%s %s more than once" % ("s" if len(twice) > 1 else "", twice))
    res = result_schema(op, params)
    clash = [k for k in keep if key(k) in {key(n) for n in res.names}]
    if clash:
        raise ValueError("keep columns %s clash with %s's result columns %s%s" % (
            clash, op, res.names, "" if case_sensitive else " (spark.sql.caseSensitive is false)"))
    fields = {f.name: f for f in df.schema.fields}
    if runner not in ("auto", "jvm", "python"):
        raise ValueError("runner must be 'auto', 'jvm' or 'python', not %r" % (runner,))
    binary = isinstance(fields[column].dataType, T.BinaryType)
    if runner == "jvm" and not binary:
        raise ValueError("runner='jvm' takes a binary column; %s is %s: use runner='python'" % (
            column, fields[column].dataType.simpleString()))
    if runner == "jvm" or runner == "auto" and binary and _has_extensions(df.sparkSession):
        out = _map_jvm(df, op, column, tuple(keep), endpoint, strict, params, must=runner == "jvm")
        if out is not None:
            return out
    # mapInArrow takes the columns by position: the keep columns in keep's
    # order, as map_batches writes them, then the results.
    out = T.StructType([T.StructField(k, _nullable(fields[k].dataType), True) for k in keep]
                       + _spark_schema(res).fields)
    keep = tuple(keep)
    cols = list(dict.fromkeys(keep + (column,)))  # each once: keep may hold the image column

    def run(batches):
        with Client(endpoint) as client:
            named = (pa.RecordBatch.from_arrays(b.columns, names=cols) for b in batches)
            yield from client.map_batches(op, named, column=column, keep=keep, strict=strict, **params)

    # Plain names into mapInArrow, which takes its input columns by their
    # names unquoted (PySpark's df[name]); run gives them theirs back.
    plain = [F.col(_quote(c)).alias("_pixelflight_%d" % i) for i, c in enumerate(cols)]
    return df.select(*plain).mapInArrow(run, out)


def _has_extensions(session):
    """Whether the session's spark.sql.extensions names pixelflight's (and so has pixelflight_map)."""
    try:
        value = session.conf.get("spark.sql.extensions", "") or ""
    except Exception:  # a session that cannot say
        return False
    return EXTENSIONS in [v.strip() for v in value.split(",")]


def _map_jvm(df, op, column, keep, endpoint, strict, params, must):
    """map_images through the pixelflight_map table function: SQL over a
    temporary view of df, _pixelflight_map_<hex>. Classic Spark analyses
    the query at once, and the view is dropped then; Spark Connect analyses
    it again each time it runs, so there the view stays for the session.
    None where the session has no pixelflight_map after all (the extension
    named but its class not on the driver's class path when the session
    started: Spark only warns), unless must."""
    import uuid

    session = df.sparkSession
    view = "_pixelflight_map_" + uuid.uuid4().hex
    df.createOrReplaceTempView(view)
    options = {"column": column, "keep": json.dumps(list(keep)), "strict": "true" if strict else "false"}
    if endpoint:
        options["endpoint"] = endpoint
    args = {"op": op, "params": json.dumps(params)}
    pairs = []
    for i, (k, v) in enumerate(options.items()):
        args["k%d" % i], args["v%d" % i] = k, v
        pairs.append(":k%d, :v%d" % (i, i))
    classic = getattr(session, "_jsparkSession", None) is not None
    try:
        out = session.sql("SELECT * FROM pixelflight_map(TABLE(`%s`), :op, :params, map(%s))" % (
            view, ", ".join(pairs)), args=args)
        out.schema  # analysed now (Spark Connect: a round trip)
    except Exception as e:
        session.catalog.dropTempView(view)
        text = str(e)
        if "pixelflight_map" not in text or not any(
                c in text for c in ("UNRESOLVED_ROUTINE", "UNRESOLVABLE_TABLE_VALUED_FUNCTION")):
            raise
        if must and not _has_extensions(session):
            raise ValueError("runner='jvm' needs the pixelflight_map table function: set spark.sql.extensions=%s "
                             "(with the plugin jar in spark.jars) when the session starts" % EXTENSIONS) from None
        if must:
            raise ValueError("runner='jvm': this session has no pixelflight_map, though spark.sql.extensions names "
                             "%s: the plugin jar was not on the driver's class path when the session started "
                             "(spark.jars, or the Spark Connect server's --jars)" % EXTENSIONS) from None
        return None
    if classic:
        session.catalog.dropTempView(view)
    return out


def image_udf(op, endpoint=None, strict=False, **params):
    """A column function (Spark >= 4.1, arrow_udf) returning a struct of op's results.

    Example: ``df.select("path", image_udf("fft_convolve", output="stats")("content").alias("r"))``.
    Wrong parameters raise ValueError here, as for map_images; on Spark
    before 4.1 it raises RuntimeError (map_images works there).
    """
    from typing import Iterator

    import pyspark

    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:
        raise RuntimeError("image_udf needs Spark 4.1 or later (pyspark.sql.functions.arrow_udf); this is PySpark %s: "
                           "use pixelflight.spark.map_images, which works there" % pyspark.__version__) from None
    from pyspark.sql import SparkSession

    check_params(op, params, endpoint, limits=_sidecar_limits(SparkSession.getActiveSession(), endpoint))
    res = result_schema(op, params)

    def fn(arrays: Iterator[pa.Array]) -> Iterator[pa.Array]:
        with Client(endpoint) as client:
            batches = (pa.RecordBatch.from_arrays([a], names=["content"]) for a in arrays)
            for b in client.map_batches(op, batches, column="content", strict=strict, **params):
                yield pa.StructArray.from_arrays(b.columns, names=b.schema.names)

    return arrow_udf(fn, _spark_schema(res))


def _sidecar_limits(session, endpoint):
    """The tasks' sidecars' flags that bound parameters, when the executor
    plugin's sidecars serve them (see plugin_limits); else None."""
    if endpoint or session is None:
        return None

    def get(key):
        try:
            return session.conf.get(key, None)
        except Exception:  # py4j's or Spark Connect's: not known here, the tasks will check
            return None

    return plugin_limits(get)


def describe_sidecar(spark):
    """Where the executors of this session find their sidecar, in words:
    the executor plugin's, the one spark.executorEnv.PIXELFLIGHT_ENDPOINT
    names, or the one this driver resolves."""
    conf = spark.sparkContext.getConf()
    if "PixelflightPlugin" in (conf.get("spark.plugins") or ""):
        return "each executor's own, started by the executor plugin (spark.plugins)"
    if conf.get("spark.executorEnv." + ENV):
        return "%s (spark.executorEnv.%s)" % (conf.get("spark.executorEnv." + ENV), ENV)
    return "%s (from %s, as this driver sees it)" % resolve_endpoint()


def read_images(spark, path, op, endpoint=None, strict=False, options=None, **params):
    """Runs op over the image files at path with the plugin jar's
    ``pixelflight`` data source: the executors' JVMs read the files and
    stream them to their sidecars, with no Python on the executors.

    Returns a DataFrame of ``path``, ``modificationTime``, ``length``, the
    op's result columns and ``error``, one row per file (as
    ``map_images(spark.read.format("binaryFile").load(path), op, keep=("path",
    "modificationTime", "length"), ...)`` would, without the content). path is
    one path, glob or directory, or a list of them. ``options`` are more data
    source options: pathGlobFilter, recursiveFileLookup, modifiedBefore,
    modifiedAfter, maxFileBytes, retrySeconds, ... (see ImageDataSource in
    spark-plugin/). The jar must be on the driver's and executors' class
    path (spark.jars), or on the Spark Connect server's. Bad params raise
    ValueError here, before Spark plans the read, as in map_images.
    """
    check_params(op, params, endpoint, limits=_sidecar_limits(spark, endpoint))
    reader = spark.read.format("pixelflight").option("op", op).option("params", json.dumps(params))
    reader = reader.option("strict", "true" if strict else "false")
    if endpoint:
        reader = reader.option("endpoint", endpoint)
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load(path)
