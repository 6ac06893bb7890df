#!/usr/bin/env python3
"""A MobileNetV2-like Q/DQ model laid out for TensorRT, with one deliberately harmful layer.

  mobilenetv2_qdq.py --out DIR [--harmful-shrink 64] [--eval-samples 8]

Writes DIR/mobilenetv2_qdq.onnx and DIR/eval/sample_<i>.npy. The float model is MobileNetV2
(width 0.35, 32x32 input, 10 classes) with BatchNorm folded into the convolutions. Every
convolution and the classifier read their input through an int8 QuantizeLinear/DequantizeLinear
pair (per tensor, zero point 0, scale = max |x| / 127 over calibration inputs, computed here with
a NumPy forward pass) and their weight through an int8 per-channel (axis 0) DequantizeLinear;
biases stay float. The activation scale of one convolution, named "harmful_conv", is divided by
--harmful-shrink, so its input saturates: the layer a mixed-precision search must return to
float. Uses only Debian's python3-onnx and python3-numpy."""

import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mobilenetv2  # noqa: E402
import modelkit  # noqa: E402

IMAGE, WIDTH, CLASSES = 32, 0.35, 10
HARMFUL_INDEX = 9  # which convolution (in graph order) gets the harmful scale


def conv2d(x, w, b, stride, pad, groups):
    n, c, h, wd = x.shape
    cout, cin_g, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - k) // stride + 1
    ow = (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, cout, oh, ow), np.float64)
    cout_g = cout // groups
    for g in range(groups):
        xs = xp[:, g * cin_g:(g + 1) * cin_g]
        cols = np.stack([xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                         for i in range(k) for j in range(k)], axis=2)  # n, cin_g, k*k, oh, ow
        wg = w[g * cout_g:(g + 1) * cout_g].reshape(cout_g, cin_g, k * k)
        out[:, g * cout_g:(g + 1) * cout_g] = np.einsum("nckhw,ock->nohw", cols, wg)
    return out + b.reshape(1, -1, 1, 1)


class Layers:
    """The float network as a list of operations, run in NumPy and written as ONNX."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.ops = []  # (kind, inputs, output, params)
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def conv_bn(self, x, cin, cout, k, stride=1, groups=1, act=True):
        w = (self.rng.standard_normal((cout, cin // groups, k, k)) *
             np.sqrt(2.0 / (cin // groups * k * k)))
        gamma = self.rng.uniform(0.5, 1.5, cout)
        beta = self.rng.normal(0, 0.2, cout)
        mean = self.rng.normal(0, 0.3, cout)
        var = self.rng.uniform(0.5, 2.0, cout)
        scale = gamma / np.sqrt(var + 1e-5)
        w = w * scale.reshape(-1, 1, 1, 1)
        b = beta - mean * scale
        y = self.name("conv")
        self.ops.append(("conv", [x], y, dict(w=w, b=b, stride=stride, pad=k // 2, groups=groups)))
        if act:
            r = self.name("relu6")
            self.ops.append(("relu6", [y], r, {}))
            return r
        return y

    def add(self, a, b):
        y = self.name("add")
        self.ops.append(("add", [a, b], y, {}))
        return y

    def classifier(self, x, channels):
        p = self.name("pool")
        self.ops.append(("gap", [x], p, {}))
        w = self.rng.standard_normal((CLASSES, channels)) * np.sqrt(2.0 / channels)
        b = self.rng.normal(0, 0.1, CLASSES)
        self.ops.append(("gemm", [p], "logits", dict(w=w, b=b)))
        return "logits"

    def run(self, x):
        """Runs the network; returns max |value| of every conv/gemm input."""
        values = {"input": x.astype(np.float64)}
        amax = {}
        for kind, inputs, out, p in self.ops:
            a = values[inputs[0]]
            if kind in ("conv", "gemm"):
                amax[out] = max(amax.get(out, 0.0), float(np.abs(a).max()))
            if kind == "conv":
                values[out] = conv2d(a, p["w"], p["b"], p["stride"], p["pad"], p["groups"])
            elif kind == "relu6":
                values[out] = np.clip(a, 0, 6)
            elif kind == "add":
                values[out] = a + values[inputs[1]]
            elif kind == "gap":
                values[out] = a.mean(axis=(2, 3))
            elif kind == "gemm":
                values[out] = a @ p["w"].T + p["b"]
        return amax


def build_network():
    net = Layers(seed=3)
    channels = mobilenetv2._round_channels(32, WIDTH)
    x = net.conv_bn("input", 3, channels, 3, 2)
    for t, c, n, s in mobilenetv2._CONFIG:
        cout = mobilenetv2._round_channels(c, WIDTH)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = channels * t
            y = x if t == 1 else net.conv_bn(x, channels, hidden, 1)
            y = net.conv_bn(y, hidden, hidden, 3, stride, groups=hidden)
            y = net.conv_bn(y, hidden, cout, 1, act=False)
            x = net.add(x, y) if stride == 1 and channels == cout else y
            channels = cout
    last = max(1280, mobilenetv2._round_channels(1280, WIDTH))
    x = net.conv_bn(x, channels, last, 1)
    net.classifier(x, last)
    return net


def to_onnx(net, amax, shrink):
    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def quantized_input(x, scale, tag):
        s = const(f"{tag}_in_scale", np.array(scale, np.float32))
        z = const(f"{tag}_in_zp", np.array(0, np.int8))
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [f"{tag}_in_q"], name=f"{tag}_in_Q"))
        nodes.append(helper.make_node("DequantizeLinear", [f"{tag}_in_q", s, z], [f"{tag}_in_dq"],
                                      name=f"{tag}_in_DQ"))
        return f"{tag}_in_dq"

    def quantized_weight(w, tag):
        w_scale = np.maximum(np.abs(w).reshape(w.shape[0], -1).max(axis=1), 1e-8) / 127
        shape = (-1,) + (1,) * (w.ndim - 1)
        w_q = np.clip(np.rint(w / w_scale.reshape(shape)), -127, 127).astype(np.int8)
        q = const(f"{tag}_w_q", w_q)
        s = const(f"{tag}_w_scale", w_scale.astype(np.float32))
        z = const(f"{tag}_w_zp", np.zeros(w.shape[0], np.int8))
        nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [f"{tag}_w_dq"],
                                      name=f"{tag}_w_DQ", axis=0))
        return f"{tag}_w_dq"

    conv_index = 0
    harmful = None
    for kind, inputs, out, p in net.ops:
        if kind in ("conv", "gemm"):
            scale = amax[out] / 127
            tag = out
            if kind == "conv":
                if conv_index == HARMFUL_INDEX:
                    scale /= shrink
                    harmful = out
                conv_index += 1
            x = quantized_input(inputs[0], scale, tag)
            w = quantized_weight(p["w"], tag)
            b = const(f"{tag}_b", p["b"].astype(np.float32))
            if kind == "conv":
                k = p["w"].shape[2]
                name = "harmful_conv" if out == harmful else f"{out}_Conv"
                nodes.append(helper.make_node(
                    "Conv", [x, w, b], [out], name=name, kernel_shape=[k, k],
                    strides=[p["stride"]] * 2, pads=[p["pad"]] * 4, group=p["groups"]))
            else:
                flat = "pool_flat"
                nodes.append(helper.make_node("Flatten", [x], [flat], name="Flatten", axis=1))
                nodes.append(helper.make_node("Gemm", [flat, w, b], [out], name="classifier",
                                              transB=1))
        elif kind == "relu6":
            lo = const(f"{out}_lo", np.array(0.0, np.float32))
            hi = const(f"{out}_hi", np.array(6.0, np.float32))
            nodes.append(helper.make_node("Clip", [inputs[0], lo, hi], [out], name=f"{out}_Clip"))
        elif kind == "add":
            nodes.append(helper.make_node("Add", inputs, [out], name=f"{out}_Add"))
        elif kind == "gap":
            nodes.append(helper.make_node("GlobalAveragePool", inputs, [out], name=f"{out}_Pool"))
    graph = helper.make_graph(
        nodes, "mobilenetv2_qdq",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, IMAGE, IMAGE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="qopt-tests")
    model.ir_version = 8
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--harmful-shrink", type=float, default=64.0)
    parser.add_argument("--calib-samples", type=int, default=8)
    parser.add_argument("--eval-samples", type=int, default=8)
    args = parser.parse_args()

    net = build_network()
    amax = {}
    calib = np.random.default_rng(100)
    for _ in range(args.calib_samples):
        x = calib.standard_normal((1, 3, IMAGE, IMAGE))
        for k, v in net.run(x).items():
            amax[k] = max(amax.get(k, 0.0), v)
    model = to_onnx(net, amax, args.harmful_shrink)
    os.makedirs(args.out, exist_ok=True)
    import onnx
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(args.out, "mobilenetv2_qdq.onnx"))
    eval_dir = os.path.join(args.out, "eval")
    os.makedirs(eval_dir, exist_ok=True)
    rng = np.random.default_rng(200)
    for i in range(args.eval_samples):
        np.save(os.path.join(eval_dir, f"sample_{i}.npy"),
                rng.standard_normal((1, 3, IMAGE, IMAGE)).astype(np.float32))
    print(f"wrote {os.path.join(args.out, 'mobilenetv2_qdq.onnx')}")


if __name__ == "__main__":
    main()
