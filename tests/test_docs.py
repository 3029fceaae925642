"""The docs as a reader meets them: README's index reaches every page of
docs/, every relative link and #anchor resolves, every Python and shell
block parses, the sidecar's flags, the make targets and the plugin's
Spark settings they name exist, and every command block is run by a named
test or says why none can run it (RUN_BY; the tests with Spark and a
sidecar run the examples as written through doc_block and run_block).
Seconds, no Spark, no sidecar (the flags come from bin/pixelflight's
--help)."""

import glob
import os
import re
import subprocess

import pytest

pytestmark = pytest.mark.check  # the whole module is in make check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin", "pixelflight")
# The pages whose commands, flags, targets and keys are checked: the README,
# docs/ and the deploy templates' README.
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [
    "spark-conf/README.md"]
SKIP_DIRS = {"build", "target", "node_modules", "bin"}  # and hidden ones, *.egg-info: made or fetched here


def markdown_files():
    """Every Markdown file of the repository that is not built or fetched
    (BENCHMARKS.md and the others link into the README too)."""
    out = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info"))
        out += [os.path.relpath(os.path.join(top, f), ROOT) for f in sorted(files) if f.endswith(".md")]
    return out


LINKED = markdown_files()
INDEX = "Documentation"  # the README's section that lists every page
FLAG_TABLE = "The sidecar"  # docs/configure.md's section with serve's flag table

FENCE = re.compile(r"^ {0,12}(```+|~~~+)\s*([\w+-]*)")
SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def parse(text):
    """(prose, blocks): the text with fenced code blocks blanked out (so
    line numbers stay), and each block as (language, code, first line)."""
    prose, blocks, fence, lang, code, start, indent = [], [], None, "", [], 0, 0
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence, lang, code, start = m.group(1), m.group(2).lower(), [], n + 1
            indent = len(line) - len(line.lstrip(" "))
            prose.append("")
        elif fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            blocks.append((lang, "\n".join(code), start))
            fence = None
            prose.append("")
        elif fence is not None:
            code.append(line[indent:] if line[:indent].strip() == "" else line)
            prose.append("")
        else:
            prose.append(line)
    assert fence is None, "a code block opened at line %d is never closed" % (start - 1)
    return "\n".join(prose), blocks


def spans(prose):
    """The inline code spans of prose, with their line numbers."""
    return [(m.group(2).strip(), prose.count("\n", 0, m.start()) + 1) for m in SPAN.finditer(prose)]


def slug(heading):
    """GitHub's anchor for a heading: its text without markup, lowercased,
    every character but letters, digits, spaces, '-' and '_' dropped,
    spaces to '-'."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(rel):
    """Every anchor of a Markdown file's headings (repeats get -1, -2, ...)."""
    prose, _ = parse(read(rel))
    seen, out = {}, set()
    for line in prose.split("\n"):
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            out.add(s if s not in seen else "%s-%d" % (s, seen[s]))
            seen[s] = seen.get(s, 0) + 1
    return out


def links(rel):
    """(target, line) of each link in a file's prose, code spans left out."""
    prose, _ = parse(read(rel))
    prose = SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)
    return [(m.group(2), prose.count("\n", 0, m.start()) + 1) for m in LINK.finditer(prose)]


def section(text, title):
    """The text of the level-2 section called title, up to the next one."""
    prose, _ = parse(text)
    m = re.search(r"^## %s\s*$(.*?)(?=^## |\Z)" % re.escape(title), prose, re.M | re.S)
    assert m, "no section '## %s'" % title
    return m.group(1)


def code_texts(rel):
    """(text, line) of everything a reader would type or paste: inline code
    spans and each line of the fenced blocks."""
    prose, blocks = parse(read(rel))
    out = spans(prose)
    for _, code, start in blocks:
        out += [(line, start + i) for i, line in enumerate(code.split("\n"))]
    return out


# --- the index -----------------------------------------------------------------


def test_every_page_is_in_the_readme_index():
    """One line a page: every page of docs/, the deploy templates, SECURITY.md
    and BENCHMARKS.md."""
    index = SPAN.sub("", section(read("README.md"), INDEX))
    linked = {os.path.normpath(m.group(2).split("#")[0]) for m in LINK.finditer(index)}
    pages = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))}
    missing = sorted((pages | {"spark-conf/README.md", "SECURITY.md", "BENCHMARKS.md"}) - linked)
    assert not missing, "README's '## %s' does not link %s" % (INDEX, ", ".join(missing))


# --- links and anchors ------------------------------------------------------------


@pytest.mark.parametrize("rel", LINKED)
def test_relative_links_resolve(rel):
    bad = []
    for target, line in links(rel):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
        if dest.startswith(".."):
            bad.append("%s:%d: %s leaves the repository" % (rel, line, target))
            continue
        if not os.path.exists(os.path.join(ROOT, dest)):
            bad.append("%s:%d: %s: no file %s" % (rel, line, target, dest))
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append("%s:%d: %s: %s has no heading with the anchor #%s" % (rel, line, target, dest, anchor))
    assert not bad, "\n".join(bad)


def test_anchor_rule_is_githubs():
    assert slug("The plugin's settings") == "the-plugins-settings"
    assert slug("`fft_convolve` beside OpenCV and scipy: convolution (one core)") == \
        "fft_convolve-beside-opencv-and-scipy-convolution-one-core"
    assert slug("Spark Connect from pip") == "spark-connect-from-pip"
    assert slug("What `make check` holds, and why") == "what-make-check-holds-and-why"


# --- code blocks -------------------------------------------------------------------


def blocks(langs):
    return [pytest.param(rel, code, "%s:%d" % (rel, start), id="%s:%d" % (rel, start))
            for rel in PAGES for lang, code, start in parse(read(rel))[1] if lang in langs]


@pytest.mark.parametrize("rel,code,where", blocks({"python", "py"}))
def test_python_blocks_compile(rel, code, where):
    compile(code, where, "exec")


@pytest.mark.parametrize("rel,code,where", blocks({"bash", "sh", "shell"}))
def test_shell_blocks_parse(rel, code, where):
    r = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, "%s: bash -n: %s" % (where, r.stderr)


# --- what the commands name --------------------------------------------------------


def flags_of(command):
    r = subprocess.run([BIN, command, "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, "%s %s --help: exit %d: %s" % (BIN, command, r.returncode, r.stderr)
    return set(re.findall(r"(?m)^  (--[a-z][a-z0-9-]*)", r.stdout)) | {"--help"}


@pytest.fixture(scope="module")
def help_flags():
    if not os.access(BIN, os.X_OK):
        pytest.skip("bin/pixelflight is not built (make build): its --help is what the flags are checked against")
    return {c: flags_of(c) for c in ("serve", "bench", "health")}


# `pixelflight serve --flag ...`, `bin/pixelflight-cuda bench ... --flag`,
# and serve's flags alone at the start of a span (`serve --metrics-labels`).
COMMAND = re.compile(r"(?:\bpixelflight(?:-cuda)?\s+|^)(serve|bench|health)\b([^`;&|\n]*)")


def test_flags_named_exist(help_flags):
    bad = []
    for rel in PAGES:
        for text, line in code_texts(rel):
            for m in COMMAND.finditer(text):
                for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", m.group(2)):
                    if flag not in help_flags[m.group(1)]:
                        bad.append("%s:%d: `%s`: pixelflight %s has no %s" % (rel, line, text, m.group(1), flag))
    assert not bad, "\n".join(bad)


def test_flag_table_is_serves_flags(help_flags):
    """cli's TestDocListsEveryServeFlag holds the other direction: every
    flag serve has is in the table."""
    table = section(read("docs/configure.md"), FLAG_TABLE)
    named = re.findall(r"(?m)^\| ([^|]*)\|", table)
    flags = {f for cell in named for f in re.findall(r"`(--[a-z][a-z0-9-]*)`", cell)}
    assert flags, "no flags in docs/configure.md's '## %s' table" % FLAG_TABLE
    assert not flags - help_flags["serve"], "docs/configure.md's flag table names flags serve lacks: %s" % sorted(
        flags - help_flags["serve"])


# Flags of other programs that the docs name alone, in a code span:
# spark-submit's and spark-class's, pytest's and make's, the examples'
# (--out, --quick) and `python -m pixelflight.sidecar --jar`.
OTHER_FLAGS = {"--cores", "--dist", "--files", "--jar", "--master", "--out", "--output-sync", "--packages", "--quick",
               "--work-dir"}


def test_flags_named_alone_exist(help_flags):
    """A flag in a code span of its own (`--max-pixels`, `--memory-budget 2g`)
    is one of pixelflight's commands', or one of OTHER_FLAGS."""
    ours = set().union(*help_flags.values())
    bad = []
    for rel in PAGES:
        prose, _ = parse(read(rel))
        for text, line in spans(prose):
            m = re.match(r"^(--[a-z][a-z0-9-]*)(?:[ =]\S*)?$", text)
            if m and m.group(1) not in ours | OTHER_FLAGS:
                bad.append("%s:%d: `%s`: no pixelflight command has %s" % (rel, line, text, m.group(1)))
    assert not bad, "\n".join(bad)


def make_targets():
    text = read("Makefile")
    targets = set()
    for line in text.split("\n"):
        m = re.match(r"^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*::?(?!=)", line)
        if m:
            targets.update(m.group(1).split())
        m = re.match(r"^\.PHONY\s*:(.*)", line)
        if m:
            targets.update(m.group(1).split())
    return targets


def test_make_targets_named_exist():
    have, bad = make_targets(), []
    for rel in PAGES:
        for text, line in code_texts(rel):
            for m in re.finditer(r"(?<![\w-])make((?:[ \t]+(?:-\S+|[A-Z_]+=\S*|[a-z][\w.-]*))+)", text):
                for word in m.group(1).split():
                    if not word.startswith("-") and "=" not in word and word not in have:
                        bad.append("%s:%d: `%s`: the Makefile has no target %s" % (rel, line, text, word))
    assert not bad, "\n".join(bad)


def test_plugin_settings_named_exist():
    java = ""
    for p in glob.glob(os.path.join(ROOT, "spark-plugin", "src", "**", "*.java"), recursive=True):
        java += read(os.path.relpath(p, ROOT))
    bad = []
    for rel in PAGES:
        for n, line in enumerate(read(rel).split("\n"), 1):
            for key in re.findall(r"spark\.pixelflight\.[A-Za-z]\w*", line):
                if not re.search(re.escape(key) + r"(?![\w.])", java):
                    bad.append("%s:%d: %s is not in spark-plugin/src" % (rel, n, key))
    assert not bad, "\n".join(bad)


# --- who runs each command -------------------------------------------------------

# The pages whose command blocks (shell, Python, SQL, spark-defaults) must
# each be run by a test, or say why none here can run them.
COMMAND_PAGES = PAGES + ["SECURITY.md", "spark-conf/emr/README.md"]
COMMAND_LANGS = {"sh", "bash", "shell", "python", "py", "sql", "properties"}
# (page, the start of the block's first command line) -> (the test that runs
# it, a string its file must hold: doc_block's key where the test runs the
# block as written, else the command or setting it runs), or (NOT_RUN, why).
NOT_RUN = "not run"
RUN_BY = {
    ("README.md", "make wheel && pip install"): ("tests/test_wheel.py::venv", "pip"),
    ("README.md", "spark.jars            /path"): ("tests/test_journey.py::test_first_hour",
                                                 'doc_block("README.md", "spark.jars")'),
    ("README.md", "from pixelflight.spark import map_images"): (
        "tests/test_journey.py::test_first_hour", 'doc_block("README.md", "from pixelflight.spark import map_images")'),
    ("README.md", "make demo"): (NOT_RUN, "the two commands themselves: CI runs make test (.ci/run); make demo is "
                                          "the demo, run by hand"),
    ("docs/client.md", "from pixelflight.spark import map_images"): (
        "tests/test_spark.py::test_client_doc_example", "doc_block(\"docs/client.md\""),
    ("docs/datasource.md", "spark.read.format(\"pixelflight\")"): (
        "tests/test_datasource.py::test_doc_examples", 'spark.read.format("pixelflight")'),
    ("docs/datasource.md", "CREATE TEMPORARY VIEW blurred"): (
        "tests/test_datasource.py::test_doc_examples", "CREATE TEMPORARY VIEW blurred"),
    ("docs/datasource.md", "spark.sql.extensions"): ("tests/conftest.py::session_builder", "spark.sql.extensions"),
    ("docs/datasource.md", "SELECT * FROM pixelflight_map"): (
        "tests/test_datasource.py::test_doc_examples", "SELECT * FROM pixelflight_map"),
    ("docs/datasource.md", "(spark.read.format(\"binaryFile\")"): (
        "tests/test_datasource.py::test_doc_examples", '(spark.read.format("binaryFile")'),
    ("docs/deploy.md", "spark.jars                 /opt"): ("tests/plugin_job.py::main",
                                                         "spark.pixelflight.binary"),
    ("docs/deploy.md", "bin/pixelflight serve"): (
        "tests/test_unix_socket.py::test_serve_makes_the_default_directory_private", "[BIN, \"serve\""),
    ("docs/deploy.md", "spark.executorEnv.PIXELFLIGHT_ENDPOINT"): (
        "tests/test_spark.py::spark", "spark.executorEnv.PIXELFLIGHT_ENDPOINT"),
    ("docs/deploy.md", "make image"): ("tests/test_image.py::image", "\"image\""),
    ("docs/install.md", "make wheel"): ("tests/test_wheel.py::test_installed_binary_is_found_and_serves", "--jar"),
    ("docs/protocol.md", "options = flight.FlightCallOptions"): (
        "tests/test_security.py::test_protocol_doc_token_example", "doc_block(\"docs/protocol.md\""),
    ("docs/protocol.md", "import json, pyarrow as pa"): (
        "tests/test_flight.py::test_protocol_doc_example", "doc_block(\"docs/protocol.md\""),
    ("spark-conf/README.md", "pip install 'pixelflight-"): (
        "tests/test_plugin.py::test_connect_server_from_pip", "start_connect_server"),
    ("spark-conf/README.md", "SPARK_HOME=$(python"): ("tests/conftest.py::start_standalone", "spark-class"),
    ("spark-conf/README.md", "\"$SPARK_HOME/bin/spark-submit\" --properties-file"): (
        "tests/test_plugin.py::test_standalone_cluster", "--properties-file"),
    ("spark-conf/README.md", "make build plugin wheel"): (NOT_RUN, "Dataproc: gcloud needs a Google Cloud project; "
                                                                   "test_templates checks create-cluster.sh's "
                                                                   "properties against Spark's registry"),
    ("spark-conf/README.md", "spark.executorEnv.PIXELFLIGHT_ENDPOINT      grpc+tls"): (
        "tests/test_security.py::test_tls_with_ca", "PIXELFLIGHT_TLS_CA"),
    ("SECURITY.md", "umask 077; openssl rand"): ("tests/test_security.py::token_sidecar", "--token-file"),
    ("SECURITY.md", "spark.executorEnv.PIXELFLIGHT_TOKEN_FILE"): (
        "tests/test_security.py::test_token_from_env", "PIXELFLIGHT_TOKEN"),
    ("SECURITY.md", "pixelflight serve --listen grpc+tls"): ("tests/test_security.py::tls_sidecar", "--tls-cert"),
    ("spark-conf/emr/README.md", "make build plugin wheel"): (NOT_RUN, "EMR: the aws CLI needs an AWS account; "
                                                                       "test_templates checks the classifications"),
    ("spark-conf/emr/README.md", "aws emr create-cluster --release-label"): (
        NOT_RUN, "EMR: needs an AWS account; test_templates checks the classifications"),
    ("spark-conf/emr/README.md", "aws emr create-cluster ..."): (
        NOT_RUN, "EMR: needs an AWS account; test_templates checks the classifications"),
}


def first_command(code):
    """A block's first line that is not blank or a comment."""
    return next((line.strip() for line in code.split("\n") if line.strip() and not line.strip().startswith("#")), "")


def command_blocks():
    """(page, key, code, line) of every command block of COMMAND_PAGES; key
    is RUN_BY's key that matches it, or None."""
    out = []
    for rel in COMMAND_PAGES:
        _, found = parse(read(rel))
        for lang, code, line in found:
            if lang in COMMAND_LANGS:
                first = first_command(code)
                keys = [k for k in RUN_BY if k[0] == rel and first.startswith(k[1])]
                out.append((rel, keys[0] if len(keys) == 1 else None, code, line))
    return out


def doc_block(rel, start):
    """The code of rel's one command block whose first command starts with
    start, for the tests that run it as written."""
    found = [code for page, _, code, _ in command_blocks() if page == rel and first_command(code).startswith(start)]
    assert len(found) == 1, "%s has %d command blocks starting with %r" % (rel, len(found), start)
    return found[0]


def run_block(code, ns, **placeholders):
    """Runs a doc block as written but for its placeholders (each must be in
    it: a changed page fails loudly rather than reaching s3://bucket): each
    statement in ns, each expression's value run too (a DataFrame counted,
    an iterator drained), for the tests that run the docs' examples.
    Returns the expressions' results."""
    import ast
    for old, new in placeholders.items():
        assert old in code, "the block no longer holds %r:\n%s" % (old, code)
        code = code.replace(old, new)
    out = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr):
            v = eval(compile(ast.Expression(node.value), "<doc>", "eval"), ns)
            if hasattr(v, "count") and hasattr(v, "schema"):
                v = v.count()
            elif hasattr(v, "__next__"):
                v = list(v)
            out.append(v)
        else:
            exec(compile(ast.Module([node], []), "<doc>", "exec"), ns)
    return out


def test_every_command_block_is_run_or_says_why():
    """Every command block of the pages has one entry in RUN_BY, and every
    entry a block: a new or changed block must say which test runs it."""
    blocks = command_blocks()
    missing = ["%s:%d %r" % (rel, line, first_command(code)[:60]) for rel, key, code, line in blocks if key is None]
    assert not missing, "command blocks no test runs (add them to RUN_BY): %s" % missing
    used = {key for _, key, _, _ in blocks}
    assert not set(RUN_BY) - used, "RUN_BY entries without a block: %s" % sorted(set(RUN_BY) - used)


@pytest.mark.parametrize("key", sorted(k for k, v in RUN_BY.items() if v[0] != NOT_RUN), ids=lambda k: "%s:%s" % k)
def test_the_named_test_runs_the_block(key):
    """The test (or fixture, or helper) RUN_BY names exists and its own
    source holds what it runs."""
    import ast
    where, needle = RUN_BY[key]
    path, name = where.split("::")
    text = read(path)
    found = [n for n in ast.parse(text).body
             if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name]
    assert found, "%s has no %s" % (path, name)
    body = ast.get_source_segment(text, found[0])
    assert needle in body, "%s::%s does not hold %r (for %s's block %r)" % (path, name, needle, key[0], key[1])
