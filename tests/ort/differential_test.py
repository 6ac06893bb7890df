#!/usr/bin/env python3
"""Differential test: runs one model through qopt's interpreter (qopt-run) and ONNX Runtime
(onnxruntime-node, tests/ort/run_ort.js) on the same inputs and compares every graph output:
floating point outputs within a relative tolerance, integer outputs exactly.

  differential_test.py --model NAME --work DIR --qopt-run PATH [--node PATH] [--rtol 1e-4]

NAME is one of tests/models/build_models.py's test set; the model and its inputs are written to
DIR. Where the builder also gives a reference model (the same function written with what ONNX
Runtime's CPU kernels run, e.g. layout-1 recurrent ops as Transposes around layout-0 ones), ONNX
Runtime runs that one. Exits 1 on any mismatch and when ONNX Runtime is not installed (run
`npm ci --ignore-scripts` in the repository root)."""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from fp16_common import ROOT, finish, require_ort, run_ort, run_qopt_run  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

import build_models  # noqa: E402
import modelkit  # noqa: E402


def relative_error(actual, expected):
    """max |a - e| / (|e| + mean |e|): relative, with the tensor's mean magnitude keeping values
    near zero (where float summation order dominates) from counting as large errors."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    if e.size == 0:
        return 0.0
    scale = np.abs(e) + np.mean(np.abs(e)) + 1e-30
    return float(np.max(np.abs(a - e) / scale))


def compare(name, actual, expected, rtol):
    """Returns a failure message or None."""
    if actual.shape != expected.shape:
        return f"{name}: shape {actual.shape} but ONNX Runtime gives {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"{name}: dtype {actual.dtype} but ONNX Runtime gives {expected.dtype}"
    if np.issubdtype(expected.dtype, np.floating):
        if np.any(np.isnan(actual) != np.isnan(expected)):
            return f"{name}: NaN positions differ"
        err = relative_error(np.nan_to_num(actual), np.nan_to_num(expected))
        print(f"  {name}: {expected.dtype}{list(expected.shape)} max relative error {err:.3g}")
        if err > rtol:
            i = np.unravel_index(np.argmax(np.abs(actual - expected)), expected.shape)
            return (f"{name}: relative error {err:.3g} > {rtol} (at {i}: qopt {actual[i]}, "
                    f"ONNX Runtime {expected[i]})")
        return None
    mismatches = np.count_nonzero(actual != expected)
    print(f"  {name}: {expected.dtype}{list(expected.shape)} {mismatches} mismatching elements")
    if mismatches:
        i = tuple(np.argwhere(actual != expected)[0])
        return (f"{name}: {mismatches} of {expected.size} integer elements differ (first at {i}: "
                f"qopt {actual[i]}, ONNX Runtime {expected[i]})")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, choices=sorted(build_models.MODEL_SETS["tests"]))
    parser.add_argument("--work", required=True)
    parser.add_argument("--qopt-run", required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--threads", default="1,2", help="qopt thread counts to run")
    args = parser.parse_args()

    require_ort()

    work = os.path.join(args.work, args.model)
    model, inputs, *reference = build_models.MODEL_SETS["tests"][args.model]()
    modelkit.save(model, inputs, work, args.model)
    model_path = os.path.join(work, args.model + ".onnx")
    input_dir = os.path.join(work, args.model + ".inputs")
    ort_model_path = model_path
    if reference:
        modelkit.save(reference[0], inputs, work, args.model + "_reference")
        ort_model_path = os.path.join(work, args.model + "_reference.onnx")

    # ONNX Runtime's graph optimizations are off so that each op is evaluated as ONNX defines it
    # (with them, QDQ groups become integer QLinear ops whose rounding differs by design).
    expected_outputs = run_ort(args.node, ort_model_path, input_dir, os.path.join(work, "ort"))
    names = list(expected_outputs)

    failures = []
    for threads in args.threads.split(","):
        qopt_dir = os.path.join(work, f"qopt_threads{threads}")
        actual_outputs = run_qopt_run(args.qopt_run, model_path, input_dir, qopt_dir, names,
                                      ["--threads", threads])
        print(f"{args.model}, qopt with {threads} thread(s) against ONNX Runtime:")
        for name in names:
            failure = compare(name, actual_outputs[name], expected_outputs[name], args.rtol)
            if failure:
                failures.append(f"threads={threads}: {failure}")
    return finish(failures, f"{args.model}: {len(names)} outputs match ONNX Runtime")


if __name__ == "__main__":
    sys.exit(main())
