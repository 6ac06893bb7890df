"""Writes and prints small .npy files with the standard library only (no numpy needed).

  npy.py write FILE DTYPE SHAPE VALUES   e.g. write x.npy f4 2,2 1,2,3,4   (SHAPE "" = scalar)
  npy.py print FILE                      prints "dtype shape: v0 v1 ..." (floats with %g)
"""
import ast
import struct
import sys

FORMATS = {"f4": "f", "f8": "d", "i1": "b", "u1": "B", "i4": "i", "i8": "q", "b1": "?", "f2": "e"}


def write(path, dtype, shape, values):
    dims = tuple(int(d) for d in shape.split(",") if d)
    items = [float(v) if dtype.startswith("f") else int(v) for v in values.split(",") if v]
    order = "|" if dtype in ("i1", "u1", "b1") else "<"
    header = "{'descr': '%s%s', 'fortran_order': False, 'shape': %r, }" % (order, dtype, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(items), FORMATS[dtype]), *items))


def show(path):
    data = open(path, "rb").read()
    length = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + length].decode())
    dtype = header["descr"][1:]
    count = 1
    for d in header["shape"]:
        count *= d
    values = struct.unpack("<%d%s" % (count, FORMATS[dtype]), data[10 + length:])
    text = " ".join(("%g" % v) if dtype.startswith("f") else str(int(v)) for v in values)
    print("%s %s: %s" % (dtype, list(header["shape"]), text))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        show(sys.argv[2])
