"""MobileNetV2: inverted residuals with depthwise 3x3 convolutions and ReLU6 as Clip(0, 6)."""

import numpy as np

import modelkit

# expansion t, output channels c, repeats n, first stride s (the paper's Table 2).
_CONFIG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]


def _round_channels(c, multiplier):
    return max(8, int(c * multiplier + 4) // 8 * 8)


def _conv_bn(b, x, cin, cout, kernel, stride=1, groups=1, act=True):
    y = b.batchnorm(b.conv(x, cin, cout, kernel, stride, groups), cout)
    return b.relu6(y) if act else y


def build(image=224, width=1.0, classes=1000, batch=1, seed=0):
    b = modelkit.GraphBuilder(seed)
    channels = _round_channels(32, width)
    x = _conv_bn(b, "input", 3, channels, 3, 2)
    for t, c, n, s in _CONFIG:
        cout = _round_channels(c, width)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = channels * t
            y = x if t == 1 else _conv_bn(b, x, channels, hidden, 1)
            y = _conv_bn(b, y, hidden, hidden, 3, stride, groups=hidden)
            y = _conv_bn(b, y, hidden, cout, 1, act=False)
            x = b.node("Add", [x, y]) if stride == 1 and channels == cout else y
            channels = cout
    last = max(1280, _round_channels(1280, width))
    x = _conv_bn(b, x, channels, last, 1)
    b.classifier(x, last, classes)
    b.nodes[-1].output[0] = "logits"
    model = b.model("mobilenetv2", [modelkit.float_input("input", [batch, 3, image, image])],
                    [modelkit.output("logits", shape=[batch, classes])])
    data = np.random.default_rng(seed + 1).standard_normal((batch, 3, image, image)).astype(np.float32)
    return model, {"input": data}
