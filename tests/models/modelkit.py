"""Helpers shared by the scripts that build qopt's test and benchmark models.

Every model is built from a fixed seed so that the same command always writes the same bytes.
Weights are He-initialised and BatchNorm statistics are deliberately far from identity, so that
a kernel that ignores one of them gives a visibly wrong result.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class GraphBuilder:
    """Collects nodes and initializers; each method returns the name of the value it produced."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.counter = 0

    def fresh(self, base):
        self.counter += 1
        return f"{base}_{self.counter}"

    def const(self, base, array):
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, outputs=1, domain="", **attrs):
        base = op.lower()
        names = [self.fresh(base) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        self.nodes.append(
            helper.make_node(op, inputs, names, name=self.fresh(op), domain=domain, **attrs))
        return names[0] if len(names) == 1 else names

    def he_weights(self, shape, fan_in):
        return (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def conv(self, x, cin, cout, kernel, stride=1, groups=1, bias=False, pad=None):
        pad = kernel // 2 if pad is None else pad
        w = self.const("w", self.he_weights((cout, cin // groups, kernel, kernel),
                                            cin // groups * kernel * kernel))
        inputs = [x, w]
        if bias:
            inputs.append(self.const("b", self.rng.normal(0, 0.1, cout).astype(np.float32)))
        return self.node("Conv", inputs, kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[pad] * 4, group=groups)

    def batchnorm(self, x, channels):
        rng = self.rng
        gamma = self.const("gamma", rng.uniform(0.5, 1.5, channels).astype(np.float32))
        beta = self.const("beta", rng.normal(0, 0.2, channels).astype(np.float32))
        mean = self.const("mean", rng.normal(0, 0.3, channels).astype(np.float32))
        var = self.const("var", rng.uniform(0.5, 2.0, channels).astype(np.float32))
        return self.node("BatchNormalization", [x, gamma, beta, mean, var], epsilon=1e-5)

    def relu(self, x):
        return self.node("Relu", [x])

    def relu6(self, x):
        lo = self.const("zero", np.array(0.0, np.float32))
        hi = self.const("six", np.array(6.0, np.float32))
        return self.node("Clip", [x, lo, hi])

    def classifier(self, x, channels, classes):
        pooled = self.node("GlobalAveragePool", [x])
        flat = self.node("Flatten", [pooled], axis=1)
        w = self.const("fc_w", self.he_weights((classes, channels), channels))
        b = self.const("fc_b", self.rng.normal(0, 0.1, classes).astype(np.float32))
        return self.node("Gemm", [flat, w, b], transB=1)

    def model(self, name, inputs, outputs, opset=17, extra_opsets=()):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="qopt-tests")
        model.ir_version = 8
        return model


def float_input(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def output(name, elem_type=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem_type, shape)


def _fill_output_shapes(model):
    """Graph outputs declared without a shape take the one ONNX's shape inference finds."""
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output)
             if v.type.tensor_type.HasField("shape")}
    for out in model.graph.output:
        if not out.type.tensor_type.HasField("shape") and out.name in known:
            out.type.CopyFrom(known[out.name])


def save(model, inputs, out_dir, name):
    """Writes <out_dir>/<name>.onnx and <out_dir>/<name>.inputs/<input name>.npy."""
    os.makedirs(out_dir, exist_ok=True)
    _fill_output_shapes(model)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name + ".onnx"))
    input_dir = os.path.join(out_dir, name + ".inputs")
    os.makedirs(input_dir, exist_ok=True)
    for input_name, array in inputs.items():
        np.save(os.path.join(input_dir, input_name + ".npy"), array)
