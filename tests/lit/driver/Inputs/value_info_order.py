#!/usr/bin/env python3
"""A model whose value_info lists a Constant's output after the Conv output that comes first in
node order (as ONNX Runtime's quantizer writes them), plus one entry naming no value, and an If
whose branches carry an explicitly empty doc_string: what exporters really write, and what a
round trip must keep."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")
branch = helper.make_graph([helper.make_node("Identity", ["c"], ["b"])], "branch", [],
                           [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 2, 2, 2])])
branch.doc_string = ""
other = helper.make_graph([helper.make_node("Neg", ["c"], ["n"])], "other", [],
                          [helper.make_tensor_value_info("n", TensorProto.FLOAT, [1, 2, 2, 2])])
other.doc_string = ""
nodes = [
    helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
    helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array(True), "k")),
    helper.make_node("If", ["k"], ["y"], then_branch=branch, else_branch=other),
]
graph = helper.make_graph(nodes, "order", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [w])
graph.value_info.extend([
    helper.make_tensor_value_info("k", TensorProto.BOOL, []),
    helper.make_tensor_value_info("nowhere", TensorProto.FLOAT, [3]),
    helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 2, 2, 2]),
])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), sys.argv[1])
