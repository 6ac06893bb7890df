#!/usr/bin/env python3
"""What the task metrics of bench/quality mean in decibels: each model's FP32 pre-activation
outputs on the evaluation split (the input of the Softmax or Sigmoid that computes its output,
the logits; the output itself where there is none) plus white Gaussian noise at a given SQNR,
through that Softmax (last axis) or Sigmoid, scored against FP32 with the bench's task metric.
A quantizer whose error were white noise at that SQNR would score about that; a model whose
FP32 decisions have small margins (random weights: GPT-2's top two logits lie a sixth of a
standard deviation apart at the median position) needs a high SQNR for a given agreement.

  noise_floor.py [--models a,b] [--sqnr 20,25,30,35] [--seeds 3] [--work DIR] [--data DIR]

The evaluation split is written as run_quality.py writes it; the data must be make_data.py's
(checked against ort_reference.json).
"""
import argparse
import json
import os
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import quality_common as qc  # noqa: E402
import run_quality as rq  # noqa: E402


def apply(op, x):
    x = x.astype(np.float64)
    if op == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op in ("Softmax", "LogSoftmax"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        return np.log(p) if op == "LogSoftmax" else p
    return x


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(qc.MODELS))
    parser.add_argument("--sqnr", default="15,20,25,30,35,40")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(rq.default_work(), "noise-floor"))
    parser.add_argument("--data", default=None)
    args = parser.parse_args()
    import onnx

    data = args.data or rq.make_data.default_out()
    with open(rq.ORT_REFERENCE, encoding="utf-8") as f:
        rq.check_data(data, json.load(f))
    names = [n for n in args.models.split(",") if n]
    paths = rq.model_paths(names)
    runner = rq.Runner(types.SimpleNamespace(threads=2, qopt=rq.default_qopt()), None, None)
    levels = [float(v) for v in args.sqnr.split(",")]
    print("| model | task metric | " + " | ".join(f"{v:g} dB" for v in levels) + " |")
    print("|---|---|" + "---|" * len(levels))
    for name in names:
        evald = os.path.join(args.work, name, "eval")
        rq.write_samples(name, "eval", data, evald)
        outputs, pres = runner.ort_outputs(paths[name], evald, os.path.join(args.work, name, "out"))
        node = qc.preactivation_node(onnx.load(paths[name]).graph) if pres else None
        op = node.op_type if node is not None else None
        pres = pres or outputs
        if op:  # the activation as written here must give the model's own outputs
            worst = max(float(np.max(np.abs(apply(op, p).reshape(o.shape) - o))) for p, o in zip(pres, outputs))
            if worst > 1e-4:
                raise SystemExit(f"{name}: {op} over the last axis differs from the output by {worst:.3g}")
        task = qc.MODELS[name]["task"]
        rms = np.sqrt(sum(float(np.sum(np.square(p.astype(np.float64)))) for p in pres) /
                      sum(p.size for p in pres))
        cells = []
        for db in levels:
            scores = []
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                noisy = [apply(op, p + rng.standard_normal(p.shape) * rms * 10 ** (-db / 20)).reshape(o.shape)
                         for p, o in zip(pres, outputs)]
                scores.append(qc.task_metric(task, outputs, noisy))
            cells.append(f"{np.mean(scores):.1f} %")
        print(f"| {name} | {qc.TASK_METRIC[task]} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
