"""Writes the 4-bit Q/DQ model int4.test reads (ONNX's text syntax has no 4-bit
literals, and Debian's onnx 1.12 names no INT4/UINT4 types: the numbers 22 and 21 are written
directly, values packed two per byte, low nibble first).

  int4-model.py OUT.onnx"""

import sys

from onnx import TensorProto, helper

INT4, UINT4 = 22, 21


def packed(name, data_type, dims, values):
    nibbles = [v & 0xF for v in values] + ([0] if len(values) % 2 else [])
    raw = bytes(nibbles[i] | (nibbles[i + 1] << 4) for i in range(0, len(nibbles), 2))
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, data_type, raw
    t.dims.extend(dims)
    return t


def main():
    inits = [
        packed("w4", INT4, [2, 2], [7, -8, 1, -1]),
        helper.make_tensor("s4", TensorProto.FLOAT, [2], [1.0, 0.25]),
        packed("z4", INT4, [2], [0, 0]),
        helper.make_tensor("sa", TensorProto.FLOAT, [], [0.5]),
        packed("za", UINT4, [], [0]),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["w4", "s4", "z4"], ["dw"], axis=1),
        helper.make_node("Add", ["x", "dw"], ["t"]),
        helper.make_node("QuantizeLinear", ["t", "sa", "za"], ["qa"]),
        helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["da"]),
        helper.make_node("Neg", ["da"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "strip_qdq_int4",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with open(sys.argv[1], "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
