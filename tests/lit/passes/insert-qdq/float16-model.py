#!/usr/bin/env python3
"""A 1x1 Conv on float16, opset 17 (float16 tensors cannot be written in ONNX 1.12's text syntax)."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

w = numpy_helper.from_array(np.array([1.0, 0.5, -0.5, 1.0], dtype=np.float16).reshape(2, 2, 1, 1), "w")
graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1])], "half",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 2, 2, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 2, 2, 2])], [w])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), sys.argv[1])
