#!/usr/bin/env python3
"""Writes the models that prove fold-bn exact, with their inputs.

  fold_bn_models.py --out DIR [NAME ...]

For each model NAME this writes DIR/NAME.onnx and DIR/NAME.inputs/<input>.npy (seeded, so the
same command always writes the same bytes). Every BatchNormalization has statistics far from
identity: gammas of both signs, shifted means, variances from 0.2 to 3, and epsilons of 1e-5 and
1e-3, so that a fold that drops or misapplies any of them is visibly wrong. Uses only Debian's
python3-onnx and python3-numpy.
"""

import argparse
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import modelkit  # noqa: E402


class Builder(modelkit.GraphBuilder):
    """modelkit's builder with signed BatchNorm scales and the ops fold-bn folds into."""

    def batchnorm(self, x, channels, epsilon=1e-5):
        rng = self.rng
        sign = np.where(rng.random(channels) < 0.3, -1.0, 1.0)
        gamma = self.const("gamma", (sign * rng.uniform(0.3, 2.0, channels)).astype(np.float32))
        beta = self.const("beta", rng.normal(0, 0.5, channels).astype(np.float32))
        mean = self.const("mean", rng.normal(0, 0.5, channels).astype(np.float32))
        var = self.const("var", rng.uniform(0.2, 3.0, channels).astype(np.float32))
        return self.node("BatchNormalization", [x, gamma, beta, mean, var], epsilon=epsilon)

    def conv_nd(self, x, cin, cout, kernel, rank, stride=1, groups=1, bias=False):
        w = self.const("w", self.he_weights((cout, cin // groups) + (kernel,) * rank,
                                            cin // groups * kernel**rank))
        inputs = [x, w]
        if bias:
            inputs.append(self.const("b", self.rng.normal(0, 0.5, cout).astype(np.float32)))
        return self.node("Conv", inputs, kernel_shape=[kernel] * rank, strides=[stride] * rank,
                         pads=[kernel // 2] * (2 * rank), group=groups)

    def conv_transpose(self, x, cin, cout, kernel, stride, groups=1, bias=False):
        w = self.const("wt", self.he_weights((cin, cout // groups, kernel, kernel),
                                             cin // groups * kernel * kernel))
        inputs = [x, w]
        if bias:
            inputs.append(self.const("bt", self.rng.normal(0, 0.5, cout).astype(np.float32)))
        return self.node("ConvTranspose", inputs, kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[1, 1, 1, 1], output_padding=[1, 1],
                         group=groups)

    def quantized_weight(self, w_name, per_channel, axis=0):
        """float weight -> QuantizeLinear -> DequantizeLinear, symmetric int8, as QAT exports."""
        w = next(t for t in self.initializers if t.name == w_name)
        values = np.frombuffer(w.raw_data, np.float32).reshape(w.dims) if w.raw_data else None
        reduce_axes = tuple(i for i in range(len(w.dims)) if i != axis)
        amax = np.abs(values).max(axis=reduce_axes) if per_channel else np.abs(values).max()
        scale = self.const("scale", (amax / 127).astype(np.float32))
        zero = self.const("zero", np.zeros(np.shape(amax), np.int8))
        q = self.node("QuantizeLinear", [w_name, scale, zero], axis=axis)
        return self.node("DequantizeLinear", [q, scale, zero], axis=axis)

    def integer_weight(self, shape, fan_in, per_channel):
        """int8 weight initializer -> DequantizeLinear (no QuantizeLinear)."""
        w = self.he_weights(shape, fan_in)
        amax = np.abs(w).reshape(shape[0], -1).max(axis=1) if per_channel else np.abs(w).max()
        scale = (amax / 127).astype(np.float32)
        broadcast = scale.reshape((-1,) + (1,) * (len(shape) - 1)) if per_channel else scale
        q = np.clip(np.rint(w / broadcast), -127, 127).astype(np.int8)
        return self.node("DequantizeLinear", [self.const("wq", q), self.const("scale", scale),
                                              self.const("zero", np.zeros(np.shape(scale), np.int8))],
                         axis=0)


def _image_input(batch, channels, image):
    return modelkit.float_input("input", [batch, channels, image, image])


def _finish(b, name, inputs, data, opset=17):
    b.nodes[-1].output[0] = "output"
    model = b.model(name, inputs, [modelkit.output("output")], opset=opset)
    return model, data


def _images(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def resnet18_like(seed=1):
    """ResNet-18 topology (basic blocks, 2-2-2-2) at width 16 on 32x32 images."""
    b = Builder(seed)
    x = b.relu(b.batchnorm(b.conv("input", 3, 16, 7, 2), 16))
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 16
    for stage in range(4):
        width = 16 * 2**stage
        for i in range(2):
            stride = 2 if stage > 0 and i == 0 else 1
            y = b.relu(b.batchnorm(b.conv(x, channels, width, 3, stride), width))
            y = b.batchnorm(b.conv(y, width, width, 3, 1), width, epsilon=1e-3)
            skip = x
            if stride != 1 or channels != width:
                skip = b.batchnorm(b.conv(x, channels, width, 1, stride), width)
            x = b.relu(b.node("Add", [y, skip]))
            channels = width
    b.classifier(x, channels, 10)
    return _finish(b, "resnet18_like", [_image_input(1, 3, 32)], {"input": _images(seed, (1, 3, 32, 32))})


def mobilenetv2_like(seed=2):
    """MobileNetV2 inverted residuals (depthwise convolutions, ReLU6) at width 0.5, 32x32."""
    b = Builder(seed)

    def conv_bn(x, cin, cout, kernel, stride=1, groups=1, act=True):
        y = b.batchnorm(b.conv(x, cin, cout, kernel, stride, groups), cout)
        return b.relu6(y) if act else y

    config = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 3, 2), (6, 32, 2, 2), (6, 48, 1, 1)]
    channels = 16
    x = conv_bn("input", 3, channels, 3, 2)
    for t, cout, n, s in config:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = channels * t
            y = x if t == 1 else conv_bn(x, channels, hidden, 1)
            y = conv_bn(y, hidden, hidden, 3, stride, groups=hidden)
            y = conv_bn(y, hidden, cout, 1, act=False)
            x = b.node("Add", [x, y]) if stride == 1 and channels == cout else y
            channels = cout
    x = conv_bn(x, channels, 160, 1)
    b.classifier(x, 160, 10)
    return _finish(b, "mobilenetv2_like", [_image_input(1, 3, 32)],
                   {"input": _images(seed, (1, 3, 32, 32))})


def conv_variants(seed=3):
    """Conv 1-D, 2-D (grouped, with bias) and 3-D, each followed by BatchNorm."""
    b = Builder(seed)
    y1 = b.batchnorm(b.conv_nd("x1d", 4, 6, 3, rank=1, bias=True), 6)
    y2 = b.batchnorm(b.conv_nd("x2d", 8, 12, 3, rank=2, groups=4, bias=True), 12, epsilon=1e-3)
    y3 = b.batchnorm(b.conv_nd("x3d", 3, 5, 3, rank=3, stride=2), 5)
    outputs = [b.relu(y1), b.relu(y2), y3]
    inputs = [modelkit.float_input("x1d", [1, 4, 16]), modelkit.float_input("x2d", [1, 8, 10, 10]),
              modelkit.float_input("x3d", [1, 3, 6, 6, 6])]
    for i, name in enumerate(outputs):
        b.nodes.append(helper.make_node("Identity", [name], [f"output{i}"]))
    model = b.model("conv_variants", inputs, [modelkit.output(f"output{i}") for i in range(3)])
    data = {"x1d": _images(seed, (1, 4, 16)), "x2d": _images(seed + 1, (1, 8, 10, 10)),
            "x3d": _images(seed + 2, (1, 3, 6, 6, 6))}
    return model, data


def conv_transpose(seed=4):
    """ConvTranspose (groups 1 and 2, with and without bias), each followed by BatchNorm."""
    b = Builder(seed)
    x = b.relu(b.batchnorm(b.conv("input", 3, 8, 3, 1), 8))
    x = b.batchnorm(b.conv_transpose(x, 8, 6, 3, 2), 6)
    x = b.relu(x)
    x = b.batchnorm(b.conv_transpose(x, 6, 10, 3, 2, groups=2, bias=True), 10, epsilon=1e-3)
    return _finish(b, "conv_transpose", [_image_input(1, 3, 8)], {"input": _images(seed, (1, 3, 8, 8))})


def gemm_matmul(seed=5):
    """Gemm (transB 0 and 1, alpha, beta, C of shape [N], [1, N], [M, N], [M, 1] or none) and
    MatMul with a constant weight, each followed by BatchNorm over the features."""
    b = Builder(seed)
    batch, features = 3, 12
    x = "input"
    cases = [(0, 1.0, 1.0, None), (1, 0.5, 2.0, "n"), (0, 1.5, 0.25, "1n"), (1, 1.0, 1.0, "mn"),
             (0, 2.0, 0.5, "m1")]
    width = features
    for trans_b, alpha, beta, c_shape in cases:
        out = 10 if width == features else features
        w = b.he_weights((out, width) if trans_b else (width, out), width)
        inputs = [x, b.const("gw", w)]
        shapes = {"n": (out,), "1n": (1, out), "mn": (batch, out), "m1": (batch, 1)}
        if c_shape:
            inputs.append(b.const("gc", b.rng.normal(0, 0.5, shapes[c_shape]).astype(np.float32)))
        x = b.node("Gemm", inputs, transB=trans_b, alpha=alpha, beta=beta)
        x = b.relu(b.batchnorm(x, out))
        width = out
    w = b.he_weights((width, 7), width)
    x = b.batchnorm(b.node("MatMul", [x, b.const("mw", w)]), 7)
    return _finish(b, "gemm_matmul", [modelkit.float_input("input", [batch, features])],
                   {"input": _images(seed, (batch, features))})


def quantized_weights(seed=6):
    """Convolutions whose weights are quantized as QAT exports them (float -> Q -> DQ, per
    channel and per tensor) and as integers -> DQ, followed by BatchNorm with negative scales.
    Activations stay float so that the fold's exactness is measured on the weights alone."""
    b = Builder(seed)
    x = "input"
    channels = 3
    for i, (form, per_channel) in enumerate([("qdq", True), ("qdq", False), ("dq", True),
                                             ("dq", False)]):
        cout = 8 + 4 * i
        shape = (cout, channels, 3, 3)
        if form == "qdq":
            w_name = b.const("w", b.he_weights(shape, channels * 9))
            w = b.quantized_weight(w_name, per_channel)
        else:
            w = b.integer_weight(shape, channels * 9, per_channel)
        x = b.node("Conv", [x, w], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        x = b.relu(b.batchnorm(x, cout))
        channels = cout
    return _finish(b, "quantized_weights", [_image_input(1, 3, 12)],
                   {"input": _images(seed, (1, 3, 12, 12))}, opset=13)


MODELS = {
    "resnet18_like": resnet18_like,
    "mobilenetv2_like": mobilenetv2_like,
    "conv_variants": conv_variants,
    "conv_transpose": conv_transpose,
    "gemm_matmul": gemm_matmul,
    "quantized_weights": quantized_weights,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("names", nargs="*", help="models to write (default: all)")
    args = parser.parse_args()
    for name in args.names or MODELS:
        if name not in MODELS:
            parser.error(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        model, inputs = MODELS[name]()
        modelkit.save(model, inputs, args.out, name)


if __name__ == "__main__":
    main()
