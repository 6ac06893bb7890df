#!/usr/bin/env python3
"""to-fp16 on a ResNet-18-like, a MobileNetV2-like and a transformer encoder block: the float16
model runs in ONNX Runtime and its outputs stay within 1e-2 relative (max |a - b| / max |b|) of
the float32 model's; its interface stays float32 and it holds float16 initializers and tensors. qopt's
interpreter runs the float16 model within the same bound, and the bfloat16 conversion within
3e-2 (bfloat16 keeps 8 significant bits to float16's 11; ONNX Runtime's CPU provider has no
bfloat16 MatMul or Conv, so only the interpreter runs it).

  to_fp16_test.py --model NAME --work DIR --qopt PATH --qopt-run PATH [--node PATH]

Prints the float16 counts (initializers, tensors after ONNX shape inference, Casts). Exits 1 on
any failure."""

import argparse
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "support"))
from fp16_common import ROOT, finish, max_relative, run, run_ort, run_qopt_run

sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

import mobilenetv2  # noqa: E402
import modelkit  # noqa: E402
import resnet  # noqa: E402
import transformer  # noqa: E402

MODELS = {
    "resnet18": lambda: resnet.build(depth=18, image=32, base_width=16, classes=10),
    "mobilenetv2": lambda: mobilenetv2.build(image=32, width=0.5, classes=10),
    "transformer": lambda: transformer.build(batch=2, seq=8, dim=32, heads=4),
}
FLOAT, FLOAT16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16


def counts(model):
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    tensors = list(g.value_info) + list(g.input) + list(g.output)
    return {
        "float16 initializers": sum(t.data_type == FLOAT16 for t in g.initializer),
        "float32 initializers": sum(t.data_type == FLOAT for t in g.initializer),
        "float16 tensors": sum(v.type.tensor_type.elem_type == FLOAT16 for v in tensors),
        "float32 tensors": sum(v.type.tensor_type.elem_type == FLOAT for v in tensors),
        "Casts": sum(n.op_type == "Cast" for n in g.node),
        "nodes": len(g.node),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument("--work", required=True)
    parser.add_argument("--qopt", required=True)
    parser.add_argument("--qopt-run", required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--rtol", type=float, default=1e-2)
    parser.add_argument("--bf16-rtol", type=float, default=3e-2)
    args = parser.parse_args()

    work = os.path.join(args.work, args.model)
    model, inputs = MODELS[args.model]()
    modelkit.save(model, inputs, work, args.model)
    fp32_path = os.path.join(work, args.model + ".onnx")
    fp16_path = os.path.join(work, args.model + ".fp16.onnx")
    input_dir = os.path.join(work, args.model + ".inputs")
    log = run([args.qopt, "-v", "-p", "to-fp16", fp32_path, fp16_path])

    failures = []
    fp16 = onnx.load(fp16_path)
    onnx.checker.check_model(fp16)
    c = counts(fp16)
    print(f"{args.model}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    if c["float16 initializers"] == 0 or c["float16 tensors"] == 0:
        failures.append("no float16 initializers or tensors")
    for v in list(fp16.graph.input) + list(fp16.graph.output):
        if v.type.tensor_type.elem_type != FLOAT:
            failures.append(f"interface tensor '{v.name}' is not float32")
    kept = [line for line in log.splitlines() if "kept in float32" in line]
    print(f"{len(kept)} node(s) kept in float32" + (": " + kept[0] if kept else ""))

    bf16_path = os.path.join(work, args.model + ".bf16.onnx")
    run([args.qopt, "-p", "to-fp16{bfloat16=true}", fp32_path, bf16_path])

    ref = run_ort(args.node, fp32_path, input_dir, os.path.join(work, "ort_fp32"))
    runs = [
        ("fp16", "ONNX Runtime", run_ort(args.node, fp16_path, input_dir,
                                         os.path.join(work, "ort_fp16")), args.rtol),
        ("fp16", "interpreter", run_qopt_run(args.qopt_run, fp16_path, input_dir,
                                             os.path.join(work, "interp_fp16"), list(ref)),
         args.rtol),
        ("bf16", "interpreter", run_qopt_run(args.qopt_run, bf16_path, input_dir,
                                             os.path.join(work, "interp_bf16"), list(ref)),
         args.bf16_rtol),
    ]
    for kind, engine, outputs, rtol in runs:
        for name, expected in ref.items():
            actual = outputs[name]
            if actual.dtype != expected.dtype or actual.shape != expected.shape:
                failures.append(f"{kind} {engine} {name}: {actual.dtype}{actual.shape} vs "
                                f"{expected.dtype}{expected.shape}")
                continue
            err = max_relative(actual, expected)
            print(f"  {name}: max|{kind} - fp32| / max|fp32| = {err:.3g} ({engine})")
            if not np.isfinite(err) or err > rtol:
                failures.append(f"{kind} {engine} {name}: relative error {err:.3g} > {rtol}")
    return finish(failures, f"{args.model}: PASSED")


if __name__ == "__main__":
    sys.exit(main())
