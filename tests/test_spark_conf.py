"""Every spark-conf/ template: keys this Spark knows or the plugin's own
(documented) keys, and plugin settings that exist; with bad fixtures side
by side and the error each must produce."""

import glob
import os
import re

import pytest
from conftest import session_builder

pytestmark = pytest.mark.check  # the whole module is in make check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN_KEYS = {"spark.pixelflight.binary", "spark.pixelflight.args", "spark.pixelflight.socketDir",
               "spark.pixelflight.startTimeout", "spark.pixelflight.stopTimeout",
               "spark.pixelflight.metricsListen", "spark.pixelflight.memoryBudget", "spark.pixelflight.maxRestarts",
               "spark.pixelflight.restartWindow"}
# Keys Spark reads without a registered ConfigEntry, and key families:
# environment variables of the executors (spark.executorEnv.X) and of the
# YARN application master (spark.yarn.appMasterEnv.X, read by prefix in
# Spark's YARN module), and custom resources (spark.executor.resource.gpu.*).
NOT_ENTRIES = {"spark.master", "spark.app.name"}
FAMILIES = [r"spark\.executorEnv\.\w+", r"spark\.yarn\.appMasterEnv\.\w+",
            r"spark\.(driver|executor|task)\.resource\.\w+\.(amount|discoveryScript|vendor)"]
# The YARN and Kubernetes modules register their spark.yarn.* and
# spark.kubernetes.* entries only when their config objects load; pip's
# pyspark ships both jars, so loading them makes ConfigEntry know those keys
# too (no hand-kept list of cluster-manager keys).
CLUSTER_CONFIGS = ["org.apache.spark.deploy.yarn.config.package$", "org.apache.spark.deploy.k8s.Config$"]


@pytest.fixture(scope="module")
def known():
    spark = session_builder("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in CLUSTER_CONFIGS:
        jvm.java.lang.Class.forName(name, True, loader)
    entry = jvm.org.apache.spark.internal.config.ConfigEntry
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
    # Either the plugin starts the sidecars, or the executors are pointed at
    # one started otherwise (the Kubernetes pod template's sidecar).
    assert {"spark.plugins", "spark.jars", "spark.pixelflight.binary"} <= keys or \
        "spark.executorEnv.PIXELFLIGHT_ENDPOINT" in keys


@pytest.mark.parametrize("text,want", [
    ("spark.pixelflight.binnary /opt/pixelflight", "unknown plugin setting spark.pixelflight.binnary"),
    ("spark.exector.cores 4", "spark.exector.cores is not a key this Spark knows"),
    ("spark.plugins com.example.Other", "must name org.pixelflight.spark.PixelflightPlugin"),
    ("spark.jars", "spark.jars has no value"),
    ("spark.kubernetes.executor.podTemplateFiles t.yaml", "spark.kubernetes.executor.podTemplateFiles is not a key"),
    ("spark.yarn.appMasterEnvs.X 1", "spark.yarn.appMasterEnvs.X is not a key this Spark knows"),
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


def test_cluster_manager_keys_are_known(known):
    # Loaded from the spark-yarn and spark-kubernetes jars (CLUSTER_CONFIGS).
    for key in ["spark.kubernetes.executor.podTemplateFile", "spark.kubernetes.executor.podTemplateContainerName",
                "spark.kubernetes.container.image", "spark.yarn.dist.files"]:
        assert known(key), key
