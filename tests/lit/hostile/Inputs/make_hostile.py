"""Writes hostile ONNX models and data for qopt's limit tests.

    make_hostile.py CASE FOLDER

writes FOLDER/in.onnx (or FOLDER/in.onnxtxt, plus any data file the case needs). Protobuf bytes
are built by hand (see ../../ir/Inputs/make_bad_model.py, whose helpers this reuses) so that the
script can write what no ONNX library would: huge shapes without data, bombs, deep nesting.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ir",
                                "Inputs"))
from make_bad_model import (field_bytes, field_varint, graph, model, nested_ifs, node, tensor,  # noqa: E402
                            value_info, varint)

INT64 = 7
HUGE = [1000000, 1000000]  # 1e12 elements


def int64_tensor(name, values):
    return tensor(name, [len(values)], data_type=INT64, raw=struct.pack("<%dq" % len(values), *values))


def shape_op(op, dims):
    """y = op(..., shape) where shape is an int64 initializer; r = Relu(x) keeps an input."""
    inputs = ["shape"] if op == "ConstantOfShape" else ["x", "shape"]
    nodes = [node(op, inputs, ["y"], "make_big"), node("Relu", ["x"], ["r"], "relu")]
    return model(graph(nodes, [int64_tensor("shape", dims)], [value_info("x", [1])],
                       [value_info("y", []), value_info("r", [1])]))


def huge_initializer():
    """An initializer declaring 1e12 float elements and holding no data."""
    w = tensor("w", HUGE)
    nodes = [node("Add", ["x", "w"], ["y"], "add")]
    return model(graph(nodes, [w], [value_info("x", [1])], [value_info("y", HUGE)]))


def nested_message_bomb(levels):
    """GraphProto.node[0].attribute[0].g nested `levels` times: the lengths are computed from
    the inside out, so writing it takes linear time."""
    sizes = [0]
    for _ in range(levels):
        inner = sizes[-1]
        attribute = 1 + len(varint(inner)) + inner
        node_size = 1 + len(varint(attribute)) + attribute
        sizes.append(1 + len(varint(node_size)) + node_size)
    out = bytearray(field_varint(1, 8))
    out += varint(7 << 3 | 2) + varint(sizes[-1])
    for level in range(levels, 0, -1):
        inner = sizes[level - 1]
        attribute = 1 + len(varint(inner)) + inner
        node_size = 1 + len(varint(attribute)) + attribute
        out += varint(1 << 3 | 2) + varint(node_size)  # GraphProto.node
        out += varint(5 << 3 | 2) + varint(attribute)  # NodeProto.attribute
        out += varint(6 << 3 | 2) + varint(inner)  # AttributeProto.g
    return bytes(out)


def repeated_field_bomb(count):
    """A graph of `count` empty nodes: 2 bytes each on disk, a NodeProto each in memory."""
    return field_varint(1, 8) + field_bytes(7, b"\x0a\x00" * count + field_bytes(2, "g"))


def nested_text(levels):
    """ONNX text with `levels` If bodies inside each other."""
    body = "z = Identity(x)"
    for level in range(levels):
        body = ("z = If (c) <then_branch = g%d () => (float[1] z) { %s }, "
                "else_branch = e%d () => (float[1] z) { z = Identity(x) }>" % (level, body, level))
    return ('<ir_version: 8, opset_import: ["" : 17]>\nmain (bool c, float[1] x) => (float[1] z)\n'
            "{\n  %s\n}\n" % body)


def main():
    case, folder = sys.argv[1], sys.argv[2]
    os.makedirs(folder, exist_ok=True)
    cases = {
        "huge-initializer": huge_initializer,
        "constant-of-shape": lambda: shape_op("ConstantOfShape", HUGE),
        "expand": lambda: shape_op("Expand", HUGE),
        "expand-4mb": lambda: shape_op("Expand", [1000, 1000]),
        "nesting-100": lambda: nested_ifs(100),
        "nesting-10000": lambda: nested_ifs(10000),
        "message-bomb": lambda: nested_message_bomb(100000),
        "repeated-bomb": lambda: repeated_field_bomb(1000000),
    }
    if case == "pb-external-dotdot":
        # A TensorProto input file whose data would be read from outside its folder.
        with open(os.path.join(folder, "..", "secret.bin"), "wb") as f:
            f.write(b"\x01" * 4)
        x = tensor("x", [1], external=[("location", "../secret.bin"), ("offset", "0")])
        with open(os.path.join(folder, "x.pb"), "wb") as f:
            f.write(x)
        return
    if case == "nesting-10000-text":
        with open(os.path.join(folder, "in.onnxtxt"), "w") as f:
            f.write(nested_text(10000))
        return
    with open(os.path.join(folder, "in.onnx"), "wb") as f:
        f.write(cases[case]())


if __name__ == "__main__":
    main()
