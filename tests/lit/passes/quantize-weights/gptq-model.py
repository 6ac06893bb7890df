"""Writes a two-MatMul model (x [16, 32] -> MatMul 32x48 -> Relu -> MatMul 48x24 and a Gemm
with transB=1 24x40 on the same hidden tensor) at opset 17 to argv[1], and calibration samples
to argv[2] (8 samples of [16, 32], stacked on the first axis): x drawn from 6 shared sources, so every MatMul reads strongly correlated channels."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)
w1 = (rng.standard_normal((32, 48)) / np.sqrt(32)).astype(np.float32)
w2 = (rng.standard_normal((48, 24)) / np.sqrt(48)).astype(np.float32)
w3 = (rng.standard_normal((40, 48)) / np.sqrt(48)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w1"], ["h0"]),
     helper.make_node("Relu", ["h0"], ["h"]),
     helper.make_node("MatMul", ["h", "w2"], ["y"]),
     helper.make_node("Gemm", ["h", "w3"], ["z"], transB=1)],
    "two_layers",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 24]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [16, 40])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
     numpy_helper.from_array(w3, "w3")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
          sys.argv[1])
mix = rng.standard_normal((6, 32))
samples = rng.standard_normal((128, 6)) @ mix + 0.05 * rng.standard_normal((128, 32))
np.save(sys.argv[2], samples.astype(np.float32))
