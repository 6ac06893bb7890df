"""Writes a float16 MatMul (x [4, 64] times a constant [64, 32]) at opset 17 to argv[1]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(3)
w = (rng.standard_normal((64, 32)) * 0.2).astype(np.float16)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["y"])], "half",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4, 32])],
    [numpy_helper.from_array(w, "w")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
          sys.argv[1])
