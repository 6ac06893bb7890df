"""Writes ONNX files that are wrong in one way each, for qopt's bad-input tests.

    make_bad_model.py CASE FOLDER

writes FOLDER/in.onnx (and any data file the case needs). The protobuf bytes are built by hand
here so that the script needs nothing beyond Python itself, and so that it can write what no
ONNX library would: overflowing dims, cycles, unknown data types.
"""
import os
import struct
import sys


def varint(value):
    value &= (1 << 64) - 1  # negative numbers are written as 64-bit two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def entry(key, value):
    return field_bytes(1, key) + field_bytes(2, value)


def tensor(name, dims, data_type=1, raw=None, external=None):
    out = b"".join(field_varint(1, d) for d in dims)
    out += field_varint(2, data_type) + field_bytes(8, name)
    if raw is not None:
        out += field_bytes(9, raw)
    if external is not None:
        out += b"".join(field_bytes(13, entry(k, v)) for k, v in external)
        out += field_varint(14, 1)  # data_location = EXTERNAL
    return out


def value_info(name, dims):
    shape = b"".join(field_bytes(1, field_varint(1, d)) for d in dims)
    tensor_type = field_varint(1, 1) + field_bytes(2, shape)
    return field_bytes(1, name) + field_bytes(2, field_bytes(1, tensor_type))


def node(op, inputs, outputs, name="", attributes=()):
    out = b"".join(field_bytes(1, i) for i in inputs)
    out += b"".join(field_bytes(2, o) for o in outputs)
    if name:
        out += field_bytes(3, name)
    out += field_bytes(4, op)
    out += b"".join(field_bytes(5, a) for a in attributes)
    return out


def graph_attribute(name, graph):
    return field_bytes(1, name) + field_bytes(6, graph) + field_varint(20, 5)


def graph(nodes, initializers=(), inputs=(), outputs=(), name="g"):
    out = b"".join(field_bytes(1, n) for n in nodes)
    out += field_bytes(2, name)
    out += b"".join(field_bytes(5, t) for t in initializers)
    out += b"".join(field_bytes(11, v) for v in inputs)
    out += b"".join(field_bytes(12, v) for v in outputs)
    return out


def model(graph_bytes):
    opset = field_bytes(1, "") + field_varint(2, 17)
    return field_varint(1, 8) + field_bytes(7, graph_bytes) + field_bytes(8, opset)


WEIGHTS = struct.pack("<2f", 1.0, 2.0)


def simple(w=None, add_inputs=("x", "w"), extra_nodes=()):
    """y = Relu(x + w)."""
    w = w if w is not None else tensor("w", [2], raw=WEIGHTS)
    nodes = [node("Add", add_inputs, ["s"], "add"), node("Relu", ["s"], ["y"], "relu")]
    nodes += list(extra_nodes)
    return model(graph(nodes, [w], [value_info("x", [2])], [value_info("y", [2])]))


def nested_ifs(levels):
    inner = graph([], name="innermost")
    for level in reversed(range(levels)):
        branch = graph_attribute("then_branch", inner)
        inner = graph([node("If", ["cond"], ["out%d" % level], "if%d" % level, [branch])],
                      name="level%d" % level)
    cond = field_bytes(1, "cond") + field_bytes(2, field_bytes(1, field_varint(1, 9)))
    # `inner` is now the main graph: add the condition input to it.
    return model(inner + field_bytes(11, cond))


def external(location, data_size=None, folder=None):
    if data_size is not None:
        with open(os.path.join(folder, "weights.bin"), "wb") as f:
            f.write(b"\x01" * data_size)
    w = tensor("w", [2], external=[("location", location), ("offset", "0")])
    return simple(w=w)


def main():
    case, folder = sys.argv[1], sys.argv[2]
    os.makedirs(folder, exist_ok=True)
    good = simple()
    cases = {
        "good": lambda: good,
        "empty": lambda: b"",
        "truncated": lambda: good[: len(good) // 2],
        "not-onnx": lambda: b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(64)),
        "external-missing": lambda: external("weights.bin"),
        "external-short": lambda: external("weights.bin", 5, folder),
        "external-absolute": lambda: external("/etc/hostname"),
        "external-dotdot": lambda: external("../weights.bin"),
        "external-symlink": lambda: external("link.bin"),
        "dims-overflow": lambda: simple(w=tensor("w", [1 << 40, 1 << 40], raw=WEIGHTS)),
        "dims-negative": lambda: simple(w=tensor("w", [-2], raw=WEIGHTS)),
        "raw-length": lambda: simple(w=tensor("w", [3], raw=WEIGHTS)),
        "cycle": lambda: simple(add_inputs=("y", "w")),
        "undefined-input": lambda: simple(add_inputs=("x", "nowhere")),
        "duplicate-name": lambda: simple(extra_nodes=[node("Neg", ["x"], ["s"], "again")]),
        "unknown-data-type": lambda: simple(w=tensor("w", [2], data_type=99, raw=WEIGHTS)),
        "nesting-too-deep": lambda: nested_ifs(70),
        "recursion-limit": lambda: nested_ifs(100),
    }
    if case == "external-symlink":
        os.makedirs(os.path.join(folder, "..", "outside"), exist_ok=True)
        target = os.path.abspath(os.path.join(folder, "..", "outside", "secret.bin"))
        with open(target, "wb") as f:
            f.write(b"\x02" * 64)
        link = os.path.join(folder, "link.bin")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)
    with open(os.path.join(folder, "in.onnx"), "wb") as f:
        f.write(cases[case]())


if __name__ == "__main__":
    main()
