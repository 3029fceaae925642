"""Writes imageio/testdata/jpeg/: small JPEGs and what Pillow decodes from
them, for the Go tests (go test ./imageio -run JPEGPillow).

The JPEGs are crops of scikit-image's bundled astronaut (NASA, public
domain) and coffee (CC0) photos, re-encoded by Pillow in the variants the
decoders treat differently: 4:2:0, 4:2:2 and 4:4:4 chroma, baseline and
progressive, restart markers, gray, RGB without YCbCr (Adobe transform 0)
and Adobe CMYK. Odd sizes catch edge handling.

For each NAME.jpg:
  NAME.y.png  Pillow with im.draft("L", im.size): libjpeg-turbo's own gray
              output, the Y plane of YCbCr files (none for CMYK)
  NAME.l.png  Pillow's Image.open(f).convert("L"): decoded to RGB (or CMYK),
              then Pillow's L rule

Run: .venv/bin/python scripts/jpegref.py   (make testdata)
"""

import os
import sys

import numpy as np
from PIL import Image, features
from skimage import data

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "imageio", "testdata", "jpeg")

astronaut = Image.fromarray(data.astronaut())
coffee = Image.fromarray(data.coffee())

# name: (source, crop box, mode, save options)
CASES = {
    "astronaut-420": (astronaut, (150, 40, 251, 115), "RGB", dict(quality=85)),
    "astronaut-444-progressive": (astronaut, (180, 90, 277, 171), "RGB", dict(quality=90, subsampling=0, progressive=True)),
    "astronaut-420-progressive": (astronaut, (301, 203, 404, 306), "RGB", dict(quality=75, progressive=True)),
    "coffee-422-restart": (coffee, (200, 100, 311, 181), "RGB", dict(quality=80, subsampling=1, restart_marker_blocks=5)),
    "coffee-gray": (coffee, (250, 150, 349, 227), "L", dict(quality=80)),
    "coffee-rgb": (coffee, (120, 60, 193, 123), "RGB", dict(quality=90, subsampling=0, keep_rgb=True)),
    "coffee-cmyk": (coffee, (320, 210, 397, 269), "CMYK", dict(quality=90)),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    print(f"Pillow {Image.__version__}, libjpeg-turbo {features.version_feature('libjpeg_turbo')}")
    for name, (src, box, mode, opts) in CASES.items():
        path = os.path.join(OUT, name + ".jpg")
        src.crop(box).convert(mode).save(path, "JPEG", **opts)
        with Image.open(path) as im:
            lum = np.asarray(im.convert("L"))
        Image.fromarray(lum).save(os.path.join(OUT, name + ".l.png"))
        line = f"{name}: {lum.shape[1]}x{lum.shape[0]}, {os.path.getsize(path)} bytes"
        if mode != "CMYK":
            with Image.open(path) as im:
                im.draft("L", im.size)
                y = np.asarray(im)
                assert im.mode == "L" and y.shape == lum.shape, (im.mode, y.shape)
            Image.fromarray(y).save(os.path.join(OUT, name + ".y.png"))
            d = np.abs(y.astype(int) - lum.astype(int))
            line += f"; Y plane vs convert('L'): max {d.max()}, {100 * np.mean(d > 0):.1f}% differ"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
