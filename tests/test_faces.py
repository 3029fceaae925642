"""detect_faces through the sidecar, against OpenCV's CascadeClassifier.

Both sides get the same 8-bit grayscale pixels (sent to the sidecar as
grayscale PNG), so the boxes must be the same boxes, neighbour counts
included. Colour files are also sent as they are; then the grayscale
conversions differ slightly (Pillow's ITU-R 601 rule against OpenCV's
cvtColor), and the issue's bound applies: >= 95% of OpenCV's boxes matched
at IoU >= 0.5, no more than 5% extra, over all images.
"""

import glob
import io
import os

import cv2
import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pytest
from PIL import Image

from pixelflight import Client

pytestmark = pytest.mark.check  # the whole module is in make check

CASCADES = "/usr/share/opencv4/haarcascades"


def cascade(name):
    path = os.path.join(CASCADES, name + ".xml")
    if not os.path.exists(path):
        pytest.fail("%s is missing: install Debian's opencv-data (make test does)" % path)
    return cv2.CascadeClassifier(path)


def png(gray):
    buf = io.BytesIO()
    Image.fromarray(gray).save(buf, format="PNG")
    return buf.getvalue()


def run(sidecar, blobs, **params):
    b = pa.RecordBatch.from_arrays([pa.array(blobs, pa.binary())], names=["content"])
    with Client(sidecar.location) as c:
        return pa.Table.from_batches(list(c.map_batches("detect_faces", [b], **params))).to_pylist()


def boxes(row):
    assert row["error"] is None, row["error"]
    return sorted((f["x"], f["y"], f["w"], f["h"], f["neighbors"]) for f in row["faces"])


def opencv(clf, gray, scale_factor=1.1, min_neighbors=3, min_size=(0, 0), max_size=(0, 0)):
    rects, n = clf.detectMultiScale2(gray, scaleFactor=scale_factor, minNeighbors=min_neighbors,
                                     minSize=min_size, maxSize=max_size)
    return sorted((int(x), int(y), int(w), int(h), int(k)) for (x, y, w, h), k in zip(rects, n))


def iou(a, b):
    ax, ay, aw, ah = a[:4]
    bx, by, bw, bh = b[:4]
    ix = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    iy = max(0, min(ay + ah, by + bh) - max(ay, by))
    inter = ix * iy
    return inter / float(aw * ah + bw * bh - inter)


@pytest.fixture(scope="module")
def photos(images):
    paths = sorted(glob.glob(os.path.join(images, "faces", "*.png")))
    assert len(paths) >= 15, "make data writes build/images/faces"
    return paths


@pytest.mark.parametrize("name,params", [
    ("haarcascade_frontalface_default", {}),
    ("haarcascade_frontalface_alt2", {}),
    ("haarcascade_frontalface_default", dict(scale_factor=1.2, min_neighbors=5, min_size=[40, 40])),
    ("haarcascade_frontalface_alt2", dict(scale_factor=1.05, min_neighbors=0, max_size=[120, 120])),
    # Tilted (45°) features and 2-node trees.
    ("haarcascade_eye_tree_eyeglasses", dict(min_neighbors=2)),
])
def test_same_boxes_as_opencv(sidecar, photos, name, params):
    clf = cascade(name)
    grays = [np.asarray(Image.open(p).convert("L")) for p in photos]
    rows = run(sidecar, [png(g) for g in grays], cascade=name, **params)
    ref_kw = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
    total = 0
    for path, g, row in zip(photos, grays, rows):
        ref = opencv(clf, g, **ref_kw)
        assert boxes(row) == ref, os.path.basename(path)
        total += len(ref)
    if name.startswith("haarcascade_frontalface") and params.get("min_neighbors", 3) > 0:
        assert total >= 20, "the test images should hold faces: %d" % total


@pytest.mark.parametrize("name", ["haarcascade_frontalface_default", "haarcascade_frontalface_alt2"])
def test_colour_files_within_bound(sidecar, photos, name):
    clf = cascade(name)
    rows = run(sidecar, [open(p, "rb").read() for p in photos], cascade=name)
    matched = extra = refs = 0
    for path, row in zip(photos, rows):
        bgr = cv2.imread(path, cv2.IMREAD_COLOR)
        ref = opencv(clf, cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))
        ours = boxes(row)
        refs += len(ref)
        matched += sum(any(iou(r, o) >= 0.5 for o in ours) for r in ref)
        extra += sum(not any(iou(r, o) >= 0.5 for r in ref) for o in ours)
    assert refs >= 20
    assert matched >= 0.95 * refs, (matched, refs)
    assert extra <= 0.05 * refs, (extra, refs)


def test_annotate_and_bad_rows(sidecar, images, photos):
    astro = os.path.join(images, "faces", "astronaut.png")
    bad = sorted(glob.glob(os.path.join(images, "bad", "*")))
    blobs = [open(astro, "rb").read()] + [open(p, "rb").read() for p in bad] + [None]
    rows = run(sidecar, blobs, annotate=True)
    assert len(rows) == len(blobs)
    first = rows[0]
    [face] = boxes(first)
    img = np.asarray(Image.open(io.BytesIO(first["annotated"])))
    assert img.shape == (512, 512)
    x, y, w, h, _ = face
    assert (img[y, x:x + w] == 255).all() and (img[y:y + h, x + w - 1] == 255).all()
    for path, row in zip(bad + ["null"], rows[1:]):
        assert row["error"], path
        assert row["faces"] is None and row["annotated"] is None, path


@pytest.mark.parametrize("params,msg", [
    (dict(cascade="no_such_cascade"), "not installed"),
    (dict(cascade="../../../etc/passwd"), "not installed"),
    (dict(cascade="/usr/share/opencv4/haarcascades/haarcascade_eye.xml"), "not installed"),
    (dict(scale_factor=1.0), "scale_factor"),
    (dict(min_neighbors=-1), "min_neighbors"),
    (dict(min_size=[1, 2, 3]), "min_size"),
    (dict(scalefactor=1.2), "known parameters"),
])
def test_bad_params(sidecar, params, msg):
    with pytest.raises(pa.ArrowInvalid, match=msg):
        run(sidecar, [b"x"], **params)


def test_capabilities_list_cascades(sidecar):
    with Client(sidecar.location) as c:
        caps = c.capabilities()
    assert "haarcascade_frontalface_default" in caps["cascades"]
    ops = {o["name"]: o for o in caps["ops"]}
    assert [f["name"] for f in ops["detect_faces"]["outputs"]["annotate"]] == ["faces", "annotated", "error"]
