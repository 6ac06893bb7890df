"""A model in ONNX Runtime's QOperator format: QLinearConv (per-channel int8 weights with an int32
bias, and a depthwise one with uint8 weights and a zero point) and QLinearMatMul. Every integer
tensor is a graph output and compared exactly."""

import numpy as np
from onnx import TensorProto

import modelkit


def _scalar(b, base, value, dtype):
    return b.const(base, np.array(value, dtype))


def build(batch=1, image=10, channels=8, classes=6, seed=0):
    b = modelkit.GraphBuilder(seed)
    rng = b.rng
    x_s, x_zp = _scalar(b, "x_scale", 4.0 / 255, np.float32), _scalar(b, "x_zp", 128, np.uint8)
    x_q = b.node("QuantizeLinear", ["input", x_s, x_zp], outputs=["x_q"])

    # Conv 3 -> channels, per-channel int8 weights, int32 bias. The int8 weights keep to 7 bits
    # (ONNX Runtime's reduce_range), as does the QLinearMatMul's: on x86 without VNNI, ONNX
    # Runtime's u8 x s8 kernels add pairs of products in int16 (vpmaddubsw), which saturates
    # with 8-bit weights and makes its outputs depend on the CPU it runs on.
    w = b.he_weights((channels, 3, 3, 3), 27)
    w_scale = (np.abs(w).reshape(channels, -1).max(axis=1) / 63).astype(np.float32)
    w_q = np.clip(np.rint(w / w_scale[:, None, None, None]), -63, 63).astype(np.int8)
    bias = np.rint(rng.normal(0, 0.1, channels) / (4.0 / 255 * w_scale)).astype(np.int32)
    y1_s, y1_zp = _scalar(b, "y1_scale", 8.0 / 255, np.float32), _scalar(b, "y1_zp", 100, np.uint8)
    y1 = b.node("QLinearConv", [x_q, x_s, x_zp, b.const("w1_q", w_q), b.const("w1_s", w_scale),
                                b.const("w1_zp", np.zeros(channels, np.int8)), y1_s, y1_zp,
                                b.const("b1", bias)],
                outputs=["conv1_q"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])

    # Depthwise 3x3 stride 2 with uint8 weights and a non-zero weight zero point.
    w2 = rng.integers(0, 256, (channels, 1, 3, 3)).astype(np.uint8)
    y2_s, y2_zp = _scalar(b, "y2_scale", 0.25, np.float32), _scalar(b, "y2_zp", 120, np.uint8)
    y2 = b.node("QLinearConv", [y1, y1_s, y1_zp, b.const("w2_q", w2),
                                _scalar(b, "w2_s", 0.01, np.float32),
                                _scalar(b, "w2_zp", 131, np.uint8), y2_s, y2_zp],
                outputs=["conv2_q"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
                group=channels)
    features = b.node("DequantizeLinear", [y2, y2_s, y2_zp])
    pooled = b.node("Flatten", [b.node("GlobalAveragePool", [features])], axis=1)
    p_s, p_zp = _scalar(b, "p_scale", 0.02, np.float32), _scalar(b, "p_zp", 128, np.uint8)
    p_q = b.node("QuantizeLinear", [pooled, p_s, p_zp], outputs=["pooled_q"])
    fc = rng.integers(-63, 64, (channels, classes)).astype(np.int8)
    o_s, o_zp = _scalar(b, "o_scale", 0.05, np.float32), _scalar(b, "o_zp", 128, np.uint8)
    logits_q = b.node("QLinearMatMul", [p_q, p_s, p_zp, b.const("fc_q", fc),
                                        _scalar(b, "fc_s", 0.004, np.float32),
                                        _scalar(b, "fc_zp", 0, np.int8), o_s, o_zp],
                      outputs=["logits_q"])
    b.node("DequantizeLinear", [logits_q, o_s, o_zp], outputs=["logits"])
    outs = [modelkit.output("logits", shape=[batch, classes])]
    outs += [modelkit.output(n, TensorProto.UINT8) for n in ["x_q", "conv1_q", "conv2_q", "pooled_q",
                                                             "logits_q"]]
    model = b.model("qoperator_convnet", [modelkit.float_input("input", [batch, 3, image, image])],
                    outs, opset=13)
    data = np.random.default_rng(seed + 1).standard_normal((batch, 3, image, image)).astype(np.float32)
    return model, {"input": data}
