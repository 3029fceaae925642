"""detect_blobs and watershed through the sidecar, against scikit-image."""

import io
import os

import numpy as np
import pyarrow as pa
import pytest
import scipy.ndimage as ndi
from PIL import Image
from skimage.feature import blob_log, peak_local_max
from skimage.filters import threshold_otsu
from skimage.segmentation import watershed

from conftest import gray_of
from pixelflight import Client

pytestmark = pytest.mark.check  # the whole module is in make check


def run(sidecar, op, paths, **params):
    b = pa.RecordBatch.from_arrays([pa.array([open(p, "rb").read() for p in paths], pa.binary()),
                                    pa.array(paths)], names=["content", "path"])
    with Client(sidecar.location) as c:
        return pa.Table.from_batches(list(c.map_batches(op, [b], keep=("path",), **params))).to_pylist()


def matched(ours, ref, tol_sigma):
    """Fraction of ref blobs with one of ours within 1 px and tol_sigma."""
    if len(ref) == 0:
        return 1.0
    hits = 0
    for y, x, s in ref:
        d = [abs(b["y"] - y) <= 1 and abs(b["x"] - x) <= 1 and abs(b["sigma"] - s) <= tol_sigma for b in ours]
        hits += any(d)
    return hits / len(ref)


@pytest.mark.parametrize("name,params", [
    ("coins.png", dict(min_sigma=2, max_sigma=20, num_sigma=10, threshold=0.1)),
    ("hubble_deep_field.png", dict(min_sigma=1, max_sigma=10, num_sigma=10, threshold=0.05)),
])
def test_blobs_match_blob_log(sidecar, images, name, params):
    path = os.path.join(images, "good", name)
    [row] = run(sidecar, "detect_blobs", [path], **params)
    assert row["error"] is None, row["error"]
    ref = blob_log(gray_of(path) / 255.0, **params)
    step = (params["max_sigma"] - params["min_sigma"]) / (params["num_sigma"] - 1)
    ours = row["blobs"]
    assert matched(ours, ref, step) >= 0.95, (len(ours), len(ref))
    assert len(ours) <= 1.05 * len(ref) + 1, (len(ours), len(ref))


def reference_watershed(gray, min_distance=5):
    fg = gray > threshold_otsu(gray)
    dist = ndi.distance_transform_edt(fg)
    coords = peak_local_max(dist, min_distance=min_distance, labels=fg.astype(int))
    markers = np.zeros(dist.shape, int)
    markers[tuple(coords.T)] = np.arange(1, len(coords) + 1)
    return watershed(-dist, markers, mask=fg)


@pytest.mark.parametrize("name", ["discs_320x240.png", "coins.png"])
def test_watershed_matches_skimage(sidecar, images, name):
    path = os.path.join(images, "good", name)
    [row] = run(sidecar, "watershed", [path])
    assert row["error"] is None, row["error"]
    labels = np.asarray(Image.open(io.BytesIO(row["labels"]))).astype(np.int64)
    ref = reference_watershed(gray_of(path).astype(np.uint8))
    assert row["segments"] == len(np.unique(ref[ref > 0]))
    # Agreement up to relabelling: map each of our labels to the reference label it overlaps most.
    agree = 0
    for l in np.unique(labels):
        agree += np.bincount(ref[labels == l]).max()
    assert agree / labels.size >= 0.99, agree / labels.size


def test_detection_bad_rows_and_params(sidecar, images):
    bad = [os.path.join(images, "bad", f) for f in sorted(os.listdir(os.path.join(images, "bad")))]
    for op in ("detect_blobs", "watershed"):
        rows = run(sidecar, op, bad)
        assert len(rows) == len(bad) and all(r["error"] for r in rows), op
    with pytest.raises(pa.ArrowInvalid, match="min_sigma"):
        run(sidecar, "detect_blobs", bad[:1], min_sigma=-1)
    with pytest.raises(pa.ArrowInvalid, match="min_distance"):
        run(sidecar, "watershed", bad[:1], min_distance=0)
