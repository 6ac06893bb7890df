"""A Q/DQ model in which every op that commutes with quantization sits between two quantizations
with equal parameters, the way quantizers that quantize every tensor write them: MaxPool,
Transpose, Reshape, Concat, Pad (value 0), Resize (nearest), Slice, Gather (constant indices),
Split; with ReLU6 written as Clip(0, 6) and as Min(Relu(x), 6). propagate-scales must leave each of
those ops on the integers without changing any output (check_qdq_passes.py --mode exact).

  qdq_propagation.py --out DIR    writes DIR/qdq_propagation.onnx and DIR/samples/*.npy
"""

import argparse
import os

import numpy as np
from onnx import TensorProto

import modelkit

ACT_SCALE = 6.0 / 127  # int8, amax 6: the ReLU6 outputs and everything moved after them


class Builder(modelkit.GraphBuilder):
    def qdq(self, x, scale=ACT_SCALE):
        s = self.const("scale", np.array(scale, np.float32))
        z = self.const("zp", np.array(0, np.int8))
        return self.node("DequantizeLinear", [self.node("QuantizeLinear", [x, s, z]), s, z])

    def ints(self, values):
        return self.const("ints", np.array(values, np.int64))


def build(seed=0):
    b = Builder(seed)
    x = b.qdq("input", 4.0 / 127)
    y = b.qdq(b.relu6(b.conv(x, 8, 8, 3, bias=True)))
    y = b.qdq(b.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2]))
    relu = b.node("Relu", [b.conv(y, 8, 8, 3, bias=True)])
    y = b.qdq(b.node("Min", [relu, b.const("six", np.array(6.0, np.float32))]))
    y = b.qdq(b.node("Transpose", [y], perm=[0, 1, 3, 2]))
    y = b.qdq(b.node("Reshape", [y, b.ints([1, 8, 16])]))
    y = b.qdq(b.node("Reshape", [y, b.ints([1, 8, 4, 4])]))
    y = b.qdq(b.node("Concat", [y, y], axis=1))
    y = b.qdq(b.node("Pad", [y, b.ints([0, 0, 1, 1, 0, 0, 1, 1])]))
    scales = b.const("scales", np.array([1, 1, 2, 2], np.float32))
    y = b.qdq(b.node("Resize", [y, "", scales], mode="nearest"))
    y = b.qdq(b.node("Slice", [y, b.ints([1]), b.ints([9]), b.ints([2])]))
    y = b.qdq(b.node("Gather", [y, b.ints([0, 2, 4, 6, 8, 10, 12, 14])], axis=1))
    left, right = b.node("Split", [y, b.ints([4, 4])], outputs=2, axis=1)
    b.node("Add", [b.qdq(left), b.qdq(right)], outputs=["output"])
    return b.model("qdq_propagation", [modelkit.float_input("input", [1, 8, 8, 8])],
                   [modelkit.output("output", TensorProto.FLOAT, [1, 4, 8, 12])], opset=13)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--samples", type=int, default=4)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.out, "samples"), exist_ok=True)
    model = build()
    import onnx
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(args.out, "qdq_propagation.onnx"))
    rng = np.random.default_rng(1)
    for i in range(args.samples):
        np.save(os.path.join(args.out, "samples", f"sample_{i:03d}.npy"),
                rng.normal(0, 1.5, (1, 8, 8, 8)).astype(np.float32))
    print(os.path.join(args.out, "qdq_propagation.onnx"))


if __name__ == "__main__":
    main()
