#!/usr/bin/env python3
"""Shows that a change of structure changed no output: runs every qopt method of bench/quality
(run_quality.py's rows: the calibrators, trt-int8.qp, equalize, bias-correct, smooth, FP8,
mixed-precision, ...) on the trained models of bench/quality with two qopt builds, on the same
calibration split, and compares the written models byte for byte.

  compare_builds.py --before OLD/bin/qopt [--after NEW/bin/qopt] [--keep-before]
                    [--models a,b] [--work DIR] [--only-methods id,...]

Without --after it only writes the first build's models (for a later run with --keep-before,
which reuses them instead of running the first build again).

Prints one line per model and method (`same`, or `DIFFERENT` with both SHA-256) and exits 1 when
any pair differs or a run fails with one build and not the other.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "quality"))
sys.path.insert(0, os.path.join(ROOT, "tests", "corpus"))

import fetch_corpus  # noqa: E402
import make_data  # noqa: E402
import run_quality as rq  # noqa: E402

TRAINED = ("ppocr-v4-det", "ppocr-v4-rec", "ppocr-mobile-cls")


def run(qopt, method, pipeline, calib, src, dst):
    cmd = [qopt, "-q", "--calib-data", calib]
    cmd += ["--pipeline-file", method.pipeline_file] if pipeline is None else ["-p", pipeline]
    cmd += [src, dst]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stderr.strip().splitlines()[-1:], time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after")
    parser.add_argument("--keep-before", action="store_true")
    parser.add_argument("--models", default=",".join(TRAINED))
    parser.add_argument("--only-methods", default="")
    parser.add_argument("--work", default=os.path.join(rq.default_work(), "identity"))
    parser.add_argument("--data", default=None)
    args = parser.parse_args()

    data = args.data or make_data.default_out()
    if not os.path.exists(os.path.join(data, "manifest.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "quality", "make_data.py"),
                        "--out", data], check=True)
    env = dict(os.environ)
    caps = rq.qopt_capabilities(args.after or args.before, env)
    methods = rq.qopt_methods(caps, os.path.join(ROOT, "pipelines"))
    only = set(filter(None, args.only_methods.split(",")))
    paths = rq.model_paths(args.models.split(","))
    differ = 0
    for name in args.models.split(","):
        calib = os.path.join(args.work, name, "calib")
        rq.write_samples(name, "calib", data, calib)
        for method in methods:
            if method.missing or (method.only and name not in method.only):
                continue
            if only and method.id not in only:
                continue
            pipeline = (method.pipelines or [None])[0]
            outs = []
            for label, qopt in (("before", args.before), ("after", args.after)):
                dst = os.path.join(args.work, name, f"{method.id}.{label}.onnx")
                status = dst + ".exit"
                if label == "before" and args.keep_before and os.path.exists(status):
                    code, seconds = open(status).read().split()
                    code, last, seconds = int(code), [], float(seconds)
                elif qopt is None:
                    outs.append(outs[0])
                    continue
                else:
                    if os.path.exists(dst):
                        os.remove(dst)
                    code, last, seconds = run(qopt, method, pipeline, calib, paths[name], dst)
                    with open(status, "w") as f:
                        f.write(f"{code} {seconds:.1f}\n")
                digest = fetch_corpus.sha256_of(dst) if os.path.exists(dst) else None
                outs.append((code, digest, last, seconds))
            (c0, h0, m0, s0), (c1, h1, m1, s1) = outs
            same = c0 == c1 and h0 == h1
            differ += 0 if same else 1
            verdict = "same" if same else f"DIFFERENT: exit {c0}/{c1} sha256 {h0}/{h1} {m0} {m1}"
            print(f"{name:18} {method.id:28} exit {c0}  {s0:6.1f} s / {s1:6.1f} s  {verdict}",
                  flush=True)
    print(f"compare_builds: {differ} of the pairs differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
