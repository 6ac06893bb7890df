#!/usr/bin/env python3
"""Compares qopt's calibration and Q/DQ placement with ONNX Runtime's quantize_static.

For each model, on the same calibration samples:
  - ONNX Runtime: quantize_static(QuantFormat.QDQ, per_channel=True, int8 activations and
    weights, ActivationSymmetric=True, WeightSymmetric=True) with CalibrationMethod.MinMax and
    then CalibrationMethod.Entropy;
  - qopt: `qopt -p fold-bn,insert-qdq{calibrator=max}` and `{calibrator=entropy}` (int8
    symmetric, per-channel weights, TensorRT placement).
Each quantization is timed (wall seconds of the whole call: model load, calibration, writing),
then the FP32 model and every QDQ model run in onnxruntime (CPU, graph optimizations disabled so
that Q/DQ are evaluated as ONNX defines them) on held-out samples, and a table prints the method,
calibration seconds, and the SQNR (dB) and cosine of the outputs against FP32.

Needs: python3 with numpy, onnx and onnxruntime (with onnxruntime.quantization), and a qopt build.

  compare_ort_quantize_static.py --qopt BUILD/bin/qopt [--repo DIR] [--work DIR]
      [--models mnv2_small_fp32,resnet18_bn_opset17] [--calib-count 6] [--random-samples 16]

mnv2_small_fp32 (input 1x3x96x96) uses tests/fixtures/torch/calib_96: the first --calib-count
samples calibrate, the rest are held out. Models whose input shape calib_96 does not fit (the
resnet18 fixture takes 224x224) use seeded standard-normal samples: --random-samples for
calibration and as many again, from another seed, held out. --calib-dir DIR replaces calib_96
with a folder of .npy files (one sample each) for every model whose input they fit.
"""

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REPO = os.path.dirname(os.path.dirname(HERE))


def fail(message):
    sys.exit(f"error: {message}")


def import_ort():
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        from onnxruntime import quantization  # noqa: F401
    except ImportError as e:
        fail(f"{e}; install onnx and onnxruntime (pip install onnx onnxruntime)")
    import onnxruntime
    return onnxruntime


def gunzip_fixture(repo, name, work):
    src = os.path.join(repo, "tests", "fixtures", "torch", name + ".onnx.gz")
    if not os.path.exists(src):
        fail(f"fixture {src} not found (is --repo the qopt source tree?)")
    dst = os.path.join(work, name + ".onnx")
    with gzip.open(src, "rb") as f, open(dst, "wb") as g:
        shutil.copyfileobj(f, g)
    return dst


def model_input(path):
    import onnx
    model = onnx.load(path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    if len(inputs) != 1:
        fail(f"{path}: expected one input, found {[i.name for i in inputs]}")
    dims = [d.dim_value if d.dim_value > 0 else 1 for d in inputs[0].type.tensor_type.shape.dim]
    return inputs[0].name, tuple(dims)


def load_calib_96(repo, work):
    archive = os.path.join(repo, "tests", "fixtures", "torch", "calib_96.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(work)
    folder = os.path.join(work, "calib_96")
    return [np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
            if f.endswith(".npy")]


def load_folder(folder):
    return [np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
            if f.endswith(".npy")]


def split_samples(args, shape, real):
    """(calibration samples, held-out samples, description)."""
    fitting = [a.astype(np.float32) for a in real if tuple(a.shape) == shape]
    if len(fitting) > args.calib_count:
        return (fitting[:args.calib_count], fitting[args.calib_count:],
                f"{args.calib_count} real samples calibrate, {len(fitting) - args.calib_count} "
                "held out")
    calib_rng = np.random.default_rng(1)
    eval_rng = np.random.default_rng(2)
    calib = [calib_rng.standard_normal(shape).astype(np.float32)
             for _ in range(args.random_samples)]
    held = [eval_rng.standard_normal(shape).astype(np.float32) for _ in range(args.random_samples)]
    return calib, held, (f"no real samples of shape {shape}: {args.random_samples} random "
                         "samples calibrate, as many others held out")


def write_calib_folder(folder, input_name, samples):
    """One sample folder per sample (<folder>/<i>/<input>.npy), the layout qopt reads."""
    shutil.rmtree(folder, ignore_errors=True)
    for i, sample in enumerate(samples):
        d = os.path.join(folder, f"{i:04d}")
        os.makedirs(d)
        name = "".join(c if c.isalnum() or c in "_.-" else "_" for c in input_name)
        np.save(os.path.join(d, name + ".npy"), sample)


class SampleReader:
    """onnxruntime.quantization.CalibrationDataReader over a list of arrays."""

    def __init__(self, input_name, samples):
        self.input_name = input_name
        self.samples = samples
        self.index = 0

    def get_next(self):
        if self.index >= len(self.samples):
            return None
        sample = self.samples[self.index]
        self.index += 1
        return {self.input_name: sample}

    def rewind(self):
        self.index = 0


def quantize_with_ort(model, out, input_name, samples, method, preprocess, work):
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    source = model
    if preprocess:
        # quantize_static's recommended preprocessing (shape inference, BatchNorm folding by
        # ONNX Runtime's optimizer); qopt's pipeline folds BatchNorm with fold-bn likewise.
        from onnxruntime.quantization.shape_inference import quant_pre_process
        source = os.path.join(work, os.path.basename(model).replace(".onnx", ".pre.onnx"))
        if not os.path.exists(source):
            quant_pre_process(model, source)
    calibrate_method = {"minmax": CalibrationMethod.MinMax,
                        "entropy": CalibrationMethod.Entropy}[method]
    start = time.perf_counter()
    quantize_static(
        source, out, SampleReader(input_name, samples),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=calibrate_method,
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    return time.perf_counter() - start


def quantize_with_qopt(qopt, model, out, calib_dir, calibrator):
    cmd = [qopt, "-q", "-p", f"fold-bn,insert-qdq{{calibrator={calibrator}}}",
           "--calib-data", calib_dir, model, out]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        fail(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return seconds


def run_outputs(ort, model, input_name, samples):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    first_output = session.get_outputs()[0].name
    return np.concatenate([
        np.asarray(session.run([first_output], {input_name: s})[0], np.float64).ravel()
        for s in samples])


def sqnr_and_cosine(reference, actual):
    noise = float(np.sum((reference - actual) ** 2))
    sqnr = float("inf") if noise == 0 else 10 * np.log10(float(np.sum(reference ** 2)) / noise)
    cosine = float(np.dot(reference, actual) /
                   (np.linalg.norm(reference) * np.linalg.norm(actual) + 1e-30))
    return sqnr, cosine


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qopt", required=True, help="path of the qopt binary (BUILD/bin/qopt)")
    parser.add_argument("--repo", default=DEFAULT_REPO, help="qopt source tree (for fixtures)")
    parser.add_argument("--work", default="compare_ort_quantize_static.work")
    parser.add_argument("--models", default="mnv2_small_fp32,resnet18_bn_opset17",
                        help="comma-separated fixture names under tests/fixtures/torch")
    parser.add_argument("--calib-count", type=int, default=6,
                        help="real samples used for calibration; the rest are held out")
    parser.add_argument("--calib-dir", help="folder of .npy samples instead of calib_96")
    parser.add_argument("--random-samples", type=int, default=16)
    parser.add_argument("--no-preprocess", action="store_true",
                        help="skip quant_pre_process before quantize_static")
    args = parser.parse_args()

    qopt = os.path.abspath(args.qopt)
    if not os.access(qopt, os.X_OK):
        fail(f"{qopt} is not an executable qopt binary")
    ort = import_ort()
    os.makedirs(args.work, exist_ok=True)
    work = os.path.abspath(args.work)
    real = load_folder(args.calib_dir) if args.calib_dir else load_calib_96(args.repo, work)

    rows = []
    for name in [m for m in args.models.split(",") if m]:
        model = gunzip_fixture(args.repo, name, work)
        input_name, shape = model_input(model)
        calib, held, how = split_samples(args, shape, real)
        print(f"{name}: input {input_name} {shape}; {how}", flush=True)
        calib_dir = os.path.join(work, name + ".calib")
        write_calib_folder(calib_dir, input_name, calib)
        reference = run_outputs(ort, model, input_name, held)

        runs = []
        for method in ("minmax", "entropy"):
            out = os.path.join(work, f"{name}.ort_{method}.onnx")
            seconds = quantize_with_ort(model, out, input_name, calib, method,
                                        not args.no_preprocess, work)
            runs.append((f"ORT quantize_static {method}", seconds, out))
        for calibrator in ("max", "entropy"):
            out = os.path.join(work, f"{name}.qopt_{calibrator}.onnx")
            seconds = quantize_with_qopt(qopt, model, out, calib_dir, calibrator)
            runs.append((f"qopt insert-qdq {calibrator}", seconds, out))
        for method, seconds, out in runs:
            sqnr, cosine = sqnr_and_cosine(reference, run_outputs(ort, out, input_name, held))
            rows.append((name, method, seconds, sqnr, cosine))

    print()
    header = f"{'model':<22} {'method':<30} {'calib s':>8} {'SQNR dB':>8} {'cosine':>8}"
    print(header)
    print("-" * len(header))
    for name, method, seconds, sqnr, cosine in rows:
        print(f"{name:<22} {method:<30} {seconds:>8.2f} {sqnr:>8.2f} {cosine:>8.5f}")
    print("\ncalib s: wall time of the whole quantization call (load, calibrate, write); "
          "SQNR and cosine: first output against FP32 on the held-out samples.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
