#!/usr/bin/env python3
"""Writes the generated seeds of fuzz/corpus (the .onnx and .pb seeds are copied from
libonnx-testdata and tests/fixtures). Run from fuzz/: /usr/bin/python3 corpus/make_seeds.py"""
import io
import os
import random

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    os.makedirs(os.path.join(here, target), exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(here, target, name), mode) as f:
        f.write(data)


def npy(array, fortran=False):
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(array) if fortran else array)
    return buf.getvalue()


rng = np.random.default_rng(7)
for dtype in ["float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64",
              "uint16", "uint32", "uint64", "bool"]:
    write("tensor-files", f"{dtype}.npy", npy((rng.standard_normal((2, 3)) * 10).astype(dtype)))
write("tensor-files", "scalar.npy", npy(np.float32(1.5)))
write("tensor-files", "empty.npy", npy(np.zeros((0, 4), np.float32)))
write("tensor-files", "fortran.npy", npy(np.arange(6, dtype=np.float32).reshape(2, 3), True))
write("tensor-files", "big-endian.npy", npy(np.arange(4, dtype=">f4")))

write("pipeline", "cleanup.qp", open(os.path.join(here, "../../pipelines/cleanup.qp")).read())
write("pipeline", "simple.txt", "plain,every-option{flag=true count=-7 ratio=1e-3}")
write("pipeline", "lists.txt",
      'every-option{words=[Conv, "Mat Mul", "q\\"x"] numbers=[1,2,-3] reals=[0.25]}\n# comment\nplain')
write("pipeline", "fixpoint.txt", "fixpoint(plain,fixpoint(every-option{text=\"a\\\\b\"})){max-iterations=3}")

write("calib-cache", "entropy.cache",
      "TRT-8601-EntropyCalibration2\ninput: 3c010204\nconv1:0: 3d000000\n/layer/Relu_output_0: 3b9a0e4c\n")
write("calib-cache", "minmax.cache", "TRT-100300-MinMaxCalibration\nx: 3f800000\n")
write("calib-cache", "empty.cache", "TRT-8601-LegacyCalibration\n")

random.seed(11)
for i in range(8):
    write("interpreter", f"recipe-{i}.bin", bytes(random.randrange(256) for _ in range(160)))
