"""An LSTM (8 hidden, forward) and a bidirectional GRU (8 hidden) over x [5 steps, 1, 4]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def weight(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


nodes = [
    helper.make_node("LSTM", ["x", "lw", "lr"], ["ly"], name="lstm", hidden_size=8),
    helper.make_node("GRU", ["x", "gw", "gr"], ["gy"], name="gru", hidden_size=8,
                     direction="bidirectional"),
]
graph = helper.make_graph(
    nodes, "recurrent",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 4])],
    [helper.make_tensor_value_info("ly", TensorProto.FLOAT, [5, 1, 1, 8]),
     helper.make_tensor_value_info("gy", TensorProto.FLOAT, [5, 2, 1, 8])],
    [weight("lw", 1, 32, 4), weight("lr", 1, 32, 8), weight("gw", 2, 24, 4),
     weight("gr", 2, 24, 8)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
