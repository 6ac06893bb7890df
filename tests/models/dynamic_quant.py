"""Models laid out the way ONNX Runtime's quantize_dynamic writes them. Each quantized MatMul
becomes DynamicQuantizeLinear -> MatMulInteger(x_q, W_q, x_zp, W_zp) -> Cast(float) ->
Mul(x_scale * W_scale), and each Conv becomes the same with ConvInteger; biases stay float.
Integer intermediates are graph outputs too, so that they are compared exactly."""

import numpy as np
from onnx import TensorProto

import modelkit


def _quantize_weight(w, axis, per_channel):
    """int8 symmetric weights (quantize_dynamic's default weight_type=QInt8)."""
    if per_channel:
        reduce_axes = tuple(a for a in range(w.ndim) if a != axis)
        scale = np.abs(w).max(axis=reduce_axes) / 127
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.rint(w / scale.reshape(shape))
    else:
        scale = np.float32(np.abs(w).max() / 127)
        q = np.rint(w / scale)
    return np.clip(q, -127, 127).astype(np.int8), np.asarray(scale, np.float32)


def _dequantize_product(b, integer, x_scale, w_scale):
    scale = b.node("Mul", [x_scale, w_scale])
    return b.node("Mul", [b.node("Cast", [integer], to=TensorProto.FLOAT), scale])


def _dynamic_matmul(b, x, din, dout, per_channel, outputs):
    w = b.he_weights((din, dout), din)
    w_q, w_scale = _quantize_weight(w, 1, per_channel)
    x_q, x_scale, x_zp = b.node("DynamicQuantizeLinear", [x], outputs=3)
    outputs += [x_q, x_zp]
    w_zp = np.zeros(w_scale.shape, np.int8)
    y = b.node("MatMulInteger", [x_q, b.const("w_q", w_q), x_zp, b.const("w_zp", w_zp)])
    outputs.append(y)
    y = _dequantize_product(b, y, x_scale, b.const("w_scale", w_scale))
    return b.node("Add", [y, b.const("bias", b.rng.normal(0, 0.1, dout).astype(np.float32))])


def build_mlp(batch=4, features=(64, 128, 96, 10), seed=0):
    b = modelkit.GraphBuilder(seed)
    integer_outputs = []
    x = "input"
    for i, (din, dout) in enumerate(zip(features[:-1], features[1:])):
        x = _dynamic_matmul(b, x, din, dout, per_channel=(i % 2 == 1), outputs=integer_outputs)
        if i + 2 < len(features):
            x = b.relu(x)
    b.node("Identity", [x], outputs=["logits"])
    outs = [modelkit.output("logits", shape=[batch, features[-1]])]
    for name in integer_outputs:
        elem = TensorProto.INT32 if name.startswith("matmulinteger") else TensorProto.UINT8
        outs.append(modelkit.output(name, elem))
    model = b.model("dynamic_quant_mlp", [modelkit.float_input("input", [batch, features[0]])],
                    outs, opset=13)
    data = np.random.default_rng(seed + 1).standard_normal((batch, features[0])).astype(np.float32)
    return model, {"input": data}


def build_conv(batch=1, image=12, channels=(3, 8, 16), seed=0):
    b = modelkit.GraphBuilder(seed)
    x = "input"
    integer_outputs = []
    for cin, cout in zip(channels[:-1], channels[1:]):
        w = b.he_weights((cout, cin, 3, 3), cin * 9)
        w_q, w_scale = _quantize_weight(w, 0, per_channel=False)
        x_q, x_scale, x_zp = b.node("DynamicQuantizeLinear", [x], outputs=3)
        y = b.node("ConvInteger", [x_q, b.const("w_q", w_q), x_zp,
                                   b.const("w_zp", np.array(0, np.int8))],
                   kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        integer_outputs += [x_q, y]
        y = _dequantize_product(b, y, x_scale, b.const("w_scale", w_scale))
        bias = b.rng.normal(0, 0.1, (1, cout, 1, 1)).astype(np.float32)
        x = b.relu(b.node("Add", [y, b.const("bias", bias)]))
    b.node("Identity", [x], outputs=["features"])
    outs = [modelkit.output("features")]
    for name in integer_outputs:
        elem = TensorProto.INT32 if name.startswith("convinteger") else TensorProto.UINT8
        outs.append(modelkit.output(name, elem))
    model = b.model("dynamic_quant_conv",
                    [modelkit.float_input("input", [batch, channels[0], image, image])], outs,
                    opset=13)
    data = np.random.default_rng(seed + 1).standard_normal(
        (batch, channels[0], image, image)).astype(np.float32)
    return model, {"input": data}
