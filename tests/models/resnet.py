"""ResNet-18-like (basic blocks) and ResNet-50 (bottleneck blocks) with BatchNorm, NCHW."""

import numpy as np

import modelkit

# (blocks per stage, bottleneck?) per depth, as in torchvision.
_LAYOUTS = {18: ([2, 2, 2, 2], False), 50: ([3, 4, 6, 3], True)}


def _basic_block(b, x, cin, cout, stride):
    y = b.relu(b.batchnorm(b.conv(x, cin, cout, 3, stride), cout))
    y = b.batchnorm(b.conv(y, cout, cout, 3, 1), cout)
    skip = x
    if stride != 1 or cin != cout:
        skip = b.batchnorm(b.conv(x, cin, cout, 1, stride), cout)
    return b.relu(b.node("Add", [y, skip])), cout


def _bottleneck(b, x, cin, width, stride):
    cout = width * 4
    y = b.relu(b.batchnorm(b.conv(x, cin, width, 1), width))
    y = b.relu(b.batchnorm(b.conv(y, width, width, 3, stride), width))  # stride on the 3x3 (v1.5)
    y = b.batchnorm(b.conv(y, width, cout, 1), cout)
    skip = x
    if stride != 1 or cin != cout:
        skip = b.batchnorm(b.conv(x, cin, cout, 1, stride), cout)
    return b.relu(b.node("Add", [y, skip])), cout


def build(depth=18, image=224, base_width=64, classes=1000, batch=1, seed=0):
    blocks, bottleneck = _LAYOUTS[depth]
    b = modelkit.GraphBuilder(seed)
    x = b.relu(b.batchnorm(b.conv("input", 3, base_width, 7, 2), base_width))
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = base_width
    for stage, count in enumerate(blocks):
        width = base_width * 2**stage
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            if bottleneck:
                x, channels = _bottleneck(b, x, channels, width, stride)
            else:
                x, channels = _basic_block(b, x, channels, width, stride)
    logits = b.classifier(x, channels, classes)
    b.nodes[-1].output[0] = "logits"
    model = b.model(f"resnet{depth}", [modelkit.float_input("input", [batch, 3, image, image])],
                    [modelkit.output("logits", shape=[batch, classes])])
    data = np.random.default_rng(seed + 1).standard_normal((batch, 3, image, image)).astype(np.float32)
    return model, {"input": data}
