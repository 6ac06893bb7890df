#!/usr/bin/env python3
"""Passes that read calibration or evaluation data must stream it: what they keep per sample is
bounded, so a data set larger than --max-memory goes through them. This runs every such pass with
samples=0 (all of the data) over a data set on disk clearly larger than --max-memory, and fails
when qopt's peak resident set grows with the number of samples.

The bound is relative, so that it holds on any machine and build: each pipeline runs first on the
data set's first --probe samples, then on all of it; the full run's peak RSS must stay below
--ratio x the probe run's + --slack-mb. What a streaming run may add between the two is bounded
by --max-memory's shares (the sample cache and each spill store keep an eighth of it); a pass
that holds every sample, every sample's outputs or every sample's layer inputs adds about the
data set's size (printed as "holding every sample"), well past the bound.

Two small float models, built here with onnx.helper, each with one sample of about 300 KB:
  conv     Conv+BatchNormalization+Relu, depthwise Conv+Relu, 1x1 Conv+Relu, Conv+Relu,
           GlobalAveragePool, Gemm, Softmax; outputs the class probabilities and the 1x1
           Conv's feature map (so reference outputs are as large as the inputs)
           fold-bn, equalize, insert-qdq (auto calibrator, GPTQ weight rounding),
           sensitivity, mixed-precision, bias-correct, verify
  matmul   LayerNormalization, MatMul+Add+Relu, MatMul+Add, residual Add, LayerNormalization,
           MatMul: [1, T, D] tokens in and out
           smooth, insert-qdq, strip-qdq, quantize-weights (GPTQ), to-fp16

  streaming_memory_test.py --qopt QOPT --work DIR [--samples 600] [--probe 8]
      [--max-memory 96M] [--threads 2] [--ratio 1.3] [--slack-mb 32] [--only conv,matmul]
      [--pipeline CASE=PIPELINE]... [--layout files|one-file]

--layout one-file writes the data set as one .npy stacking every sample along the batch axis (a
layout --calib-data accepts); the default writes one .npy per sample.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import child_rss  # noqa: E402

# Every data pass reads all of the data (samples=0). verify's thresholds are opened wide: random
# weights quantize however they quantize, and this test judges memory, not accuracy.
LOOSE_VERIFY = "verify{samples=0 decisions=0 map-iou=0 rel-error=1000 guard=1000}"
CASES = {
    "conv": ("fold-bn,equalize{samples=0},"
             "insert-qdq{samples=0 min-channels=0 weight-rounding=gptq},"
             "sensitivity{samples=0},mixed-precision{samples=0},bias-correct{samples=0},"
             + LOOSE_VERIFY),
    "matmul": ("smooth{samples=0},insert-qdq{samples=0 min-channels=0},strip-qdq{samples=0},"
               "quantize-weights{method=gptq samples=0},to-fp16"),
}
CONV_INPUT = [1, 3, 160, 160]  # 300 KB of float32
MATMUL_INPUT = [1, 300, 256]   # 300 KB of float32


def initializer(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def he(rng, shape, fan_in):
    return rng.normal(0.0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)


def conv_model(rng):
    inits = [
        initializer("w1", he(rng, [16, 3, 3, 3], 27)),
        initializer("b1", np.zeros(16)),
        initializer("bn_scale", rng.uniform(0.5, 1.5, 16)),
        initializer("bn_bias", rng.normal(0, 0.1, 16)),
        initializer("bn_mean", rng.normal(0, 0.1, 16)),
        initializer("bn_var", rng.uniform(0.5, 2.0, 16)),
        initializer("w2", he(rng, [16, 1, 3, 3], 9)),
        initializer("b2", rng.normal(0, 0.05, 16)),
        initializer("w3", he(rng, [32, 16, 1, 1], 16)),
        initializer("b3", rng.normal(0, 0.05, 32)),
        initializer("w4", he(rng, [32, 32, 3, 3], 288)),
        initializer("b4", rng.normal(0, 0.05, 32)),
        initializer("wfc", he(rng, [10, 32], 32)),
        initializer("bfc", rng.normal(0, 0.05, 10)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2_dw", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], group=16),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="conv3", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c3"], ["features"], name="relu3"),
        helper.make_node("Conv", ["features", "w4", "b4"], ["c4"], name="conv4",
                         kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c4"], ["r4"], name="relu4"),
        helper.make_node("GlobalAveragePool", ["r4"], ["pooled"], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    h, w = CONV_INPUT[2] // 2, CONV_INPUT[3] // 2
    graph = helper.make_graph(
        nodes, "streaming_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, CONV_INPUT)],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 32, h, w])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def matmul_model(rng):
    d = MATMUL_INPUT[2]
    # SmoothQuant has outliers to move when a few input channels are much wider than the rest.
    wide = np.where(np.arange(d) % 37 == 0, 20.0, 1.0)
    inits = [
        initializer("ln1_g", wide * rng.uniform(0.5, 1.5, d)),
        initializer("ln1_b", rng.normal(0, 0.1, d)),
        initializer("w1", he(rng, [d, d], d)),
        initializer("b1", rng.normal(0, 0.05, d)),
        initializer("w2", he(rng, [d, d], d)),
        initializer("b2", rng.normal(0, 0.05, d)),
        initializer("ln2_g", rng.uniform(0.5, 1.5, d)),
        initializer("ln2_b", rng.normal(0, 0.1, d)),
        initializer("w3", he(rng, [d, d], d)),
    ]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["n1"], name="ln1",
                         axis=-1),
        helper.make_node("MatMul", ["n1", "w1"], ["m1"], name="fc1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="fc1_bias"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="fc2"),
        helper.make_node("Add", ["m2", "b2"], ["a2"], name="fc2_bias"),
        helper.make_node("Add", ["a2", "x"], ["res"], name="residual"),
        helper.make_node("LayerNormalization", ["res", "ln2_g", "ln2_b"], ["n2"], name="ln2",
                         axis=-1),
        helper.make_node("MatMul", ["n2", "w3"], ["y"], name="head"),
    ]
    graph = helper.make_graph(
        nodes, "streaming_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, MATMUL_INPUT)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, MATMUL_INPUT)],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def write_data(work, layout, shape, count, probe, seed):
    """(all `count` samples, the first `probe` of them) as --calib-data paths: folders of one
    .npy per sample, or for layout one-file single .npy files stacking the samples along the
    batch axis (which qopt splits into samples)."""
    rng = np.random.default_rng(seed)
    full, first = os.path.join(work, "data"), os.path.join(work, "probe")
    for path in (full, first, full + ".npy", first + ".npy"):
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    if layout == "one-file":
        stacked = tuple([count * shape[0]] + shape[1:])
        data = np.lib.format.open_memmap(full + ".npy", mode="w+", dtype=np.float32, shape=stacked)
        for i in range(count):
            data[i * shape[0]:(i + 1) * shape[0]] = rng.standard_normal(shape, dtype=np.float32)
        np.save(first + ".npy", np.array(data[:probe * shape[0]]))
        data.flush()
        return full + ".npy", first + ".npy"
    os.makedirs(full)
    os.makedirs(first)
    for i in range(count):
        name = f"sample_{i:04d}.npy"
        np.save(os.path.join(full, name), rng.standard_normal(shape, dtype=np.float32))
        if i < probe:
            os.symlink(os.path.join(full, name), os.path.join(first, name))
    return full, first


def disk_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def run_qopt(qopt, args, log):
    """(exit code, peak RSS in bytes, wall seconds) of one qopt run; stderr goes to `log`."""
    with open(log, "w", encoding="utf-8") as err:
        run = child_rss.run([qopt] + args, stdout=subprocess.DEVNULL, stderr=err)
    return run.code, run.peak_rss_bytes, run.wall_s


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def tail(log, lines=4):
    with open(log, encoding="utf-8", errors="replace") as f:
        return "\n      ".join(f.read().strip().splitlines()[-lines:])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qopt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--probe", type=int, default=8, help="samples of the reference run")
    parser.add_argument("--max-memory", default="96M")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ratio", type=float, default=1.3)
    parser.add_argument("--slack-mb", type=float, default=32)
    parser.add_argument("--only", default=",".join(CASES), help="cases to run")
    parser.add_argument("--layout", choices=["files", "one-file"], default="files",
                        help="one .npy per sample, or every sample in one .npy")
    parser.add_argument("--pipeline", action="append", default=[], metavar="CASE=PIPELINE",
                        help="run CASE's model through PIPELINE instead (repeatable)")
    args = parser.parse_args()
    pipelines = dict(CASES)
    for item in args.pipeline:
        case, _, pipeline = item.partition("=")
        if case not in CASES or not pipeline:
            parser.error(f"--pipeline {item!r}: expected CASE=PIPELINE, CASE one of "
                         f"{', '.join(CASES)}")
        pipelines[case] = pipeline
    cases = args.only.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"--only: no case {', '.join(unknown)} (cases: {', '.join(CASES)})")

    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(20261129)
    models = {"conv": (conv_model(rng), CONV_INPUT), "matmul": (matmul_model(rng), MATMUL_INPUT)}
    failures = []
    for case in cases:
        model, shape = models[case]
        pipeline = pipelines[case]
        work = os.path.join(args.work, case)
        os.makedirs(work, exist_ok=True)
        model_path = os.path.join(work, "model.onnx")
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, model_path)
        full, probe = write_data(work, args.layout, shape, args.samples, args.probe, len(case))
        data_bytes = disk_bytes(full)
        # The premise: the data cannot fit the budget, so only streaming passes stay bounded.
        if data_bytes <= 1.5 * size_bytes(args.max_memory):
            sys.exit(f"FAILED: the data set ({data_bytes / 1e6:.0f} MB) is not clearly larger than "
                     f"--max-memory {args.max_memory}: raise --samples")

        rss = {}
        for label, data in (("probe", probe), ("full", full)):
            log = os.path.join(work, f"{label}.log")
            cmd = ["-p", pipeline, "--calib-data", data, "--threads", str(args.threads),
                   "--max-memory", args.max_memory, "--time-passes", model_path,
                   os.path.join(work, f"{label}.onnx")]
            rc, peak, wall = run_qopt(args.qopt, cmd, log)
            count = args.probe if label == "probe" else args.samples
            print(f"{case}: {count} samples: exit {rc}, peak RSS {peak / 1e6:.1f} MB, {wall:.1f} s")
            if rc != 0:
                failures.append(f"{case}: qopt exited {rc} on {count} samples "
                                f"(qopt {' '.join(cmd)}):\n      {tail(log)}")
                break
            rss[label] = peak
        if len(rss) < 2:
            continue
        bound = args.ratio * rss["probe"] + args.slack_mb * 1e6
        held = rss["probe"] + data_bytes
        print(f"{case}: bound {bound / 1e6:.1f} MB ({args.ratio} x {rss['probe'] / 1e6:.1f} + "
              f"{args.slack_mb:g}); holding every sample would take about {held / 1e6:.0f} MB "
              f"(data set {data_bytes / 1e6:.0f} MB, --max-memory {args.max_memory})")
        if rss["full"] > bound:
            failures.append(
                f"{case}: peak RSS {rss['full'] / 1e6:.1f} MB on {args.samples} samples is above "
                f"the bound {bound / 1e6:.1f} MB ({args.ratio} x {rss['probe'] / 1e6:.1f} MB on "
                f"{args.probe} samples + {args.slack_mb:g} MB): qopt keeps per-sample data "
                f"(holding all {data_bytes / 1e6:.0f} MB of samples would give about "
                f"{held / 1e6:.0f} MB); pipeline {pipeline}; log "
                f"{os.path.join(work, 'full.log')}")
        for label in ("probe", "full"):
            out = os.path.join(work, f"{label}.onnx")
            if os.path.exists(out):
                os.remove(out)
        remove(full)  # 180 MB per case; written again on the next run
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("passed")


if __name__ == "__main__":
    main()
