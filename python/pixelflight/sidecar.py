"""Where the sidecar binary and the plugin jar that the platform wheel
installed are.

The wheel (``make wheel``) carries ``pixelflight`` (and ``pixelflight-cuda``
when it was built) as scripts, so pip puts them in the environment's
scripts directory (``bin/`` of a venv, ``/usr/local/bin`` for a system
pip, ``~/.local/bin`` with ``--user``), next to each other: ``serve
--backend auto`` runs ``pixelflight-cuda`` from beside itself.

    python -m pixelflight.sidecar --path          # the binary's path
    python -m pixelflight.sidecar --path --cuda   # pixelflight-cuda's
    python -m pixelflight.sidecar serve ...       # run it with these arguments

For the executor plugin: nothing to set where the workers' Python
(``spark.pyspark.python``, else the executors' ``PYSPARK_PYTHON``) is this environment's or
its directory is on the executors' PATH (the plugin looks beside that
Python, then on PATH); else ``spark.pixelflight.binary`` set to the
printed path.

The wheel also carries the plugin jar (the executor plugin and the
``pixelflight`` data source), built twice: against Spark 4.x (Scala 2.13,
Arrow 18) and against Spark 3.5 (Scala 2.12, Arrow 12). ``jar()`` gives the
one for a Spark version, by default the installed pyspark's, for
``spark.jars``:

    python -m pixelflight.sidecar --jar           # for the installed pyspark
    python -m pixelflight.sidecar --jar 3.5.6     # for Spark 3.5.6
"""

import os
import shutil
import sys
import sysconfig

NAME = "pixelflight"
CUDA_NAME = "pixelflight-cuda"
JAR = "pixelflight-spark-plugin.jar"            # Spark 4.x, Scala 2.13
JAR_35 = "pixelflight-spark-plugin-spark3.5.jar"  # Spark 3.5, Scala 2.12
HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates(name):
    yield os.path.join(sysconfig.get_path("scripts"), name)
    user = sysconfig.get_preferred_scheme("user") if hasattr(sysconfig, "get_preferred_scheme") else (
        "%s_user" % os.name)
    yield os.path.join(sysconfig.get_path("scripts", user), name)
    # pip install --target DIR: the scripts go to DIR/bin.
    yield os.path.join(os.path.dirname(HERE), "bin", name)
    on_path = shutil.which(name)
    if on_path:
        yield on_path


def path(cuda=False):
    """The absolute path of the sidecar binary (``pixelflight-cuda`` with
    cuda=True); FileNotFoundError naming the places looked in when there is none."""
    name = CUDA_NAME if cuda else NAME
    looked = []
    for p in _candidates(name):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
        looked.append(p)
    hint = ("the wheel carries it only when `make build-cuda` built it before `make wheel`" if cuda
            else "install the platform wheel (`make wheel`: build/dist/pixelflight-*-manylinux_*.whl); "
                 "a source install of python/ has no binary")
    raise FileNotFoundError("no %s binary in %s (and not on PATH): %s" % (name, ", ".join(looked[:3]), hint))


def jar(spark_version=None):
    """The absolute path of the plugin jar built for spark_version (default:
    the installed pyspark's): the wheel's, else, in a source checkout,
    spark-plugin/target's (`make plugin`). ValueError for a Spark before
    3.5; FileNotFoundError naming the places looked in when there is none."""
    if spark_version is None:
        import pyspark
        spark_version = pyspark.__version__
    major_minor = tuple(int(x) for x in spark_version.split(".")[:2])
    if major_minor < (3, 5):
        raise ValueError("the pixelflight plugin jar is built for Spark 3.5 and 4.x, not %s" % spark_version)
    name = JAR_35 if major_minor[0] == 3 else JAR
    checkout = os.path.join(os.path.dirname(os.path.dirname(HERE)), "spark-plugin", "target")
    looked = [os.path.join(HERE, "jars", name),
              os.path.join(checkout, "spark3.5" if name == JAR_35 else "", name)]
    for p in looked:
        if os.path.isfile(p):
            return p
    raise FileNotFoundError("no %s (for Spark %s) in %s: install the platform wheel (`make wheel`), or run "
                            "`make plugin` in the source checkout" % (name, spark_version, " or ".join(looked)))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--jar" and len(argv) <= 2:
        try:
            print(jar(*argv[1:]))
        except (FileNotFoundError, ValueError, ImportError) as e:
            print("pixelflight.sidecar: %s" % e, file=sys.stderr)
            return 1
        return 0
    cuda = "--cuda" in argv
    if argv and argv[0] == "--path" and all(a in ("--path", "--cuda") for a in argv):
        try:
            print(path(cuda))
        except FileNotFoundError as e:
            print("pixelflight.sidecar: %s" % e, file=sys.stderr)
            return 1
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        binary = path()
    except FileNotFoundError as e:
        print("pixelflight.sidecar: %s" % e, file=sys.stderr)
        return 1
    os.execv(binary, [binary, *argv])


if __name__ == "__main__":
    sys.exit(main())
