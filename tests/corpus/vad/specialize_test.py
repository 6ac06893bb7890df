#!/usr/bin/env python3
"""specialize on silero-vad, whose whole network sits in the two branches of an If on the sample
rate: binding sr=16000 and folding must

  1. leave no If in the main graph and drop 'sr' from the inputs;
  2. give the same float model: on ONNX Runtime, streamed over the held-out speech
     (vad_eval.js), every frame's probability within 1e-6 of the original's;
  3. give the same INT8 layers through pipelines/trt-int8.qp as the route through the If:
     `qopt inspect --json` on both results lists the same layers in INT8 (and in FP16).

  specialize_test.py --qopt Q --work DIR [--model M] [--data DIR] [--node N] [--pipeline P]
"""
import argparse
import json
import os
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_speech  # noqa: E402
import vad_task_test  # noqa: E402

SPECIALIZE = "specialize{inputs=sr:16000},fold-constants,dce"
MAX_FLOAT_DIFF = 1e-6


def qopt(binary, args):
    proc = subprocess.run([binary, *args], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"specialize-test: FAIL: qopt {' '.join(args)} exited "
                         f"{proc.returncode}: {proc.stderr.strip()[-600:]}")
    return proc


def quantized_layers(binary, model, calib):
    proc = qopt(binary, ["inspect", "--json", f"--calib-data={calib}", model])
    layers = json.loads(proc.stdout)["layers"]
    return {(layer["node"], layer["precision"]) for layer in layers
            if layer["precision"] in ("INT8", "FP8", "FP16")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qopt", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", help="silero-vad (default: the corpus cache's, fetched if absent)")
    ap.add_argument("--data", default=make_speech.default_out())
    ap.add_argument("--node", default="node")
    ap.add_argument("--pipeline", default=os.path.join(HERE, "..", "..", "..", "pipelines",
                                                       "trt-int8.qp"))
    args = ap.parse_args()
    model = args.model or make_speech.corpus_model()
    make_speech.ensure(args.data, model, args.node)
    calib = os.path.join(args.data, "calib")
    os.makedirs(args.work, exist_ok=True)
    failures = []

    special = os.path.join(args.work, "specialized.onnx")
    proc = qopt(args.qopt, ["-p", SPECIALIZE, model, special])
    if proc.returncode != 0:
        raise SystemExit(f"specialize-test: FAIL: {SPECIALIZE} exited {proc.returncode}")
    # The If of the original main graph (on sr) must be gone; the Ifs its branch held on the
    # input's length stay (their conditions depend on the audio).
    original_ifs = {n.name for n in onnx.load(model, load_external_data=False).graph.node
                    if n.op_type == "If"}
    graph = onnx.load(special, load_external_data=False).graph
    left = sorted(original_ifs & {n.name for n in graph.node if n.op_type == "If"})
    inputs = [i.name for i in graph.input]
    print(f"specialize-test: {SPECIALIZE}: inputs {inputs}, {len(graph.node)} main-graph nodes; "
          f"the main graph's If {sorted(original_ifs)} folded: {not left}")
    if left or "sr" in inputs:
        failures.append(f"'sr' is still an input or the If {left} is still there")

    metrics = vad_task_test.evaluate(args.node, special, model, args.data)
    print(f"specialize-test: float, specialized against the original: {metrics['frames']} "
          f"frames, max |dp| {metrics['max_abs_diff']}, agreement {metrics['agreement']}")
    if metrics["max_abs_diff"] > MAX_FLOAT_DIFF:
        failures.append(f"the specialized float model differs by {metrics['max_abs_diff']} "
                        f"(> {MAX_FLOAT_DIFF})")

    routes = {}
    for name, source in (("through the If", model), ("specialized", special)):
        out = os.path.join(args.work, f"int8-{'if' if source == model else 'specialized'}.onnx")
        qopt(args.qopt, [f"--pipeline-file={args.pipeline}", f"--calib-data={calib}", source, out])
        routes[name] = quantized_layers(args.qopt, out, calib)
        print(f"specialize-test: trt-int8 {name}: {len(routes[name])} layers quantized or in "
              f"FP16: {sorted(routes[name])}")
    a, b = routes["through the If"], routes["specialized"]
    if not a:
        failures.append("the route through the If quantized nothing")
    if a != b:
        failures.append(f"the two routes differ: only through the If {sorted(a - b)}, only "
                        f"specialized {sorted(b - a)}")
    for f in failures:
        print(f"specialize-test: FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
