"""A small decoder mixing the ops a segmentation or super-resolution export brings in:
InstanceNormalization, grouped ConvTranspose with output_padding, Resize in the modes PyTorch
and TensorFlow exporters emit (nearest asymmetric/floor, linear half_pixel and align_corners,
cubic pytorch_half_pixel, nearest round_prefer_ceil by sizes), AveragePool with ceil_mode and
count_include_pad, MaxPool with its Indices output (compared exactly) and a Gemm with transA."""

import numpy as np
from onnx import TensorProto

import modelkit


def build(batch=1, channels=4, image=6, seed=0):
    b = modelkit.GraphBuilder(seed)
    rng = b.rng
    x = b.conv("input", 3, channels, 3, bias=True)
    gamma = b.const("in_gamma", rng.uniform(0.5, 1.5, channels).astype(np.float32))
    beta = b.const("in_beta", rng.normal(0, 0.2, channels).astype(np.float32))
    x = b.relu(b.node("InstanceNormalization", [x, gamma, beta], epsilon=1e-5))
    w = b.he_weights((channels, channels // 2, 3, 3), 9 * channels // 2)
    x = b.node("ConvTranspose", [x, b.const("wt", w), b.const("bt", rng.normal(0, .1, channels).astype(np.float32))],
               strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1], group=2)

    def resize(t, mode, coordinates, scales=None, sizes=None, **attrs):
        inputs = [t, "", b.const("scales", np.array(scales, np.float32)) if scales else ""]
        if sizes:
            inputs.append(b.const("sizes", np.array(sizes, np.int64)))
        return b.node("Resize", inputs, mode=mode, coordinate_transformation_mode=coordinates,
                      **attrs)

    up = 2 * image
    x = resize(x, "nearest", "asymmetric", scales=[1, 1, 2, 2], nearest_mode="floor")
    a = resize(x, "linear", "half_pixel", scales=[1, 1, 0.5, 0.5])
    c = resize(x, "linear", "align_corners", sizes=[batch, channels, up + 3, up + 1])
    d = resize(x, "cubic", "pytorch_half_pixel", scales=[1, 1, 1.5, 1.5])
    e = resize(a, "nearest", "half_pixel", sizes=[batch, channels, up + 2, up - 1],
               nearest_mode="round_prefer_ceil")
    pooled_c = b.node("AveragePool", [c], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                      ceil_mode=1, count_include_pad=1)
    pooled_d, indices = b.node("MaxPool", [d], outputs=["maxpool_d", "maxpool_indices"],
                               kernel_shape=[2, 3], strides=[2, 2], pads=[0, 1, 0, 1])
    features = [b.node("Flatten", [b.node("GlobalAveragePool", [t])], axis=1)
                for t in (pooled_c, pooled_d, e)]
    merged = b.node("Concat", features, axis=1)
    fc = b.he_weights((3 * channels, 5), 3 * channels)
    b.node("Gemm", [b.node("Transpose", [merged], perm=[1, 0]), b.const("fc", fc)],
           outputs=["logits"], transA=1, alpha=0.5)
    outs = [modelkit.output("logits", shape=[batch, 5]),
            modelkit.output("maxpool_indices", TensorProto.INT64),
            modelkit.output(pooled_c), modelkit.output(e)]
    model = b.model("decoder", [modelkit.float_input("input", [batch, 3, image, image])], outs,
                    opset=17)
    data = np.random.default_rng(seed + 1).standard_normal((batch, 3, image, image)).astype(np.float32)
    return model, {"input": data}
