#!/usr/bin/env python3
"""What verify{layers=all} costs over running both models once per sample, in one run.

  run_verify_bench.py --build BUILD_DIR [--work DIR] [--rounds N] [--samples N]
                      [--corpus NAME[:SHAPE],...]

For each trained model of the real-model corpus (tests/corpus, fetched and checked by
fetch_corpus.py; inputs drawn as bench/interp/run_bench.py draws them, 8 calibration samples),
runs `qopt -p fold-bn,insert-qdq,verify{...}` twice per round with --time-passes and takes
verify's own time:

  outputs  verify{layers=outputs localize=false}: the float model and the INT8 model run once
           per sample and only the graph outputs are compared, the least any check can do;
  all      verify{layers=all}: every layer's output both models compute (a Conv fused with its
           bias, BatchNormalization, activation and the like is one layer) is compared (error
           sums, cosine, SQNR, KL divergence and histogram overlap per layer) as it is produced.

Prints a Markdown table of the best times of --rounds rounds and all / outputs (the goal: at
most 2.5). Thresholds are off (sqnr=-1, cosine=0), so a model that quantizes badly costs the
same as one that quantizes well."""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "interp"))

import run_bench  # noqa: E402

GOAL = 2.5
DEFAULT_CORPUS = "ppocr-v4-det:1x3x640x640,ppocr-v4-rec,ppocr-mobile-cls"


def verify_seconds(qopt, model, calib, layers, samples, out):
    options = f"layers={layers} localize=false sqnr=-1 cosine=0 samples={samples} data=calib"
    cmd = [qopt, "-q", "--time-passes", "-p", f"fold-bn,insert-qdq,verify{{{options}}}",
           "--calib-data", calib, model, out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr}")
    match = re.search(r"^\s*([0-9.]+)\s+[0-9.]+%\s+1\s+verify$", proc.stderr, re.M)
    if not match:
        sys.exit(f"no verify time in qopt's --time-passes output:\n{proc.stderr}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--work", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--corpus", default=DEFAULT_CORPUS,
                        help="corpus models, NAME or NAME:1x3x640x640, comma-separated")
    args = parser.parse_args()
    qopt = os.path.join(args.build, "bin", "qopt")
    work = args.work or tempfile.mkdtemp(prefix="qopt-verify-bench-")
    rows = [r for r in run_bench.corpus_models(args.corpus, os.path.join(work, "corpus"), args.build)
            if not r[3]]
    print(f"verify{{layers=all}} against verify{{layers=outputs}} (both models once per sample), "
          f"{args.samples} samples, best of {args.rounds} rounds\n")
    print("| model | both models once per sample (s) | verify{layers=all} (s) | ratio | goal |")
    print("|---|---|---|---|---|")
    failed = False
    for tag, path, sample0, _ in rows:
        calib = os.path.join(os.path.dirname(sample0), "calib")
        out = os.path.join(work, "verified.onnx")
        times = {"outputs": [], "all": []}
        for _ in range(args.rounds):
            for layers in ("outputs", "all"):
                times[layers].append(verify_seconds(qopt, path, calib, layers, args.samples, out))
        base, full = min(times["outputs"]), min(times["all"])
        ratio = full / base
        ok = ratio <= GOAL
        failed |= not ok
        print(f"| {tag} | {base:.3f} | {full:.3f} | {ratio:.2f}x | {'PASS' if ok else 'FAIL'} "
              f"(<= {GOAL}x) |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
