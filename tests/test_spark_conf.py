"""Every spark-conf/ template: keys this Spark knows or the plugin's own
(documented) keys, and plugin settings that exist; with bad fixtures side
by side and the error each must produce."""

import glob
import os
import re

import pytest
from pyspark.sql import SparkSession

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN_KEYS = {"spark.pixelflight.binary", "spark.pixelflight.args", "spark.pixelflight.socketDir",
               "spark.pixelflight.startTimeout", "spark.pixelflight.stopTimeout"}
# Keys Spark reads without a registered ConfigEntry, and key families.
NOT_ENTRIES = {"spark.master", "spark.app.name"}
FAMILIES = [r"spark\.executorEnv\.\w+", r"spark\.(driver|executor|task)\.resource\.\w+\.(amount|discoveryScript|vendor)"]


@pytest.fixture(scope="module")
def known():
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    entry = spark._jvm.org.apache.spark.internal.config.ConfigEntry
    yield lambda key: entry.findEntry(key) is not None
    spark.stop()


def parse(text):
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            out.append((n, parts[0], None))
        else:
            out.append((n, parts[0], parts[1]))
    return out


def problems(text, known):
    errs = []
    for n, key, value in parse(text):
        if value is None:
            errs.append("line %d: %s has no value" % (n, key))
        elif key.startswith("spark.pixelflight."):
            if key not in PLUGIN_KEYS:
                errs.append("line %d: unknown plugin setting %s" % (n, key))
        elif not (known(key) or key in NOT_ENTRIES or any(re.fullmatch(f, key) for f in FAMILIES)):
            errs.append("line %d: %s is not a key this Spark knows" % (n, key))
        elif key == "spark.plugins" and value != "org.pixelflight.spark.PixelflightPlugin":
            errs.append("line %d: spark.plugins must name org.pixelflight.spark.PixelflightPlugin" % n)
    return errs


TEMPLATES = sorted(glob.glob(os.path.join(ROOT, "spark-conf", "*", "spark-defaults.conf")))


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: os.path.relpath(p, ROOT))
def test_template(known, path):
    assert problems(open(path).read(), known) == []
    keys = {k for _, k, _ in parse(open(path).read())}
    assert {"spark.plugins", "spark.jars", "spark.pixelflight.binary"} <= keys


@pytest.mark.parametrize("text,want", [
    ("spark.pixelflight.binnary /opt/pixelflight", "unknown plugin setting spark.pixelflight.binnary"),
    ("spark.exector.cores 4", "spark.exector.cores is not a key this Spark knows"),
    ("spark.plugins com.example.Other", "must name org.pixelflight.spark.PixelflightPlugin"),
    ("spark.jars", "spark.jars has no value"),
])
def test_bad_fixtures(known, text, want):
    [err] = problems(text, known)
    assert want in err


def test_readme_documents_every_plugin_key():
    readme = open(os.path.join(ROOT, "spark-conf", "README.md")).read()
    for key in PLUGIN_KEYS:
        assert "`%s`" % key in readme, key
    java = open(os.path.join(ROOT, "spark-plugin", "src", "main", "java", "org", "pixelflight", "spark",
                             "Sidecar.java")).read()
    assert set(re.findall(r'"(spark\.pixelflight\.\w+)"', java)) == PLUGIN_KEYS
