"""Running pixelflight ops over Spark DataFrames."""

import json

import pyarrow as pa

from .client import ENV, Client, resolve_endpoint, result_schema
from .params import check_params, plugin_limits


def _spark_type(t):
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_list(t):
        return "array<%s>" % _spark_type(t.value_type)
    if pa.types.is_struct(t):
        return "struct<%s>" % ",".join("%s:%s" % (f.name, _spark_type(f.type)) for f in t)
    raise TypeError("no Spark type for %s" % t)


def _ddl(schema):
    return ", ".join("`%s` %s" % (f.name, _spark_type(f.type)) for f in schema)


def map_images(df, op, column="content", keep=("path",), endpoint=None, strict=False, **params):
    """Runs op over the images in ``column`` of df through the sidecar.

    Returns a DataFrame of the ``keep`` columns plus the op's result columns
    (the last is ``error``: null for good rows, the reason for bad ones), one
    row per input row. Each Spark task streams its partition through one
    Flight exchange (mapInArrow, no pandas). The sidecar is found through
    ``endpoint``, else the executor's PIXELFLIGHT_ENDPOINT. A sidecar that
    dies or restarts under a task is retried for PIXELFLIGHT_RETRY_SECONDS
    (set it with spark.executorEnv.*), resending what it had not answered:
    see Client.map_batches.

    ``column`` holds encoded image bytes (the binaryFile source's
    ``content``) or Spark's image struct (the image source's ``image``).

    Wrong parameters raise ValueError here, on the driver, before any task
    runs: see pixelflight.params.check_params.
    """
    check_params(op, params, endpoint, limits=_sidecar_limits(df.sparkSession, endpoint))
    keep = tuple(keep)
    missing = [c for c in keep + (column,) if c not in df.columns]
    if missing:
        raise ValueError("DataFrame has no column %s (columns: %s)" % (missing, df.columns))
    res = result_schema(op, params)
    clash = [n for n in res.names if n in keep]
    if clash:
        raise ValueError("keep columns %s clash with %s's result columns %s" % (clash, op, res.names))
    out = ", ".join(
        ["`%s` %s" % (f.name, f.dataType.simpleString()) for f in df.schema.fields if f.name in keep]
        + [_ddl(res)])

    def run(batches):
        with Client(endpoint) as client:
            yield from client.map_batches(op, batches, column=column, keep=keep, strict=strict, **params)

    return df.select(*keep, column).mapInArrow(run, out)


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

    return arrow_udf(fn, "struct<%s>" % ", ".join("`%s`: %s" % (f.name, _spark_type(f.type)) for f in res))


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
