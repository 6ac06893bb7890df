#!/usr/bin/env python3
"""Writes qopt's differential-test and benchmark models with their inputs.

  build_models.py --out DIR [--set tests|bench] [NAME ...]

For each model NAME this writes DIR/NAME.onnx and DIR/NAME.inputs/<input>.npy. The `tests` set
uses small spatial sizes so that the suite stays fast; the `bench` set uses full sizes (224x224).
A builder returns (model, inputs), or (model, inputs, reference) where ONNX Runtime cannot run
the model itself: the differential test runs the reference, which computes the same outputs, in
ONNX Runtime. Uses only Debian's python3-onnx and python3-numpy."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import decoder  # noqa: E402
import dynamic_quant  # noqa: E402
import mobilenetv2  # noqa: E402
import modelkit  # noqa: E402
import qdq  # noqa: E402
import qoperator  # noqa: E402
import recurrent  # noqa: E402
import resnet  # noqa: E402
import transformer  # noqa: E402

MODEL_SETS = {
    "tests": {
        "resnet18_small": lambda: resnet.build(depth=18, image=32, base_width=16, classes=10),
        "mobilenetv2_small": lambda: mobilenetv2.build(image=32, width=0.5, classes=10),
        "transformer_encoder": lambda: transformer.build(batch=2, seq=8, dim=32, heads=4),
        "qdq_convnet": lambda: qdq.build(),
        "qoperator_convnet": lambda: qoperator.build(),
        "dynamic_quant_mlp": lambda: dynamic_quant.build_mlp(),
        "dynamic_quant_conv": lambda: dynamic_quant.build_conv(),
        "decoder": lambda: decoder.build(),
        "lstm": lambda: recurrent.build("LSTM"),
        "gru": lambda: recurrent.build("GRU"),
        "rnn": lambda: recurrent.build("RNN"),
        "recurrent_opset7": lambda: recurrent.build_opset7(),
    },
    "bench": {
        "resnet18_like": lambda: resnet.build(depth=18, image=224),
        "mobilenetv2_like": lambda: mobilenetv2.build(image=224, width=0.5),
        "transformer_block": lambda: transformer.build(batch=1, seq=128, dim=256, heads=8),
        "resnet50": lambda: resnet.build(depth=50, image=224),
        "mobilenetv2": lambda: mobilenetv2.build(image=224, width=1.0),
    },
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--set", choices=sorted(MODEL_SETS), default="tests")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    models = MODEL_SETS[args.set]
    unknown = [n for n in args.names if n not in models]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: {sorted(models)}")
    for name in args.names or models:
        model, inputs, *_ = models[name]()
        modelkit.save(model, inputs, args.out, name)
        print(f"wrote {os.path.join(args.out, name)}.onnx")


if __name__ == "__main__":
    main()
