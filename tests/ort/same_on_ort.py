#!/usr/bin/env python3
"""Runs several models with ONNX Runtime (tests/ort/run_ort.js) on the same random inputs and
checks that every one gives the first one's outputs: a model and its rewritten forms (another
opset, say) must compute the same thing on an independent runtime.

  same_on_ort.py [--node PATH] [--rtol 1e-6] [--seed N] [--qopt-run PATH]
                 ORIGINAL.onnx REWRITTEN.onnx...

With --qopt-run, each model also runs on qopt's interpreter, whose outputs must equal ONNX
Runtime's on that model within --interp-rtol (default 1e-4, tests/ort/differential_test.py's).

Inputs follow the first model's graph inputs (static shapes; float types drawn from a normal
distribution, integers from 0..3, bools at random). Prints one line per model and exits 1 on a
difference, when a model does not run, and when ONNX Runtime is not installed."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import mapping

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def file_stem(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def draw_inputs(model, rng, folder):
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dims = []
        for d in tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                sys.exit(f"FAILED: input {value.name} has a dim without a size")
            dims.append(d.dim_value)
        dtype = mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type.elem_type]
        if np.issubdtype(dtype, np.floating):
            data = rng.standard_normal(dims).astype(dtype)
        elif dtype == np.bool_:
            data = rng.integers(0, 2, dims).astype(np.bool_)
        else:
            data = rng.integers(0, 4, dims).astype(dtype)
        np.save(os.path.join(folder, file_stem(value.name) + ".npy"), data)


def run_ort(node, model_path, inputs, outputs):
    proc = subprocess.run([node, os.path.join(ROOT, "tests", "ort", "run_ort.js"), "--model",
                           model_path, "--inputs", inputs, "--outputs", outputs,
                           "--optimization", "disabled"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAILED: ONNX Runtime could not run {model_path}:\n{proc.stderr.strip()[-2000:]}")
    model = onnx.load(model_path, load_external_data=False)
    return {o.name: np.load(os.path.join(outputs, file_stem(o.name) + ".npy"))
            for o in model.graph.output}


def difference(actual, expected):
    """Max relative error (as tests/ort/differential_test.py) over float outputs; mismatching
    elements for the others; inf for a shape or dtype change."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return float("inf")
    if np.issubdtype(expected.dtype, np.floating):
        a = np.nan_to_num(actual.astype(np.float64))
        e = np.nan_to_num(expected.astype(np.float64))
        if e.size == 0:
            return 0.0
        return float(np.max(np.abs(a - e) / (np.abs(e) + np.mean(np.abs(e)) + 1e-30)))
    return float(np.count_nonzero(actual != expected))


def same_on_interpreter(args, model_path, inputs, ort_outputs, work, index):
    """Runs `model_path` with qopt-run and compares with ONNX Runtime's outputs of that model."""
    folder = os.path.join(work, f"qopt{index}")
    proc = subprocess.run([args.qopt_run, model_path, "--inputs", inputs, "--outputs", folder],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAILED: qopt-run could not run {model_path}:\n{proc.stderr.strip()[-2000:]}")
    worst = 0.0
    for name, expected in ort_outputs.items():
        worst = max(worst, difference(np.load(os.path.join(folder, file_stem(name) + ".npy")),
                                      expected))
    verdict = "same" if worst <= args.interp_rtol else "DIFFERENT"
    print(f"{os.path.basename(model_path)}: {verdict} on qopt's interpreter as on ONNX Runtime "
          f"(max relative error {worst:.3g})")
    return worst <= args.interp_rtol


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--node", default="node")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--qopt-run", help="also check qopt's interpreter against ONNX Runtime")
    ap.add_argument("--interp-rtol", type=float, default=1e-4)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, "node_modules", "onnxruntime-node", "package.json")):
        sys.exit("FAILED: onnxruntime-node is not installed; run scripts/install-deps.sh")
    with tempfile.TemporaryDirectory() as work:
        inputs = os.path.join(work, "inputs")
        os.makedirs(inputs)
        draw_inputs(onnx.load(args.models[0], load_external_data=False),
                    np.random.default_rng(args.seed), inputs)
        reference = run_ort(args.node, args.models[0], inputs, os.path.join(work, "out0"))
        failed = False
        if args.qopt_run:
            failed = not same_on_interpreter(args, args.models[0], inputs, reference, work, 0)
        for i, path in enumerate(args.models[1:], start=1):
            got = run_ort(args.node, path, inputs, os.path.join(work, f"out{i}"))
            if args.qopt_run:
                failed = not same_on_interpreter(args, path, inputs, got, work, i) or failed
            worst = 0.0
            for name, expected in reference.items():
                if name not in got:
                    sys.exit(f"FAILED: {path} has no output {name}")
                worst = max(worst, difference(got[name], expected))
            verdict = "same" if worst <= args.rtol else "DIFFERENT"
            failed = failed or worst > args.rtol
            print(f"{os.path.basename(path)}: {verdict} on ONNX Runtime (max relative error {worst:.3g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
