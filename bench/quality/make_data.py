#!/usr/bin/env python3
"""Renders the benchmark's calibration and evaluation inputs once, seeded, as uint8 images and int64
token ids (bench/quality/quality_common.py turns them into model inputs):

  ppocr-v4-det      320x320 pages: text lines of several fonts, sizes and colours on light paper,
                    with rules and boxes as clutter
  ppocr-v4-rec      48x320 text lines, resized to height 48 and padded as PaddleOCR does; a line
                    too long for 320 loses words at its end (PaddleOCR widens, never squeezes)
  ppocr-mobile-cls  48x192 text lines, every other one upside down (the classifier's two classes)
  vit-b16           224x224 scenes: gradients, filled shapes, a little text, sensor noise
  gpt2              128 token ids drawn from a Zipf-like law over GPT-2's 50257 ids

Text is drawn with Pillow and the DejaVu fonts (Debian: python3-pil, fonts-dejavu-core). Each
split is <out>/<model>/{calib,eval}.npy; <out>/manifest.json lists their SHA-256, which
ort_reference.json records so that run_quality.py can tell it reads the data the reference used.

  make_data.py [--out DIR]      # default ~/.cache/qopt/bench/data
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import quality_common as qc  # noqa: E402

try:
    from PIL import Image, ImageDraw, ImageFont
except ImportError:
    sys.exit("error: Pillow is missing: apt-get install python3-pil fonts-dejavu-core")

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FONTS = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf",
         "DejaVuSansCondensed.ttf", "DejaVuSerif-Bold.ttf"]

WORDS = (
    "invoice total amount date order number customer address street city phone email account "
    "payment due balance tax subtotal item quantity price unit description shipping delivery "
    "receipt store cash card change thank you visit again open hours monday friday weekend "
    "station platform train departure arrival gate terminal flight seat class passenger ticket "
    "menu coffee tea water bread cheese salad soup chicken rice noodles dessert special today "
    "warning caution exit entrance floor room office reception parking level north south east "
    "west road avenue lane bridge park museum library hospital school university center market "
    "model version serial battery power input output voltage current frequency made in china "
    "page chapter section figure table report summary results method data value error limit"
).split()


def default_out():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "qopt", "bench", "data")


def font(rng, size):
    path = os.path.join(FONT_DIR, FONTS[int(rng.integers(len(FONTS)))])
    if not os.path.exists(path):
        sys.exit(f"error: font {path} is missing: apt-get install fonts-dejavu-core")
    return ImageFont.truetype(path, size)


def phrase(rng, max_words):
    words = [WORDS[int(rng.integers(len(WORDS)))] for _ in range(int(rng.integers(1, max_words + 1)))]
    kind = int(rng.integers(6))
    if kind == 0:
        words.append(f"{int(rng.integers(1, 9999))}.{int(rng.integers(0, 100)):02d}")
    elif kind == 1:
        words.insert(0, f"{int(rng.integers(1, 31)):02d}/{int(rng.integers(1, 13)):02d}/20{int(rng.integers(10, 30))}")
    elif kind == 2:
        words = [w.upper() for w in words]
    elif kind == 3:
        words[0] = words[0].capitalize()
    return " ".join(words)


def paper(rng, h, w):
    tone = rng.uniform(205, 250)
    tint = rng.uniform(-8, 8, 3)
    return Image.new("RGB", (w, h), tuple(int(np.clip(tone + t, 0, 255)) for t in tint))


def ink(rng):
    base = rng.uniform(0, 90)
    return tuple(int(np.clip(base + rng.uniform(-30, 30), 0, 255)) for _ in range(3))


def add_noise(img, rng, sigma):
    a = np.asarray(img, dtype=np.float64)
    a = a + rng.normal(0.0, sigma, a.shape)
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


def to_chw(a):
    return np.ascontiguousarray(a.transpose(2, 0, 1))


def page(rng, size):
    img = paper(rng, size, size)
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(0, 3))):  # rules and boxes, as forms and receipts have
        x0, y0 = int(rng.integers(0, size - 40)), int(rng.integers(0, size - 20))
        x1, y1 = x0 + int(rng.integers(30, size - x0)), y0 + int(rng.integers(2, 60))
        draw.rectangle([x0, y0, x1, y1], outline=ink(rng), width=int(rng.integers(1, 3)))
    y = int(rng.integers(4, 24))
    while y < size - 12:
        f = font(rng, int(rng.integers(12, 30)))
        x = int(rng.integers(2, size // 3))
        draw.text((x, y), phrase(rng, 5), font=f, fill=ink(rng))
        y += int(f.size * rng.uniform(1.3, 2.6))
    return to_chw(add_noise(img, rng, rng.uniform(1.0, 5.0)))


def text_line(rng, height, width, flip, squeeze):
    """A cropped text line resized to `height` keeping its aspect ratio and padded on the right
    with 128, which PaddleOCR's normalization maps to about 0, its padding. A line wider than
    `width` at that height is squeezed where PaddleOCR squeezes it (the direction classifier);
    where PaddleOCR widens the input instead (the recognizer reads each line at its own aspect
    ratio), words are dropped from its end until it fits, so no line is squeezed."""
    f = font(rng, int(rng.integers(26, 40)))
    text = phrase(rng, 4 if width > 200 else 2)
    probe = ImageDraw.Draw(Image.new("RGB", (8, 8)))
    margin_x, margin_y = int(rng.integers(2, 10)), int(rng.integers(2, 8))
    while True:
        left, top, right, bottom = probe.textbbox((0, 0), text, font=f)
        w, h = right - left + 2 * margin_x, bottom - top + 2 * margin_y
        if squeeze or " " not in text or height * w <= width * h:
            break
        text = text.rsplit(" ", 1)[0]
    img = paper(rng, h, w)
    ImageDraw.Draw(img).text((margin_x - left, margin_y - top), text, font=f, fill=ink(rng))
    if flip:
        img = img.rotate(180)
    new_w = max(1, min(width, int(np.ceil(height * w / h))))
    img = img.resize((new_w, height), Image.BILINEAR)
    out = np.full((height, width, 3), 128, dtype=np.uint8)
    out[:, :new_w] = add_noise(img, rng, rng.uniform(0.5, 4.0))
    return to_chw(out)


def scene(rng, size):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) / size
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    angle = rng.uniform(0, 1)
    t = (angle * xx + (1 - angle) * yy)[..., None]
    img = Image.fromarray(np.clip(c0 * (1 - t) + c1 * t, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(3, 9))):
        x0, y0 = rng.uniform(-20, size - 10, 2)
        x1, y1 = x0 + rng.uniform(10, size * 0.7), y0 + rng.uniform(10, size * 0.7)
        colour = tuple(int(v) for v in rng.uniform(0, 255, 3))
        shape = int(rng.integers(3))
        if shape == 0:
            draw.ellipse([x0, y0, x1, y1], fill=colour)
        elif shape == 1:
            draw.rectangle([x0, y0, x1, y1], fill=colour)
        else:
            pts = [tuple(rng.uniform(0, size, 2)) for _ in range(int(rng.integers(3, 6)))]
            draw.polygon(pts, fill=colour)
    if rng.uniform() < 0.5:
        draw.text(tuple(rng.uniform(0, size * 0.6, 2)), phrase(rng, 2), font=font(rng, 24), fill=ink(rng))
    return to_chw(add_noise(img, rng, rng.uniform(2.0, 8.0)))


def token_ids(rng, length, vocab=50257):
    ranks = np.arange(vocab, dtype=np.float64)
    p = 1.0 / np.power(ranks + 10.0, 1.1)
    p /= p.sum()
    order = np.random.default_rng(50257).permutation(vocab)  # which id each rank is
    return order[rng.choice(vocab, size=(1, length), p=p)].astype(np.int64)


def render(model, count, rng, split_index):
    spec = qc.MODELS[model]
    shape = spec["shape"]
    if model == "ppocr-v4-det":
        return np.stack([page(rng, shape[2]) for _ in range(count)])
    if model == "ppocr-v4-rec":
        return np.stack([text_line(rng, shape[2], shape[3], False, squeeze=False) for _ in range(count)])
    if model == "ppocr-mobile-cls":
        return np.stack([text_line(rng, shape[2], shape[3], (i + split_index) % 2 == 1, squeeze=True)
                         for i in range(count)])
    if model == "vit-b16":
        return np.stack([scene(rng, shape[2]) for _ in range(count)])
    if model == "gpt2":
        return np.stack([token_ids(rng, shape[1]) for _ in range(count)])
    raise ValueError(model)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=default_out())
    args = parser.parse_args()
    manifest = {"about": "bench/quality/make_data.py: uint8 NCHW images or int64 [N,1,L] ids; "
                         "quality_common.model_input normalizes them", "files": {}}
    for model, spec in qc.MODELS.items():
        os.makedirs(os.path.join(args.out, model), exist_ok=True)
        for split_index, split in enumerate(("calib", "eval")):
            rng = np.random.default_rng(zlib.crc32(f"{model}/{split}".encode()))
            data = render(model, spec[split], rng, split_index)
            path = qc.data_file(args.out, model, split)
            np.save(path, data)
            manifest["files"][f"{model}/{split}"] = {
                "shape": list(data.shape), "dtype": str(data.dtype), "sha256": qc.sha256_file(path)}
            print(f"{model}/{split}: {list(data.shape)} {data.dtype}")
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
