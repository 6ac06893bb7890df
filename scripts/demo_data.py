#!/usr/bin/env python3
"""Writes the demo's inputs for the PP-OCRv4 text detector: document pages (text lines of several
fonts, sizes and colours on light paper, rules and boxes as clutter), drawn by
bench/quality/make_data.py's page(), as PNG files, one folder for calibration and one for
evaluation, each seeded on its own so that no page is in both.

    demo_data.py OUT [--calib N] [--eval M] [--size S] [--npy]

writes OUT/calib/page-000.png ... and OUT/eval/page-000.png ... (S x S RGB). With --npy it also
writes OUT/calib-npy/ and OUT/eval-npy/: each page as the detector's input, float32 [1, 3, S, S],
normalized as PaddleOCR does (BGR, x / 255, ImageNet mean and std), for a qopt that reads no
images."""
import argparse
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench", "quality"))
from make_data import page  # noqa: E402
from quality_common import IMAGENET_MEAN, IMAGENET_STD  # noqa: E402

from PIL import Image  # noqa: E402  (make_data says how to install it when missing)


def detector_input(chw_rgb):
    """PaddleOCR's detector input for an RGB page: channels in BGR order, (x/255 - mean) / std."""
    x = chw_rgb[::-1].astype(np.float64) / 255.0
    mean = np.array(IMAGENET_MEAN, dtype=np.float64).reshape(3, 1, 1)
    std = np.array(IMAGENET_STD, dtype=np.float64).reshape(3, 1, 1)
    return np.ascontiguousarray(((x - mean) / std)[None].astype(np.float32))


def write_split(out, split, count, size, npy):
    rng = np.random.default_rng(zlib.crc32(f"demo/{split}".encode()))
    folder = os.path.join(out, split)
    os.makedirs(folder, exist_ok=True)
    if npy:
        os.makedirs(os.path.join(out, f"{split}-npy"), exist_ok=True)
    for i in range(count):
        chw = page(rng, size)
        Image.fromarray(np.ascontiguousarray(chw.transpose(1, 2, 0))).save(
            os.path.join(folder, f"page-{i:03d}.png"))
        if npy:
            np.save(os.path.join(out, f"{split}-npy", f"page-{i:03d}.npy"), detector_input(chw))
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--calib", type=int, default=32, help="calibration pages (default 32)")
    parser.add_argument("--eval", type=int, default=16, help="evaluation pages (default 16)")
    parser.add_argument("--size", type=int, default=320, help="page side in pixels (default 320)")
    parser.add_argument("--npy", action="store_true",
                        help="also write each page as the normalized model input (.npy)")
    args = parser.parse_args()
    for split, count in (("calib", args.calib), ("eval", args.eval)):
        folder = write_split(args.out, split, count, args.size, args.npy)
        print(f"{folder}: {count} pages {args.size}x{args.size}")


if __name__ == "__main__":
    main()
