#!/usr/bin/env python3
"""Runs qopt as a new user would on every model of tests/corpus/corpus.json (trained models
published by others, and the device fixtures) and prints one row per model:

  roundtrip   qopt reads and writes the model back: identical bytes, or an equal ModelProto
  interp/ORT  max relative error of qopt's interpreter against ONNX Runtime on the same input
  convert     `convert-opset{to=21}`, then back to the model's opset: each run by ONNX Runtime,
              against the original (max relative error)
  PTQ         exit code of `qopt -p fold-bn,insert-qdq,verify --calib-data DIR` (1 = verify
              refused the result, which is a finding, not a failure) and the output SQNR of the
              INT8 model against the float model on qopt's interpreter
  strip       Q/DQ nodes left by `qopt -p strip-qdq` on the INT8 model (or the model itself,
              when it comes quantized)
  fp16        max relative error of `qopt -p to-fp16` against the float model

The test fails when any qopt command on these valid models exits with 2 (an input or usage
error) or crashes, when the interpreter disagrees with ONNX Runtime beyond --rtol, or when the
round trip changes the model.

  corpus_test.py --qopt Q --qopt-run R --work DIR [--node N] [--cache DIR] [--only a,b]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import fetch_corpus  # noqa: E402

CALIB_SAMPLES = 4
PTQ_PIPELINE = "fold-bn,insert-qdq,verify"


def file_stem(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


NUMPY_OF_ONNX = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_,
    onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.INT8: np.int8,
}


def document_image(shape, rng):
    """A synthetic page in 0..255: light paper, dark glyph-sized strokes along text lines, so a
    text detector or recognizer sees what it was trained on rather than noise."""
    n, c, h, w = shape
    img = rng.normal(232.0, 6.0, (n, 1, h, w))
    line_height = max(4, h // 6) if h >= 32 else max(3, h // 2)
    for b in range(n):
        top = int(rng.integers(1, max(2, line_height)))
        while top + line_height < h:
            left = int(rng.integers(0, max(1, w // 8)))
            right = int(rng.integers(w // 2, w))
            x = left
            while x < right:
                stroke = int(rng.integers(1, max(2, line_height // 3)))
                height = int(rng.integers(line_height // 2, line_height))
                img[b, 0, top + line_height - height:top + line_height, x:x + stroke] = rng.normal(40, 15)
                x += stroke + int(rng.integers(1, max(2, line_height // 2)))
            top += line_height + int(rng.integers(line_height // 2, 2 * line_height))
    return np.repeat(np.clip(img, 0, 255), c, axis=1)


def draw(spec, dtype, rng):
    shape = tuple(spec["shape"])
    kind, *args = spec["data"].split(":")
    if kind == "document":  # document:MEAN:STD, each channel normalized as (x/255 - MEAN) / STD
        x = (document_image(shape, rng) / 255.0 - float(args[0])) / float(args[1])
    elif kind == "uniform":
        x = rng.uniform(float(args[0]), float(args[1]), shape)
    elif kind == "normal":
        x = rng.normal(float(args[0]), float(args[1]), shape)
    elif kind == "int":
        x = rng.integers(int(args[0]), int(args[1]), shape)
    elif kind == "const":
        x = np.full(shape, float(args[0]))
    elif kind == "zeros":
        x = np.zeros(shape)
    else:
        raise ValueError(f"unknown data kind {kind!r}")
    return np.asarray(x).astype(dtype)


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def write_samples(model, entry, work, count=CALIB_SAMPLES):
    """`count` folders of <input>.npy; sample 0 is also the input of the single runs."""
    rng = np.random.default_rng(zlib.crc32(entry["name"].encode()))  # stable across runs
    calib = os.path.join(work, "calib")
    shutil.rmtree(calib, ignore_errors=True)
    for s in range(count):
        d = os.path.join(calib, f"sample_{s:03d}")
        os.makedirs(d)
        for i in graph_inputs(model):
            if i.name not in entry["inputs"]:
                raise SystemExit(f"FAILED: {entry['name']}: corpus.json gives no data for input {i.name}")
            dtype = NUMPY_OF_ONNX[i.type.tensor_type.elem_type]
            np.save(os.path.join(d, file_stem(i.name) + ".npy"), draw(entry["inputs"][i.name], dtype, rng))
    return calib, os.path.join(calib, "sample_000")


def models_with_samples(names, root, count):
    """(name, model path, calibration folder, work folder) per corpus model of `names`, fetched
    and checked, with `count` samples drawn as this test draws them under root/<name>."""
    paths = fetch_corpus.fetch(only=names)
    corpus = {e["name"]: e for e in fetch_corpus.load_corpus()["models"]}
    for name in names:
        work = os.path.join(root, name)
        os.makedirs(work, exist_ok=True)
        calib, _ = write_samples(onnx.load(paths[name]), corpus[name], work, count)
        yield name, paths[name], calib, work


def run(cmd, timeout=900):
    start = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s", time.time() - start
    err = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return proc.returncode, (err[-1] if err else ""), time.time() - start


def outputs_of(model_path):
    return [o.name for o in onnx.load(model_path, load_external_data=False).graph.output]


def load_outputs(folder, names):
    return {n: np.load(os.path.join(folder, file_stem(n) + ".npy")) for n in names}


def relative_error(actual, expected):
    """max (|a - e| - 1e-6) / (|e| + mean |e|): tests/ort/differential_test.py's measure, less an
    absolute 1e-6. ONNX Runtime's Sigmoid flushes outputs below about 1e-7 to 0 (qopt's is
    exact), so a detector whose text map is mostly background would otherwise show a relative
    error near 1 on values no float32 consumer can tell apart."""
    a = np.nan_to_num(actual.astype(np.float64))
    e = np.nan_to_num(expected.astype(np.float64))
    if e.size == 0:
        return 0.0
    if a.shape != e.shape:
        return float("inf")
    scale = np.abs(e) + np.mean(np.abs(e)) + 1e-30
    return float(np.max(np.maximum(np.abs(a - e) - 1e-6, 0.0) / scale))


def max_error(actual, expected):
    worst = 0.0
    for name, e in expected.items():
        a = actual[name]
        if np.issubdtype(e.dtype, np.floating):
            worst = max(worst, relative_error(a, e))
        elif a.shape != e.shape or np.any(a != e):
            worst = max(worst, float(np.count_nonzero(a != e)) if a.shape == e.shape else float("inf"))
    return worst


def sqnr_db(actual, expected):
    """Lowest SQNR (dB) over the floating-point outputs."""
    worst = None
    for name, e in expected.items():
        if not np.issubdtype(e.dtype, np.floating):
            continue
        e64 = e.astype(np.float64)
        noise = np.sum((actual[name].astype(np.float64) - e64) ** 2)
        signal = np.sum(e64 ** 2)
        s = float("inf") if noise == 0 else 10 * np.log10(max(signal, 1e-30) / noise)
        worst = s if worst is None else min(worst, s)
    return worst


def count_qdq(model_path):
    m = onnx.load(model_path, load_external_data=False)
    count = 0

    def walk(g):
        nonlocal count
        for n in g.node:
            if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
                count += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sub in a.graphs:
                    walk(sub)
    walk(m.graph)
    return count


def same_model(a_path, b_path):
    with open(a_path, "rb") as f:
        a = f.read()
    with open(b_path, "rb") as f:
        b = f.read()
    if a == b:
        return "identical"
    pa, pb = onnx.ModelProto(), onnx.ModelProto()
    pa.ParseFromString(a)
    pb.ParseFromString(b)
    return "equal" if pa == pb else "DIFFERENT"


STEPS = ("roundtrip", "interp", "convert", "ptq", "strip", "fp16")


class Row:
    """One model's results. corpus.json may name a step's known gap ("known": {step: why}):
    it is reported, not failed, and a known gap that no longer fails fails the test until it
    is taken out of the list, so the list only ever shrinks."""

    def __init__(self, entry, opset):
        self.entry = entry
        self.cells = {"model": entry["name"], "exporter": entry["exporter"], "opset": str(opset)}
        self.failures = []
        self.known = dict(entry.get("known", {}))
        self.failed_steps = set()
        for step in self.known:
            if step not in STEPS:
                self.failures.append(f"{entry['name']}: corpus.json names an unknown step {step!r}")

    def fail(self, step, what):
        self.failed_steps.add(step)
        if step in self.known:
            return
        self.failures.append(f"{self.entry['name']}: {what}")

    def finish(self):
        for step, why in self.known.items():
            if step in STEPS and step not in self.failed_steps:
                self.failures.append(f"{self.entry['name']}: the known gap in {step} ({why}) is "
                                     "closed: take it out of corpus.json")


def check_exit(row, step, rc, message, what=None):
    """Exit 0 and 1 are answers; 2 on a valid model, a signal or a timeout is a defect."""
    if rc not in (0, 1):
        row.fail(step, f"{what or step} exited {rc}: {message}")


def test_model(entry, path, args, work):
    model = onnx.load(path, load_external_data=False)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), "?")
    row = Row(entry, opset)
    calib, sample0 = write_samples(model, entry, work)
    names = outputs_of(path)

    # Round trip through qopt with no pass: every field must survive.
    out = os.path.join(work, "roundtrip.onnx")
    rc, msg, _ = run([args.qopt, "-p", "", path, out])
    check_exit(row, "roundtrip", rc, msg, "the round trip")
    if rc == 0:
        row.cells["roundtrip"] = same_model(path, out)
        if row.cells["roundtrip"] == "DIFFERENT":
            row.fail("roundtrip", "the round trip changed the model")
    else:
        row.cells["roundtrip"] = f"exit {rc}"

    # ONNX Runtime on the original: the reference of the interpreter and of the conversion.
    ort_dir = os.path.join(work, "ort")
    orc, omsg, _ = run([args.node, os.path.join(ROOT, "tests", "ort", "run_ort.js"), "--model", path,
                        "--inputs", sample0, "--outputs", ort_dir, "--optimization", "disabled"])
    ort = load_outputs(ort_dir, names) if orc == 0 else None
    if ort is None:
        row.fail("interp", f"ONNX Runtime could not run it: {omsg}")
    tolerance = args.rtol_fp16 if "fp16" in entry["name"] else args.rtol

    # The interpreter against ONNX Runtime.
    fp32_dir = os.path.join(work, "qopt_fp32")
    rc, msg, _ = run([args.qopt_run, path, "--inputs", sample0, "--outputs", fp32_dir])
    check_exit(row, "interp", rc, msg, "qopt-run")
    reference = None
    if rc == 0:
        reference = load_outputs(fp32_dir, names)
        if ort is None:
            row.cells["interp/ORT"] = "ORT fails"
        else:
            err = max_error(reference, ort)
            row.cells["interp/ORT"] = f"{err:.2g}"
            if err > tolerance:
                row.fail("interp", f"interpreter differs from ONNX Runtime: max relative error "
                                   f"{err:.3g} > {tolerance}")
    else:
        row.cells["interp/ORT"] = f"exit {rc}"

    # convert-opset up to 21 and back down to the model's opset: ONNX Runtime gives on each what
    # it gives on the original.
    row.cells["convert 21/back (ORT)"] = "-"
    if isinstance(opset, int) and opset < 21:
        errors = []
        source = path
        for target in (21, opset):
            converted = os.path.join(work, f"opset{target}.onnx")
            what = f"convert-opset{{to={target}}}"
            rc, msg, _ = run([args.qopt, "-q", "-p", what, source, converted])
            check_exit(row, "convert", rc, msg, what)
            if rc != 0:
                row.fail("convert", f"{what} refused: {msg}")
                errors.append(f"exit {rc}")
                break
            source = converted
            if ort is None:
                continue
            out_dir = os.path.join(work, f"ort_opset{target}")
            orc, omsg, _ = run([args.node, os.path.join(ROOT, "tests", "ort", "run_ort.js"), "--model",
                                converted, "--inputs", sample0, "--outputs", out_dir,
                                "--optimization", "disabled"])
            if orc != 0:
                errors.append("ORT fails")
                row.fail("convert", f"ONNX Runtime could not run the opset-{target} model: {omsg}")
                break
            err = max_error(load_outputs(out_dir, names), ort)
            errors.append(f"{err:.2g}")
            if err > tolerance:
                row.fail("convert", f"the opset-{target} model differs on ONNX Runtime: {err:.3g}")
        row.cells["convert 21/back (ORT)"] = " / ".join(errors)

    quantized = entry.get("quantized", False)
    int8 = os.path.join(work, "int8.onnx")
    if quantized:
        row.cells["PTQ exit"] = "(quantized)"
        row.cells["INT8 SQNR"] = "-"
        strip_input = path
    else:
        report = os.path.join(work, "ptq.json")
        rc, msg, seconds = run([args.qopt, "-q", "-p", PTQ_PIPELINE, "--calib-data", calib,
                                "--report", report, path, int8])
        check_exit(row, "ptq", rc, msg, PTQ_PIPELINE)
        row.cells["PTQ exit"] = str(rc)
        row.cells["PTQ s"] = f"{seconds:.1f}"
        if rc == 1:
            row.cells["note"] = msg[:160]
        strip_input = int8 if rc == 0 else None
        row.cells["INT8 SQNR"] = "-"
        if rc == 1:
            # verify refused: measure the INT8 model anyway, without verify.
            rc2, msg2, _ = run([args.qopt, "-q", "-p", "fold-bn,insert-qdq", "--calib-data", calib, path, int8])
            check_exit(row, "ptq", rc2, msg2, "fold-bn,insert-qdq")
            strip_input = int8 if rc2 == 0 else None
        if strip_input and reference is not None:
            int8_dir = os.path.join(work, "qopt_int8")
            rc, msg, _ = run([args.qopt_run, int8, "--inputs", sample0, "--outputs", int8_dir])
            check_exit(row, "ptq", rc, msg, "qopt-run on the INT8 model")
            if rc == 0:
                s = sqnr_db(load_outputs(int8_dir, names), reference)
                row.cells["INT8 SQNR"] = ("-" if s is None else "exact" if s == float("inf")
                                          else f"{s:.1f} dB")

    if strip_input:
        stripped = os.path.join(work, "stripped.onnx")
        rc, msg, _ = run([args.qopt, "-q", "-p", "strip-qdq", strip_input, stripped])
        check_exit(row, "strip", rc, msg, "strip-qdq")
        row.cells["strip: Q/DQ left"] = f"{count_qdq(stripped)}/{count_qdq(strip_input)}" if rc == 0 else f"exit {rc}"
    else:
        row.cells["strip: Q/DQ left"] = "-"

    fp16 = os.path.join(work, "fp16.onnx")
    rc, msg, _ = run([args.qopt, "-q", "-p", "to-fp16", "--calib-data", calib, path, fp16])
    check_exit(row, "fp16", rc, msg, "to-fp16")
    row.cells["fp16 rel err"] = f"exit {rc}"
    if rc == 0 and reference is not None:
        fp16_dir = os.path.join(work, "qopt_fp16")
        rc, msg, _ = run([args.qopt_run, fp16, "--inputs", sample0, "--outputs", fp16_dir])
        check_exit(row, "fp16", rc, msg, "qopt-run on the FP16 model")
        if rc == 0:
            row.cells["fp16 rel err"] = f"{max_error(load_outputs(fp16_dir, names), reference):.2g}"
    row.finish()
    return row


COLUMNS = ["model", "exporter", "opset", "roundtrip", "interp/ORT", "convert 21/back (ORT)", "PTQ exit",
           "PTQ s", "INT8 SQNR", "strip: Q/DQ left", "fp16 rel err"]


def print_table(rows):
    widths = {c: max(len(c), *(len(r.cells.get(c, "-")) for r in rows)) for c in COLUMNS}
    print("| " + " | ".join(c.ljust(widths[c]) for c in COLUMNS) + " |")
    print("|" + "|".join("-" * (widths[c] + 2) for c in COLUMNS) + "|")
    for r in rows:
        print("| " + " | ".join(r.cells.get(c, "-").ljust(widths[c]) for c in COLUMNS) + " |")
    for r in rows:
        if "note" in r.cells:
            print(f"  {r.cells['model']}: verify: {r.cells['note']}")
    for r in rows:
        for step, why in r.known.items():
            print(f"  {r.cells['model']}: known gap in {step}: {why}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qopt", required=True)
    ap.add_argument("--qopt-run", required=True)
    ap.add_argument("--node", default="node")
    ap.add_argument("--work", required=True)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--rtol-fp16", type=float, default=2e-2)
    ap.add_argument("--json", default=None, help="write the table as JSON too")
    args = ap.parse_args()

    if not os.path.exists(os.path.join(ROOT, "node_modules", "onnxruntime-node", "package.json")):
        print("FAILED: onnxruntime-node is not installed; run scripts/install-deps.sh")
        return 1
    try:
        paths = fetch_corpus.fetch(args.cache, set(filter(None, args.only.split(","))) or None)
    except fetch_corpus.FetchError as e:
        print(f"FAILED: fetching the corpus: {e}")
        return 1
    entries = {e["name"]: e for e in fetch_corpus.load_corpus()["models"]}
    rows = []
    for name, path in paths.items():
        work = os.path.join(args.work, name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        start = time.time()
        rows.append(test_model(entries[name], path, args, work))
        print(f"{name}: {time.time() - start:.1f} s", flush=True)
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.cells for r in rows], f, indent=1)
    failures = [f for r in rows for f in r.failures]
    print()
    for f in failures:
        print(f"FAILED: {f}")
    print(f"corpus: {len(rows) - len({f.split(':')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
