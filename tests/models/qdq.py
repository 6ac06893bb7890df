"""A QDQ model laid out the way ONNX Runtime's static quantizer (QuantFormat.QDQ) writes one:
uint8 activations with zero points, int8 symmetric per-channel Conv weights (axis 0), int32
biases dequantized with scale = input scale * weight scale, per-tensor MatMul weights, and an
int8 symmetric branch as TensorRT wants it. The last QuantizeLinear output is also a graph
output so that integer results are compared exactly."""

import numpy as np
from onnx import TensorProto

import modelkit


class QdqBuilder(modelkit.GraphBuilder):
    def qdq(self, x, scale, zero_point, dtype):
        s = self.const("scale", np.array(scale, np.float32))
        z = self.const("zp", np.array(zero_point, dtype))
        return self.node("DequantizeLinear", [self.node("QuantizeLinear", [x, s, z]), s, z])

    def quantized_conv(self, x, x_scale, cin, cout, kernel, stride=1):
        w = self.he_weights((cout, cin, kernel, kernel), cin * kernel * kernel)
        w_scale = np.abs(w).reshape(cout, -1).max(axis=1) / 127
        w_q = np.clip(np.rint(w / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
        w_dq = self.node("DequantizeLinear", [
            self.const("w_q", w_q), self.const("w_scale", w_scale.astype(np.float32)),
            self.const("w_zp", np.zeros(cout, np.int8))], axis=0)
        bias = self.rng.normal(0, 0.1, cout)
        b_scale = (x_scale * w_scale).astype(np.float32)
        b_q = np.rint(bias / b_scale).astype(np.int32)
        b_dq = self.node("DequantizeLinear", [self.const("b_q", b_q), self.const("b_scale", b_scale)],
                         axis=0)
        return self.node("Conv", [x, w_dq, b_dq], kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[kernel // 2] * 4)


def build(image=16, channels=16, classes=10, batch=2, seed=0):
    b = QdqBuilder(seed)
    in_scale = 4.0 / 127
    x = b.qdq("input", in_scale, 0, np.int8)  # TensorRT style: int8, zero point 0
    act_scale, act_zp = 6.0 / 255, 0
    y = b.relu(b.quantized_conv(x, in_scale, 3, channels, 3))
    y = b.qdq(y, act_scale, act_zp, np.uint8)
    y = b.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = b.qdq(y, act_scale, act_zp, np.uint8)
    z = b.relu(b.quantized_conv(y, act_scale, channels, channels, 3))
    z = b.qdq(z, act_scale, act_zp, np.uint8)
    z = b.node("Add", [z, y])
    z = b.qdq(z, 12.0 / 255, 0, np.uint8)
    pooled = b.node("Flatten", [b.node("GlobalAveragePool", [z])], axis=1)
    pooled = b.qdq(pooled, 4.0 / 255, 0, np.uint8)
    w = b.he_weights((channels, classes), channels)
    w_scale = np.float32(np.abs(w).max() / 127)
    w_dq = b.node("DequantizeLinear", [
        b.const("fc_w_q", np.clip(np.rint(w / w_scale), -127, 127).astype(np.int8)),
        b.const("fc_w_scale", np.array(w_scale)), b.const("fc_w_zp", np.array(0, np.int8))])
    logits = b.node("Add", [b.node("MatMul", [pooled, w_dq]),
                            b.const("fc_b", b.rng.normal(0, 0.1, classes).astype(np.float32))])
    out_scale = b.const("out_scale", np.array(16.0 / 255, np.float32))
    out_zp = b.const("out_zp", np.array(128, np.uint8))
    b.node("QuantizeLinear", [logits, out_scale, out_zp], outputs=["logits_q"])
    b.node("DequantizeLinear", ["logits_q", out_scale, out_zp], outputs=["logits"])
    model = b.model("qdq_convnet", [modelkit.float_input("input", [batch, 3, image, image])],
                    [modelkit.output("logits", shape=[batch, classes]),
                     modelkit.output("logits_q", TensorProto.UINT8, [batch, classes])], opset=13)
    data = np.random.default_rng(seed + 1).standard_normal((batch, 3, image, image)).astype(np.float32)
    return model, {"input": data}
