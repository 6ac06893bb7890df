"""Helpers shared by the strip-qdq and to-fp16 tests and the ONNX Runtime differential tests
(tests/ort): running qopt, qopt-run and ONNX Runtime (tests/ort/run_ort.js), comparing their
outputs and reporting the result."""

import gzip
import json
import os
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def gunzip(src, dst):
    with gzip.open(src, "rb") as f_in, open(dst, "wb") as f_out:
        shutil.copyfileobj(f_in, f_out)
    return dst


def stem(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def run_ort(node, model, input_dir, out_dir):
    """Graph outputs of `model` under ONNX Runtime (CPU, graph optimizations off), by name."""
    run([node, os.path.join(ROOT, "tests", "ort", "run_ort.js"), "--model", model, "--inputs",
         input_dir, "--outputs", out_dir, "--optimization", "disabled"])
    with open(os.path.join(out_dir, "outputs.json")) as f:
        names = json.load(f)
    return {n: np.load(os.path.join(out_dir, stem(n) + ".npy")) for n in names}


def require_ort():
    """Exits when onnxruntime-node is missing, so that a missing runtime fails the test."""
    if not os.path.exists(os.path.join(ROOT, "node_modules", "onnxruntime-node", "package.json")):
        sys.exit(f"FAILED: ONNX Runtime (onnxruntime-node) is not installed under {ROOT}/"
                 "node_modules; run `npm ci --ignore-scripts` in the repository root")


def finish(failures, passed):
    """The exit status of a test: prints its failures, or the line `passed` when there are none."""
    if failures:
        print("\n".join(["FAILED:"] + failures))
        return 1
    print(passed)
    return 0


def run_qopt_run(qopt_run, model, input_dir, out_dir, names, extra=()):
    """Graph outputs of `model` under qopt's reference interpreter (`extra`: more options)."""
    run([qopt_run, model, "--inputs", input_dir, "--outputs", out_dir, *extra])
    return {n: np.load(os.path.join(out_dir, stem(n) + ".npy")) for n in names}


def max_relative(actual, expected):
    """max |a - e| / max |e|."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    return float(np.max(np.abs(a - e)) / (np.max(np.abs(e)) + 1e-30))


def cosine(actual, expected):
    a = actual.astype(np.float64).ravel()
    e = expected.astype(np.float64).ravel()
    return float(np.dot(a, e) / (np.linalg.norm(a) * np.linalg.norm(e) + 1e-30))


def sqnr_db(actual, expected):
    """10 log10(|e|^2 / |a - e|^2), as verify computes it."""
    e = expected.astype(np.float64)
    noise = np.sum((actual.astype(np.float64) - e) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(e**2) / noise))
