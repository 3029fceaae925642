"""Writes the test and demo images to a folder (default build/images).

Real photos come from scikit-image's bundled data (installed by make venv),
in several formats; generated ones cover odd sizes, gradients and noise.
bad/ holds files every good server must refuse row by row: corrupt,
truncated, empty, not an image, and a PNG whose header claims 60000x60000.
Nothing here is committed: the folder is rebuilt by `make data`.
"""

import io
import os
import struct
import sys
import zlib

import numpy as np
import skimage.data as data
from PIL import Image

REAL = ["astronaut", "camera", "coins", "chelsea", "coffee", "rocket", "moon", "page", "immunohistochemistry", "hubble_deep_field"]


def save(img, path, **kw):
    Image.fromarray(img).save(path, **kw)


def png_header(w, h):
    """A PNG signature and IHDR for w x h 8-bit gray, no image data."""
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk


def main(out):
    good, bad = os.path.join(out, "good"), os.path.join(out, "bad")
    os.makedirs(good, exist_ok=True)
    os.makedirs(bad, exist_ok=True)
    for name in REAL:
        img = getattr(data, name)()
        if img.dtype != np.uint8:
            img = (img * 255).astype(np.uint8) if img.max() <= 1 else img.astype(np.uint8)
        save(img, os.path.join(good, name + ".png"))
    astro, coins, chelsea = data.astronaut(), data.coins(), data.chelsea()
    save(astro, os.path.join(good, "astronaut.jpg"), quality=92)
    save(chelsea, os.path.join(good, "chelsea.jpg"), quality=85)
    save(coins, os.path.join(good, "coins.tif"))
    save(chelsea, os.path.join(good, "chelsea.bmp"))
    save(astro, os.path.join(good, "astronaut.webp"), lossless=True)
    save(coins, os.path.join(good, "coins.gif"))
    save(data.camera(), os.path.join(good, "camera.pgm"))
    save(chelsea, os.path.join(good, "chelsea.ppm"))
    rgba = np.dstack([astro, np.full(astro.shape[:2], 128, np.uint8)])
    save(rgba, os.path.join(good, "astronaut_rgba.png"))

    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:131, 0:257]
    save(((x * 255) // 256).astype(np.uint8), os.path.join(good, "gradient_257x131.png"))
    save(rng.integers(0, 256, (100, 100), dtype=np.uint8), os.path.join(good, "noise_100.png"))
    save(rng.integers(0, 256, (77, 33, 3), dtype=np.uint8), os.path.join(good, "noise_rgb_33x77.png"))
    save(np.array([[200]], np.uint8), os.path.join(good, "pixel_1x1.png"))
    yy, xx = np.mgrid[0:240, 0:320]
    discs = np.zeros((240, 320), np.uint8)
    for cy, cx, r in [(80, 90, 40), (120, 150, 50), (170, 240, 35)]:
        discs[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = 220
    save(discs, os.path.join(good, "discs_320x240.png"))

    buf = io.BytesIO()
    save(coins, buf, format="PNG")
    whole = buf.getvalue()
    with open(os.path.join(bad, "truncated.png"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    corrupt = bytearray(whole)
    corrupt[len(corrupt) // 2: len(corrupt) // 2 + 64] = b"\x00" * 64
    with open(os.path.join(bad, "corrupt.png"), "wb") as f:
        f.write(bytes(corrupt))
    open(os.path.join(bad, "empty.png"), "wb").close()
    with open(os.path.join(bad, "notes.png"), "wb") as f:
        f.write(b"this is not an image\n")
    with open(os.path.join(bad, "oversized.png"), "wb") as f:
        f.write(png_header(60000, 60000))
    faces(os.path.join(out, "faces"))
    photos512(os.path.join(out, "photo512"))
    photos1080(os.path.join(out, "photo1080"))
    print("%s: %d good, %d bad images" % (out, len(os.listdir(good)), len(os.listdir(bad))))


def faces(out):
    """Photos and frames for detect_faces, all from scikit-image's data:
    the astronaut (one face) whole, cropped and scaled; a grid of faces from
    the bundled LFW subset; frames panning over the astronaut; and photos
    without faces."""
    os.makedirs(out, exist_ok=True)
    astro = Image.fromarray(data.astronaut())
    astro.save(os.path.join(out, "astronaut.png"))
    for name, box in [("crop_head", (100, 0, 400, 300)), ("crop_left", (0, 0, 360, 512)), ("crop_tight", (150, 40, 300, 190))]:
        astro.crop(box).save(os.path.join(out, "astronaut_%s.png" % name))
    for pct in (40, 70, 130, 180):
        n = 512 * pct // 100
        astro.resize((n, n), Image.BILINEAR).save(os.path.join(out, "astronaut_scale%d.png" % pct))
    lfw = data.lfw_subset()[:48]  # the first 100 are faces, 25x25, 0..1
    grid = np.zeros((6 * 100, 8 * 100), np.uint8)
    for i, f in enumerate(lfw):
        tile = Image.fromarray((f * 255).astype(np.uint8)).resize((100, 100), Image.BICUBIC)
        grid[(i // 8) * 100:(i // 8 + 1) * 100, (i % 8) * 100:(i % 8 + 1) * 100] = np.asarray(tile)
    Image.fromarray(grid).save(os.path.join(out, "lfw_grid.png"))
    for i in range(6):
        x = 40 * i
        astro.crop((x, 20, x + 320, 260)).save(os.path.join(out, "frame_%02d.png" % i))
    for name in ("coffee", "rocket", "coins", "chelsea"):
        Image.fromarray(getattr(data, name)()).save(os.path.join(out, "noface_%s.png" % name))


def photos512(out):
    """The benchmark set of the GPU measurements: eight of scikit-image's
    photos resized to 512x512, with light noise, as JPEG (quality 90) in
    jpg/ and PNG in png/."""
    rng = np.random.default_rng(512)
    for ext in ("jpg", "png"):
        os.makedirs(os.path.join(out, ext), exist_ok=True)
    for name in ("astronaut", "chelsea", "coffee", "rocket", "camera", "coins", "moon", "page"):
        img = np.asarray(Image.fromarray(getattr(data, name)()).resize((512, 512), Image.BILINEAR), np.float64)
        img = np.clip(img + rng.normal(0, 2, img.shape), 0, 255).astype(np.uint8)
        save(img, os.path.join(out, "jpg", name + ".jpg"), quality=90)
        save(img, os.path.join(out, "png", name + ".png"))


def photos1080(out):
    """The same eight photos at 1920x1080 (stretched), JPEG quality 90 in
    jpg/: the GPU kit's full-HD case."""
    rng = np.random.default_rng(1080)
    os.makedirs(os.path.join(out, "jpg"), exist_ok=True)
    for name in ("astronaut", "chelsea", "coffee", "rocket", "camera", "coins", "moon", "page"):
        img = np.asarray(Image.fromarray(getattr(data, name)()).resize((1920, 1080), Image.BILINEAR), np.float64)
        img = np.clip(img + rng.normal(0, 2, img.shape), 0, 255).astype(np.uint8)
        save(img, os.path.join(out, "jpg", name + ".jpg"), quality=90)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/images")
