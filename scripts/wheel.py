"""Builds the platform wheel: the Python client plus the sidecar binaries
and the plugin jars.

    python scripts/wheel.py OUT_DIR BINARY [BINARY...] [JAR...]

setuptools builds the client's wheel from python/ (no build isolation: the
pinned setuptools and wheel of python/requirements.txt); the binaries
(bin/pixelflight, and bin/pixelflight-cuda when it was built) go into its
.data/scripts/, as ruff and uv ship theirs, so pip installs them into the
environment's scripts directory; the tag becomes
py3-none-manylinux_2_X_x86_64, X being the newest glibc symbol version
the binaries need. The jars (the plugin's builds for Spark 4.x and 3.5)
go into the package, pixelflight/jars/, where pixelflight.sidecar.jar()
finds them. Prints the wheel's path.
"""

import email.parser
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EM_X86_64 = 62


def glibc_needed(binary):
    """(major, minor) of the newest GLIBC_x.y symbol version the ELF file needs."""
    with open(binary, "rb") as f:
        head = f.read(20)
        if head[:4] != b"\x7fELF" or head[4] != 2 or int.from_bytes(head[18:20], "little") != EM_X86_64:
            sys.exit("wheel.py: %s is not a 64-bit x86-64 ELF binary" % binary)
    out = subprocess.run(["readelf", "--version-info", "--wide", binary], capture_output=True, text=True,
                         check=True).stdout
    versions = [tuple(map(int, v)) for v in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", out)]
    return max(versions, default=(2, 17))  # a static binary: the oldest manylinux tag


def main():
    out = sys.argv[1]
    binaries = [a for a in sys.argv[2:] if not a.endswith(".jar")]
    jars = [a for a in sys.argv[2:] if a.endswith(".jar")]
    if not binaries:
        sys.exit("usage: wheel.py OUT_DIR BINARY [BINARY...] [JAR...]")
    major, minor = max(glibc_needed(b) for b in binaries)
    tag = "py3-none-manylinux_%d_%d_x86_64" % (major, minor)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                        "--no-build-isolation", "-w", tmp, os.path.join(ROOT, "python")], check=True)
        [pure] = glob.glob(os.path.join(tmp, "pixelflight-*-py3-none-any.whl"))
        unpacked = os.path.join(tmp, "unpacked")
        subprocess.run([sys.executable, "-m", "wheel", "unpack", "-d", unpacked, pure], check=True,
                       stdout=subprocess.DEVNULL)
        [top] = glob.glob(os.path.join(unpacked, "pixelflight-*"))
        [info] = glob.glob(os.path.join(top, "*.dist-info"))
        scripts = os.path.join(top, os.path.basename(info)[:-len(".dist-info")] + ".data", "scripts")
        os.makedirs(scripts)
        for b in binaries:
            shutil.copy(b, scripts)
            os.chmod(os.path.join(scripts, os.path.basename(b)), 0o755)
        if jars:
            os.makedirs(os.path.join(top, "pixelflight", "jars"))
        for j in jars:
            shutil.copy(j, os.path.join(top, "pixelflight", "jars"))
        wheel_file = os.path.join(info, "WHEEL")
        with open(wheel_file) as f:
            meta = email.parser.Parser().parse(f)
        del meta["Tag"]
        meta["Tag"] = tag
        meta.replace_header("Root-Is-Purelib", "false")
        with open(wheel_file, "w") as f:
            f.write(meta.as_string())
        os.makedirs(out, exist_ok=True)
        for old in glob.glob(os.path.join(out, "pixelflight-*.whl")):
            os.remove(old)
        subprocess.run([sys.executable, "-m", "wheel", "pack", "-d", out, top], check=True,
                       stdout=subprocess.DEVNULL)
    [built] = glob.glob(os.path.join(out, "pixelflight-*-%s.whl" % tag))
    print(built)


if __name__ == "__main__":
    main()
