#!/usr/bin/env python3
"""verify{layers=all} at the end of the shipped pipeline (pipelines/trt-int8.qp, its last pass
given layers=all) on the corpus's trained models, on 8 calibration samples: it must exit 0 and
flag the weakest layers; the same with an explicit per-layer budget (layer-sqnr=45 dB, above
what an INT8 layer reaches) must exit 1 naming a failing layer. (Inside the pipeline verify
undoes equalize's channel scaling; a reference model from a file could not.) One row per model.

  verify_layers_test.py --qopt Q --work DIR [--only a,b]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import corpus_test  # noqa: E402
import fetch_corpus  # noqa: E402

MODELS = ["ppocr-v4-det", "ppocr-v4-rec", "ppocr-mobile-cls", "oww-embedding", "oww-hello-deepa"]
SAMPLES = 8


def pipeline(verify_options):
    """trt-int8.qp as a -p string, its closing verify given `verify_options`."""
    with open(os.path.join(ROOT, "pipelines", "trt-int8.qp")) as f:
        passes = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    if passes[-1] != "verify":
        raise SystemExit("FAILED: trt-int8.qp no longer ends with verify; update this test")
    return ",".join(passes[:-1] + [f"verify{{{verify_options}}}"])


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qopt", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or MODELS
    failures = []
    print("| model | trt-int8 exit | layers compared | weakest layer | with layer-sqnr=45 |")
    print("|---|---|---|---|---|")
    try:
        models = list(corpus_test.models_with_samples(names, args.work, SAMPLES))
    except fetch_corpus.FetchError as e:
        print(f"FAILED: {e}")
        return 1
    for name, fp32, calib, work in models:
        out = os.path.join(work, "int8.onnx")
        common = ["--calib-data", calib, fp32, out]
        rc, err = run([args.qopt, "-p", pipeline("layers=all"), *common])
        compared = re.search(r"verify: (\d+) layers compared", err)
        weakest = re.search(r"weakest layers \(flagged\): (.*)", err)
        if rc != 0 or compared is None or weakest is None:
            failures.append(f"{name}: trt-int8.qp with verify{{layers=all}} exited {rc} or flagged no "
                            f"layer: {err.strip().splitlines()[-1:]}")
        rc_budget, err_budget = run([args.qopt, "-p", pipeline("layers=all layer-sqnr=45"), *common])
        failed_layer = re.search(r"first divergence: (node '[^']*' \([A-Za-z]+\))", err_budget)
        if rc_budget != 1 or failed_layer is None:
            failures.append(f"{name}: verify{{layers=all layer-sqnr=45}} exited {rc_budget}, "
                            f"expected 1 naming a layer")
        first = weakest.group(1).split(", ")[0] if weakest else "-"
        print(f"| {name} | {rc} | {compared.group(1) if compared else '-'} | {first} ... | "
              f"exit {rc_budget}: {failed_layer.group(1) if failed_layer else '-'} |")
        sys.stdout.flush()
    for f in failures:
        print(f"FAILED: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
