"""Result rows into arrays, images and files.

A row is anything indexed by column name: a pyspark ``Row``, a dict from
``pyarrow.Table.to_pylist()``, a pandas row. numpy and Pillow are imported
when a helper needs them, so the client itself needs only pyarrow.
"""

import math
import os

# Columns that hold a PNG, in the order to_image looks for them.
IMAGE_COLUMNS = ("png", "annotated", "labels")


def _check(row):
    err = _get(row, "error")
    if err is not None:
        raise ValueError("the row failed: %s" % err)


def _get(row, name, default=None):
    try:
        return row[name]
    except (KeyError, ValueError, IndexError):
        return default


def to_numpy(row):
    """An fft_convolve ``output="f32"`` row as a float32 array of shape
    (height, width). A failed row raises ValueError with its error."""
    import numpy as np

    _check(row)
    h, w, data = row["height"], row["width"], row["data"]
    if len(data) != 4 * h * w:
        raise ValueError("data holds %d bytes, want 4 * %d * %d" % (len(data), h, w))
    return np.frombuffer(bytes(data), "<f4").reshape(h, w)


def to_image(row, column=None):
    """The PNG of a row as a PIL image: ``column``, else the first of png
    (fft_convolve), annotated (detect_faces) and labels (watershed, 16-bit
    gray: mode I;16 or I) the row has. A failed row raises ValueError."""
    import io

    from PIL import Image

    _check(row)
    if column is None:
        column = next((c for c in IMAGE_COLUMNS if _get(row, c) is not None), None)
        if column is None:
            raise ValueError("the row has none of the image columns %s" % (IMAGE_COLUMNS,))
    img = Image.open(io.BytesIO(bytes(row[column])))
    img.load()
    return img


def color_labels(labels, seed=0):
    """A watershed ``labels`` image (PIL, or a row holding one) as RGB:
    label 0 (background) black, every other label its own colour, the same
    for the same seed."""
    import numpy as np
    from PIL import Image

    if not isinstance(labels, Image.Image):
        labels = to_image(labels, "labels")
    lab = np.asarray(labels).astype(np.int64)
    rng = np.random.default_rng(seed)
    palette = rng.integers(64, 256, (int(lab.max()) + 1, 3), dtype=np.uint8)
    palette[0] = 0
    return Image.fromarray(palette[lab], "RGB")


def open_image(image):
    """image as a PIL image: one already, a file's path (a local path or a
    ``file:`` URI, as Spark's ``path`` column holds), or a row: its PNG
    column (to_image), else the file its ``path`` names. A failed row
    raises ValueError with its error."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image
    if isinstance(image, (str, os.PathLike)):
        return Image.open(_local(os.fspath(image)))
    if all(_get(image, c) is None for c in IMAGE_COLUMNS) and _get(image, "path") is not None:
        _check(image)
        return Image.open(_local(_get(image, "path")))
    return to_image(image)


def _local(path):
    """A local file's path from a path or a file: URI; other schemes raise ValueError."""
    from urllib.parse import unquote, urlparse

    u = urlparse(path)
    if u.scheme in ("", "file") or len(u.scheme) == 1:  # a Windows drive letter is no scheme
        return unquote(u.path) if u.scheme == "file" else path
    raise ValueError("%s: only local files open here (download it first): %s" % (u.scheme, path))


def _rgb(image):
    from PIL import Image

    image = open_image(image)
    if image.mode in ("I", "I;16", "F"):
        import numpy as np

        a = np.asarray(image, dtype=np.float64)
        span = a.max() - a.min()
        a = (a - a.min()) * (255 / span if span else 0)
        image = Image.fromarray(a.astype(np.uint8), "L")
    return image.convert("RGB")


def draw_blobs(image, blobs, color=(255, 0, 0), width=2):
    """A copy of image (as open_image takes it: PIL, a path, or a row: its
    PNG, else its ``path``'s file) in RGB with a circle of
    radius sigma * sqrt(2) around each blob of detect_blobs (y, x, sigma),
    as scikit-image's blob_log examples draw them."""
    from PIL import ImageDraw

    out = _rgb(image)
    d = ImageDraw.Draw(out)
    for b in blobs:
        r = b["sigma"] * math.sqrt(2)
        d.ellipse((b["x"] - r, b["y"] - r, b["x"] + r, b["y"] + r), outline=color, width=width)
    return out


def draw_faces(image, faces, color=(0, 255, 0), width=2):
    """A copy of image (as open_image takes it: PIL, a path, or a row: its
    PNG, else its ``path``'s file) in RGB with a box around each face of
    detect_faces (x, y, w, h): ``draw_faces(row, row["faces"])``."""
    from PIL import ImageDraw

    out = _rgb(image)
    d = ImageDraw.Draw(out)
    for f in faces:
        d.rectangle((f["x"], f["y"], f["x"] + f["w"] - 1, f["y"] + f["h"] - 1), outline=color, width=width)
    return out


def _rows(df, cols):
    """The rows of a Spark or pandas DataFrame or a pyarrow Table, as dicts of cols."""
    if hasattr(df, "toLocalIterator"):  # Spark
        from pyspark.sql.functions import col

        quoted = [col("`%s`" % c.replace("`", "``")) for c in cols]  # names as they are: a dot is no field
        return (r.asDict() for r in df.select(*quoted).toLocalIterator())
    if hasattr(df, "to_pylist"):  # pyarrow Table or RecordBatch
        return iter(df.select(cols).to_pylist())
    if hasattr(df, "to_dict"):  # pandas
        return iter(df[list(cols)].to_dict("records"))
    raise TypeError("want a Spark or pandas DataFrame or a pyarrow Table, not %s" % type(df).__name__)


def write_images(df, column, out_dir, name_column="path", labels="color"):
    """Writes the PNGs of ``column`` (png, annotated or labels) to out_dir,
    one file per row, named after the row's ``name_column`` (its base name
    without extension, then ``_<column>.png``; the row number when the
    DataFrame has no such column). Rows with an error or no image are
    skipped. Returns the paths written, in row order.

    watershed's ``labels`` are 16-bit label numbers, which look black in an
    image viewer: with ``labels="color"`` (the default) they are written as
    RGB, each label its own colour (color_labels); ``labels="raw"`` writes
    the 16-bit PNGs as the sidecar made them.

    df is a Spark DataFrame (rows are fetched a partition at a time), a
    pandas DataFrame or a pyarrow Table."""
    if labels not in ("color", "raw"):
        raise ValueError("labels=%r: want 'color' or 'raw'" % (labels,))
    names = [c for c in ((name_column,) if name_column else ()) if c in _columns(df)]
    os.makedirs(out_dir, exist_ok=True)
    written, taken = [], set()
    for i, row in enumerate(_rows(df, names + [column])):
        data = row[column]
        if data is None:
            continue
        stem = os.path.splitext(os.path.basename(str(row[names[0]])))[0] if names else "%06d" % i
        name = "%s_%s.png" % (stem, column)
        n = 1
        while name in taken:
            n += 1
            name = "%s_%d_%s.png" % (stem, n, column)
        taken.add(name)
        path = os.path.join(out_dir, name)
        if column == "labels" and labels == "color":
            import io

            from PIL import Image
            with Image.open(io.BytesIO(bytes(data))) as img:
                color_labels(img).save(path)
        else:
            with open(path, "wb") as f:
                f.write(bytes(data))
        written.append(path)
    return written


def _columns(df):
    """The column names of what _rows takes; Spark first, as there: a Spark
    Connect DataFrame has every attribute (as a column of that name)."""
    if hasattr(df, "toLocalIterator") or not hasattr(df, "column_names"):  # Spark, pandas
        return list(df.columns)
    return df.column_names  # pyarrow
