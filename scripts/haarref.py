"""Writes kernels/haar/testdata/opencv_ref.json: what OpenCV (opencv-python-headless,
pinned in python/requirements.txt) returns for the parts of
CascadeClassifier that kernels/haar reimplements, for the Go tests
(go test ./kernels/haar):

- resize: cv2.resize(..., INTER_LINEAR_EXACT), the pyramid's resize, on a
  generated image, as the SHA-256 of the output pixels;
- integral: cv2.integral3's sum, squared sum and tilted sum of a small
  generated image;
- group: cv2.groupRectangles(rects, min_neighbors, 0.2) on generated
  clusters of rectangles.

The generated image is pix[y*w + x] = (x*x*3 + y*7 + x*y) % 251, which the Go
test rebuilds.

Run: .venv/bin/python scripts/haarref.py
"""

import hashlib
import json
import os

import cv2
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "kernels", "haar", "testdata", "opencv_ref.json")


def image(w, h):
    y, x = np.mgrid[0:h, 0:w]
    return ((x * x * 3 + y * 7 + x * y) % 251).astype(np.uint8)


def main():
    src = image(97, 61)
    resize = []
    for dw, dh in [(97, 61), (88, 55), (49, 31), (48, 30), (45, 28), (20, 13), (1, 1), (1, 61), (97, 1),
                   (130, 80), (194, 122), (60, 61), (97, 40), (33, 21), (80, 50)]:
        out = cv2.resize(src, (dw, dh), interpolation=cv2.INTER_LINEAR_EXACT)
        resize.append(dict(w=dw, h=dh, sha256=hashlib.sha256(out.tobytes()).hexdigest()))

    small = image(13, 9)
    s, sq, t = cv2.integral3(small, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
    integral = dict(w=13, h=9, sum=s.ravel().tolist(), sq=[int(v) for v in sq.ravel()], tilted=t.ravel().tolist())

    rng = np.random.default_rng(3)
    group = []
    for case in range(12):
        rects = []
        for _ in range(rng.integers(1, 6)):  # clusters
            x, y, side = rng.integers(20, 300), rng.integers(20, 300), rng.integers(20, 120)
            for _ in range(rng.integers(1, 9)):
                d = rng.integers(-side // 8, side // 8 + 1, 3)
                rects.append([int(x + d[0]), int(y + d[1]), int(side + d[2]), int(side + d[2])])
        if case % 3 == 0 and rects:  # a small box inside a big one
            x, y, w, h = rects[0]
            rects += [[x + w // 4, y + h // 4, w // 3, h // 3]] * 2
        for mn in (1, 3):
            got, weights = cv2.groupRectangles(rects, mn, 0.2)
            group.append(dict(rects=rects, min_neighbors=mn,
                              out=sorted([[int(v) for v in r] + [int(k)] for r, k in zip(got, weights)])))

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(dict(opencv=cv2.__version__, resize=resize, integral=integral, group=group), f)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
