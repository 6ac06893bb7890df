#!/usr/bin/env python3
"""Writes the small models of verify's verdict tests (ONNX text, weights from a seeded generator):

  classifier.onnxtxt  Conv -> Clip(0, 6) -> Conv -> Relu -> Flatten -> Gemm -> Softmax [1, 5]
  sequence.onnxtxt    MatMul -> Clip(0, 6) -> MatMul -> Add -> Softmax over the last axis [1, 6, 10]
  map.onnxtxt         Conv -> Clip(0, 6) -> Conv -> Sigmoid [1, 1, 8, 8]
  features.onnxtxt    Conv -> Clip(0, 6) -> Conv [1, 8, 8, 8] (decides nothing)

Each first layer is named `first`, its clamp `clamp`, its second layer `second`.

  make_models.py Inputs
"""
import os
import random
import sys

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'


def values(rng, count, scale):
    return ", ".join(f"{rng.gauss(0.0, scale):.4f}" for _ in range(count))


def tensor(rng, name, dims, scale):
    count = 1
    for d in dims:
        count *= d
    return f"float[{','.join(map(str, dims))}] {name} = {{{values(rng, count, scale)}}}"


def conv_layers(rng, head_out):
    return [tensor(rng, "w1", [8, 3, 3, 3], 0.6), tensor(rng, "w2", [head_out, 8, 3, 3], 0.25),
            tensor(rng, "b2", [head_out], 0.1)]


def model(name, inputs, outputs, initializers, body):
    inits = ",\n ".join(initializers + ["float lo = {0.0}", "float hi = {6.0}"])
    lines = "\n".join(f"  {line}" for line in body)
    return f"{HEADER}\n{name} ({inputs}) => ({outputs})\n<{inits}>\n{{\n{lines}\n}}\n"


def main():
    out = sys.argv[1]
    rng = random.Random(7)
    conv_front = ["first = Conv <pads = [1, 1, 1, 1]> (x, w1)", "clamp = Clip (first, lo, hi)"]
    files = {
        "classifier": model(
            "classifier", "float[1,3,8,8] x", "float[1,5] y",
            conv_layers(rng, 8) + [tensor(rng, "wf", [5, 512], 0.1), tensor(rng, "bf", [5], 0.1)],
            conv_front + ["second = Conv <pads = [1, 1, 1, 1]> (clamp, w2, b2)", "r = Relu (second)",
                          "f = Flatten (r)", "logits = Gemm <transB = 1> (f, wf, bf)",
                          "y = Softmax (logits)"]),
        "sequence": model(
            "sequence", "float[1,6,16] x", "float[1,6,10] y",
            [tensor(rng, "w1", [16, 32], 0.5), tensor(rng, "w2", [32, 10], 0.5),
             tensor(rng, "b2", [10], 0.1)],
            ["first = MatMul (x, w1)", "clamp = Clip (first, lo, hi)", "second = MatMul (clamp, w2)",
             "logits = Add (second, b2)", "y = Softmax <axis = -1> (logits)"]),
        "map": model(
            "map", "float[1,3,8,8] x", "float[1,1,8,8] y", conv_layers(rng, 1),
            conv_front + ["second = Conv <pads = [1, 1, 1, 1]> (clamp, w2, b2)", "y = Sigmoid (second)"]),
        "features": model(
            "features", "float[1,3,8,8] x", "float[1,8,8,8] y", conv_layers(rng, 8),
            conv_front + ["y = Conv <pads = [1, 1, 1, 1]> (clamp, w2, b2)"]),
    }
    for name, text in files.items():
        path = os.path.join(out, f"{name}.onnxtxt")
        with open(path, "w") as f:
            f.write(f"# Written by make_models.py (verify's verdict tests); the RUN lines are in the .test files.\n{text}")


if __name__ == "__main__":
    main()
