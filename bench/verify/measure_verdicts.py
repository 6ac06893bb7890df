#!/usr/bin/env python3
"""Where verify's default verdicts sit: good and deliberately broken pipelines on the corpus.

  measure_verdicts.py --build BUILD_DIR [--work DIR] [--samples N] [--only a,b] [--json F]

For each trained model of the real-model corpus (tests/corpus, fetched and checked by
fetch_corpus.py; inputs drawn as corpus_test.py draws them), runs good pipelines

  int8      fold-bn,insert-qdq
  trt-int8  pipelines/trt-int8.qp
  int8+fp16 fold-bn,insert-qdq,to-fp16
  fp16      to-fp16

and breaks the int8 model three ways, each as a bug in a quantization tool would:

  scale-x2  the scale of one activation DequantizeLinear doubled (at a third, a half and
            three quarters of the way through the graph: three rows)
  no-clamp  one Relu or Clip bypassed (the first one half way or later)
  channels  the first Conv's input channels reversed (RGB read as BGR; output channels when it
            has one input channel)

then checks every model with `verify{reference=FLOAT samples=N}` on the same samples and prints
per output the rule verify chose and the figures it judges: clear-decision agreement, map IoU
and relative error, and whether verify passed. The default bounds (OutputRule.h's
VerdictBudget) are chosen so that every good row passes and broken rows fail."""

import argparse
import json
import os
import subprocess
import sys

import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "corpus"))

import corpus_test  # noqa: E402

TRAINED = ["ppocr-v4-det", "ppocr-v4-rec", "ppocr-mobile-cls", "silero-vad", "oww-melspectrogram",
           "oww-embedding", "oww-hey-jarvis", "oww-hello-deepa"]

GOOD = {
    "int8": ["-p", "fold-bn,insert-qdq"],
    "trt-int8": ["--pipeline-file", os.path.join(ROOT, "pipelines", "trt-int8.qp")],
    "int8+fp16": ["-p", "fold-bn,insert-qdq,to-fp16"],
    "fp16": ["-p", "to-fp16"],
}


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stderr


def initializer(model, name):
    for t in model.graph.initializer:
        if t.name == name:
            return t
    return None


def replace_initializer(model, name, array, new_name):
    """A copy of the initializer under a new name, so a shared one stays as it was."""
    t = numpy_helper.from_array(array, new_name)
    model.graph.initializer.append(t)
    return new_name


def activation_dqs(model):
    """DequantizeLinear nodes of activations (their input is computed, not stored)."""
    inits = {t.name for t in model.graph.initializer}
    return [n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] not in inits]


def break_scale(model, fraction):
    dqs = activation_dqs(model)
    if not dqs:
        return None
    node = dqs[min(len(dqs) - 1, int(len(dqs) * fraction))]
    scale = numpy_helper.to_array(initializer(model, node.input[1]))
    node.input[1] = replace_initializer(model, node.input[1], (scale * 2).astype(scale.dtype),
                                        node.input[1] + "_doubled")
    return node.name or node.output[0]


def break_clamp(model):
    clamps = [n for n in model.graph.node if n.op_type in ("Relu", "Clip")]
    nodes = list(model.graph.node)
    late = [n for n in clamps if nodes.index(n) >= len(nodes) // 2]
    pick = (late or clamps)[:1]
    if not pick:
        return None
    node = pick[0]
    src, dst = node.input[0], node.output[0]
    if dst in {o.name for o in model.graph.output}:
        return None
    for n in model.graph.node:
        for i, name in enumerate(n.input):
            if name == dst:
                n.input[i] = src
    model.graph.node.remove(node)
    return dst


def break_channels(model):
    inits = {t.name: t for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        w = node.input[1]
        dq = producers.get(w)
        name = dq.input[0] if dq is not None and dq.op_type == "DequantizeLinear" else w
        if name not in inits:
            continue
        weight = numpy_helper.to_array(inits[name])
        if weight.shape[1] > 1:
            flipped = weight[:, ::-1].copy()
        else:
            return None  # reversing output channels needs the scales reversed too: not this row
        new = replace_initializer(model, name, flipped, name + "_flipped")
        if dq is not None and dq.op_type == "DequantizeLinear":
            dq.input[0] = new
        else:
            node.input[1] = new
        return node.name or node.output[0]
    return None


BREAKS = {
    "scale-x2@1/3": lambda m: break_scale(m, 1 / 3),
    "scale-x2@1/2": lambda m: break_scale(m, 1 / 2),
    "scale-x2@3/4": lambda m: break_scale(m, 3 / 4),
    "no-clamp": break_clamp,
    "channels": break_channels,
}


def verify_rows(report_path):
    with open(report_path) as f:
        report = json.load(f)
    v = report["results"]["verify"]
    rows = []
    for o in v["outputs"]:
        m = o["metrics"]
        name = o["name"] + (" (logits)" if "logits-of" in o else "")
        rows.append({"output": name, "rule": o.get("rule", "-"), "clear": m.get("clear-top1"),
                     "clear-rows": m.get("clear-rows"), "iou": m.get("map-iou"),
                     "rel-err": m.get("rel-err"), "passed": o["passed"]})
    return v["passed"], rows


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default="/tmp/qopt-verdicts")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    qopt = os.path.join(args.build, "bin", "qopt")
    only = [s for s in args.only.split(",") if s] or TRAINED
    table = []
    print("| model | pipeline | output | rule | clear decisions | map IoU | rel-err | verify |")
    print("|---|---|---|---|---|---|---|---|")
    for name, fp32, calib, work in corpus_test.models_with_samples(only, args.work, args.samples):
        common = ["--calib-data", calib]
        verify = f"verify{{reference={fp32} samples={args.samples}}}"
        cases = []
        for label, flags in GOOD.items():
            out = os.path.join(work, f"{label}.onnx")
            rc, err = run([qopt, *flags, *common, fp32, out])
            if rc not in (0, 1):
                print(f"| {name} | {label} | qopt exited {rc}: {err.strip().splitlines()[-1:]} |||||")
                continue
            cases.append((label, out))
        int8 = os.path.join(work, "int8.onnx")
        for label, breaker in BREAKS.items():
            model = onnx.load(int8)
            where = breaker(model)
            if where is None:
                continue
            out = os.path.join(work, f"{label.replace('/', '_')}.onnx")
            onnx.save(model, out)
            cases.append((f"{label} ({where})", out))
        for label, path in cases:
            report = os.path.join(work, "report.json")
            rc, err = run([qopt, "-p", verify, *common, "--report", report, path,
                           os.path.join(work, "checked.onnx")])
            if rc not in (0, 1):
                print(f"| {name} | {label} | verify exited {rc}: {err.strip().splitlines()[-1:]} |||||")
                continue
            passed, rows = verify_rows(report)
            for r in rows:
                clear = "-" if r["clear"] is None else f"{r['clear']:.3f} of {r['clear-rows']}"
                print(f"| {name} | {label} | {r['output']} | {r['rule']} | {clear} | {fmt(r['iou'])} | "
                      f"{fmt(r['rel-err'], 4)} | {'pass' if r['passed'] else 'FAIL'} |")
                table.append({"model": name, "pipeline": label, **r})
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
