#!/usr/bin/env python3
"""Differential test of float8 QuantizeLinear/DequantizeLinear: qopt's interpreter (qopt-run)
against ONNX Runtime (onnxruntime-node, CPU), bit for bit.

  float8_qdq_test.py --work DIR --qopt-run PATH [--node PATH]

Each case is a model x -> QuantizeLinear -> DequantizeLinear (opset 19) with float8 zero points
of 0, per tensor or per axis, saturate 1 or 0. The float8 codes have no numpy dtype, so the
model's output is the dequantized float32 tensor: DequantizeLinear is exact, so equal float32
bits (signed zeros and NaN signs included) mean equal codes. Inputs cover every midpoint between
neighbouring codes (ties to even), values just off them, subnormals, signed zeros, values beyond
the largest finite one, infinities and NaNs of both signs, and random normal values.

ONNX 1.12's helpers predate the float8 types, so the models are written with the raw type
numbers (17 to 20) and not run through its checker. Exits 1 on any difference and when ONNX
Runtime is not installed."""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from fp16_common import ROOT, finish, require_ort, run  # noqa: E402

# (ONNX type number, mantissa bits, exponent bias, fnuz, has infinity, largest finite code).
FORMATS = {
    "e4m3fn": (17, 3, 7, False, False, 0x7E),
    "e4m3fnuz": (18, 3, 8, True, False, 0x7F),
    "e5m2": (19, 2, 15, False, True, 0x7B),
    "e5m2fnuz": (20, 2, 16, True, False, 0x7F),
}


def decode(code, fmt):
    """The value of a positive finite code (the test only decodes those)."""
    _, mant_bits, bias, _, _, _ = fmt
    exponent = code >> mant_bits
    mantissa = code & ((1 << mant_bits) - 1)
    if exponent == 0:
        return mantissa * 2.0 ** (1 - bias - mant_bits)
    return (mantissa + (1 << mant_bits)) * 2.0 ** (exponent - bias - mant_bits)


def probe_values(fmt, rng, skip):
    """Float32 inputs, at scale 1, that exercise every rounding case of the format; `skip`: a
    range [lo, hi) of magnitudes to leave out."""
    max_code = fmt[5]
    positives = [decode(c, fmt) for c in range(max_code + 1)]
    values = []
    for lo, hi in zip(positives, positives[1:]):
        mid = np.float32((lo + hi) / 2)
        values += [lo, mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf))]
    largest = positives[-1]
    ulp = largest - positives[-2]
    beyond = [largest + ulp / 2, largest + ulp / 2 + ulp / 8, largest + ulp, largest + ulp * 1.25,
              largest * 1.5, largest * 4, 1e30]
    values += beyond
    values += [positives[1] / 4, positives[1] / 2, positives[1] * 0.75, 0.0, 3.0e-39]
    values += list(rng.standard_normal(200) * largest / 8)
    x = np.array(values, dtype=np.float32)
    if skip:
        x = x[~((np.abs(x) >= skip[0]) & (np.abs(x) < skip[1]))]
    x = np.concatenate([x, -x, np.array([np.inf, -np.inf, np.nan, -np.nan], dtype=np.float32)])
    return x


def raw_tensor(name, elem_type, dims, data):
    t = TensorProto()
    t.name = name
    t.data_type = elem_type
    t.dims.extend(dims)
    t.raw_data = data
    return t


def qdq_model(fmt, saturate, x_shape, axis, scales):
    elem_type = fmt[0]
    per_axis = axis is not None
    scale_dims = [len(scales)] if per_axis else []
    scale = helper.make_tensor("scale", TensorProto.FLOAT, scale_dims, scales)
    zero = raw_tensor("zero", elem_type, scale_dims, bytes(len(scales)))
    axis_attr = {"axis": axis} if per_axis else {}
    q = helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], saturate=saturate,
                         **axis_attr)
    dq = helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"], **axis_attr)
    graph = helper.make_graph(
        [q, dq], "float8_qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)],
        initializer=[scale, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


# Where ONNX Runtime's non-saturating conversion departs from ONNX's table, which qopt follows
# (beyond the largest finite value: NaN for E4M3FN, infinity for E5M2): E4M3FN values in
# [480, 496) give 448 (the NaN code's bit pattern is masked down to 448), E5M2 values that round
# up past 57344 below 65536 give NaN (0x7C is OR-ed onto 0x7B). Those inputs are left out.
ORT_NON_SATURATING_DEPARTURES = {"e4m3fn": (480, 496), "e5m2": (61440, 65536)}


def cases(rng):
    for name, fmt in FORMATS.items():
        for saturate in (1, 0):
            skip = ORT_NON_SATURATING_DEPARTURES.get(name) if saturate == 0 else None
            x = probe_values(fmt, rng, skip)
            yield f"{name}_saturate{saturate}_per_tensor", qdq_model(fmt, saturate, [len(x)],
                                                                     None, [1.0]), x
    # Per axis: three channels with scales 1, 1/8 and 3 (a non power of two: the division
    # x / scale rounds in float first, as both runtimes do).
    fmt = FORMATS["e4m3fn"]
    base = probe_values(fmt, rng, None)
    n = len(base) // 3 * 3
    x = np.stack([base[:n // 3], base[n // 3:2 * n // 3] / 8, base[2 * n // 3:n] * 3], axis=1)
    yield "e4m3fn_per_axis", qdq_model(fmt, 1, list(x.shape), 1, [1.0, 0.125, 3.0]), x
    fmt = FORMATS["e5m2"]
    x = (rng.standard_normal((4, 3, 5)) * np.array([1e-3, 1.0, 5e4]).reshape(1, 3, 1))
    yield "e5m2_per_axis", qdq_model(fmt, 1, [4, 3, 5], -2, [1e-4, 0.37, 2.0]), x.astype(np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--qopt-run", required=True)
    parser.add_argument("--node", default="node")
    args = parser.parse_args()
    require_ort()
    rng = np.random.default_rng(19)
    failures = []
    for name, model, x in cases(rng):
        work = os.path.join(args.work, name)
        inputs = os.path.join(work, "inputs")
        os.makedirs(inputs, exist_ok=True)
        model_path = os.path.join(work, name + ".onnx")
        onnx.save(model, model_path)
        np.save(os.path.join(inputs, "x.npy"), x)
        run([args.node, os.path.join(ROOT, "tests", "ort", "run_ort.js"), "--model", model_path,
             "--inputs", inputs, "--outputs", os.path.join(work, "ort"),
             "--optimization", "disabled"])
        run([args.qopt_run, model_path, "--inputs", inputs, "--outputs",
             os.path.join(work, "qopt")])
        expected = np.load(os.path.join(work, "ort", "y.npy"))
        actual = np.load(os.path.join(work, "qopt", "y.npy"))
        differ = expected.view(np.uint32) != actual.view(np.uint32)
        print(f"{name}: {x.size} values, {np.count_nonzero(differ)} differ")
        if np.any(differ):
            i = tuple(np.argwhere(differ)[0])
            failures.append(f"{name}: {np.count_nonzero(differ)} values differ, first at {i}: "
                            f"x {x[i]!r}, qopt {actual[i]!r}, ONNX Runtime {expected[i]!r}")
    return finish(failures,
                  "float8 QuantizeLinear/DequantizeLinear: qopt equals ONNX Runtime bit for bit")


if __name__ == "__main__":
    sys.exit(main())
