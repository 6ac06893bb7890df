#!/usr/bin/env python3
"""Layers on both sides of TensorRT's 16-channel line (insert-qdq's min-channels), opset 17.

x[1,3,8,8] -> stem Conv 3->16 3x3 -> Relu -> wide Conv 16->16 1x1 -> depthwise Conv 16 groups 3x3
-> narrow Conv 16->8 1x1 -> tiny Conv 8->4 1x1 (output); x -> odd Conv 3->12 3x3 (output); wide ->
dw1 depthwise Conv 16 groups 1x1 (output); wide -> big Conv 16->16 7x7 (output, 49-element
filters); depthwise -> GlobalAveragePool -> Flatten -> head Gemm 16->4 (output) and fc Gemm
16->16 -> proj MatMul 16->8 (output). Below 16 channels TensorRT has INT8 kernels for stem (the
model's input, 16 outputs), narrow (8-aligned, 16 inputs) and depthwise (3x3), none for tiny
(both sides small), odd (neither side 8-aligned) and dw1 (a 1x1 grouped kernel). Weights are fixed
pseudo-random numbers.
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

rng = np.random.default_rng(7)


def weight(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)


inits = [weight("w_stem", 16, 3, 3, 3), weight("w_wide", 16, 16, 1, 1), weight("w_dw", 16, 1, 3, 3),
         weight("w_narrow", 8, 16, 1, 1), weight("w_big", 16, 16, 7, 7), weight("w_head", 4, 16),
         weight("w_fc", 16, 16), weight("w_proj", 16, 8), weight("w_tiny", 4, 8, 1, 1),
         weight("w_odd", 12, 3, 3, 3), weight("w_dw1", 16, 1, 1, 1)]
nodes = [
    helper.make_node("Conv", ["x", "w_stem"], ["stem"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["stem"], ["r"], name="relu"),
    helper.make_node("Conv", ["r", "w_wide"], ["wide"], name="wide", kernel_shape=[1, 1]),
    helper.make_node("Conv", ["wide", "w_dw"], ["dw"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16),
    helper.make_node("Conv", ["dw", "w_narrow"], ["narrow"], name="narrow", kernel_shape=[1, 1]),
    helper.make_node("Conv", ["wide", "w_big"], ["big"], name="big", kernel_shape=[7, 7], pads=[3, 3, 3, 3]),
    helper.make_node("GlobalAveragePool", ["dw"], ["pool"], name="pool"),
    helper.make_node("Flatten", ["pool"], ["flat"], name="flatten"),
    helper.make_node("Gemm", ["flat", "w_head"], ["head"], name="head", transB=1),
    helper.make_node("Gemm", ["flat", "w_fc"], ["fc"], name="fc", transB=1),
    helper.make_node("MatMul", ["fc", "w_proj"], ["proj"], name="proj"),
    helper.make_node("Conv", ["narrow", "w_tiny"], ["tiny"], name="tiny", kernel_shape=[1, 1]),
    helper.make_node("Conv", ["x", "w_odd"], ["odd"], name="odd", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["wide", "w_dw1"], ["dw1"], name="dw1", kernel_shape=[1, 1], group=16),
]
outputs = [helper.make_tensor_value_info("tiny", TensorProto.FLOAT, [1, 4, 8, 8]),
           helper.make_tensor_value_info("odd", TensorProto.FLOAT, [1, 12, 8, 8]),
           helper.make_tensor_value_info("dw1", TensorProto.FLOAT, [1, 16, 8, 8]),
           helper.make_tensor_value_info("big", TensorProto.FLOAT, [1, 16, 8, 8]),
           helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 4]),
           helper.make_tensor_value_info("proj", TensorProto.FLOAT, [1, 8])]
graph = helper.make_graph(nodes, "small_layers",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], outputs, inits)
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), sys.argv[1])
