#!/usr/bin/env python3
"""strip-qdq on real quantizer output: ONNX Runtime's quantize_static (int8 symmetric and uint8
asymmetric activations) and a PyTorch QAT export.

  strip_qdq_test.py --fixture NAME [--float NAME] --work DIR --qopt PATH --qopt-run PATH
                    [--node PATH] [--samples N]

Checks:
  - no QuantizeLinear or DequantizeLinear is left;
  - ONNX Runtime and qopt's interpreter agree on the stripped model (1e-4 relative);
  - the stripped model stays within the quantization error of the Q/DQ model: its distance to the
    Q/DQ outputs is at most 1.5x the distance between the float original and the Q/DQ model
    (with --float), else SQNR >= 15 dB against the Q/DQ outputs (quantizing this MobileNetV2
    costs 17-19 dB in the ONNX Runtime fixtures, so the float model of a QAT export sits about
    that far from its Q/DQ outputs);
  - with --float, the stripped model matches the float original within verify's default budget
    (cosine >= 0.99, SQNR >= 20 dB);
  - the calibration cache holds one entry per quantized activation, equal to amax / 127 of the
    removed QuantizeLinear's scale and zero point, under the tensor's name in the output model.
Exits 1 on any failure."""

import argparse
import os
import struct
import sys
import tarfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "support"))
from fp16_common import (ROOT, cosine, finish, gunzip, max_relative, run, run_ort, run_qopt_run,
                         sqnr_db)

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "torch")
RANGES = {onnx.TensorProto.INT8: (-128, 127), onnx.TensorProto.UINT8: (0, 255),
          onnx.TensorProto.INT16: (-32768, 32767), onnx.TensorProto.UINT16: (0, 65535)}


def constants(graph):
    """Values of initializers, Constant nodes and Casts of those, by tensor name."""
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    values[node.output[0]] = numpy_helper.to_array(a.t)
        elif node.op_type == "Cast" and node.input[0] in values:
            to = next(a.i for a in node.attribute if a.name == "to")
            values[node.output[0]] = values[node.input[0]].astype(
                onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[to])
    return values


def expected_cache(qdq):
    """amax / 127 per quantized activation of the Q/DQ model (the narrowest when a tensor is
    quantized twice), as TensorRT's cache stores it."""
    values = constants(qdq.graph)
    # A pair computing a graph output: the float tensor takes the output's name.
    outputs = {o.name for o in qdq.graph.output}
    renamed = {n.input[0]: n.output[0] for n in qdq.graph.node
               if n.op_type == "DequantizeLinear" and n.output[0] in outputs}
    expected = {}
    for node in qdq.graph.node:
        if node.op_type != "QuantizeLinear" or node.input[0] in values:
            continue
        scale = float(values[node.input[1]].reshape(-1)[0])
        zp_array = values[node.input[2]] if len(node.input) > 2 and node.input[2] else None
        zp = int(zp_array.reshape(-1)[0]) if zp_array is not None else 0
        ztype = (onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[zp_array.dtype] if zp_array is not None
                 else onnx.TensorProto.UINT8)
        qmin, qmax = RANGES[ztype]
        if ztype == onnx.TensorProto.INT8 and zp == 0:
            amax = np.float64(np.float32(scale)) * 127
        else:
            amax = max(abs(scale * (qmin - zp)), abs(scale * (qmax - zp)))
        value = float(np.float32(amax / 127))
        name = renamed.get(node.output[0], node.input[0])
        expected[name] = min(value, expected.get(name, value))
    return expected


def read_cache(path):
    with open(path) as f:
        lines = f.read().splitlines()
    header, entries = lines[0], {}
    for line in lines[1:]:
        name, hex_bits = line.rsplit(": ", 1)
        entries[name] = struct.unpack(">f", bytes.fromhex(hex_bits))[0]
    return header, entries


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--float", dest="float_model")
    parser.add_argument("--work", required=True)
    parser.add_argument("--qopt", required=True)
    parser.add_argument("--qopt-run", required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()

    work = os.path.join(args.work, args.fixture)
    os.makedirs(work, exist_ok=True)
    qdq_path = gunzip(os.path.join(FIXTURES, args.fixture + ".onnx.gz"),
                      os.path.join(work, "qdq.onnx"))
    out_path = os.path.join(work, "stripped.onnx")
    cache_path = os.path.join(work, "stripped.cache")
    scales_path = os.path.join(work, "stripped.scales.json")
    log = run([args.qopt, "-v", "-p", f"strip-qdq{{cache={cache_path} scales={scales_path}}}",
               qdq_path, out_path])
    print("\n".join(line for line in log.splitlines() if "strip-qdq" in line or "inserted" in line
                    or "removed" in line)[:4000])

    failures = []
    stripped = onnx.load(out_path)
    left = [n.op_type for n in stripped.graph.node
            if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    print(f"{args.fixture}: {len(left)} QuantizeLinear/DequantizeLinear left, "
          f"{sum(n.op_type == 'Relu' for n in stripped.graph.node)} Relu, "
          f"{sum(n.op_type == 'Clip' for n in stripped.graph.node)} Clip in the output")
    if left:
        failures.append(f"{len(left)} Q/DQ nodes left")

    # Calibration cache against the removed scales.
    qdq = onnx.load(qdq_path)
    header, cache = read_cache(cache_path)
    print(f"cache header {header}, {len(cache)} entries")
    if header != "TRT-100300-EntropyCalibration2":
        failures.append(f"cache header {header}")
    expected = expected_cache(qdq)
    produced = {o for n in stripped.graph.node for o in n.output}
    produced |= {i.name for i in stripped.graph.input}
    mismatched = [(n, cache.get(n), v) for n, v in expected.items() if cache.get(n) != v]
    print(f"{len(expected)} quantized activations, {len(expected) - len(mismatched)} with the "
          f"exact scale in the cache")
    for name, got, want in mismatched[:5]:
        failures.append(f"cache entry for '{name}': {got}, expected {want}")
    clamp_inputs = {n.output[0]: n.input[0] for n in stripped.graph.node
                    if n.op_type in ("Relu", "Clip")}
    for name, value in cache.items():
        if name not in produced:
            failures.append(f"cache entry '{name}' names no tensor of the output model")
        elif name not in expected and cache.get(clamp_inputs.get(name)) != value:
            failures.append(f"cache entry '{name}' is neither a removed scale nor its clamp")

    # Outputs: ONNX Runtime on every model, the interpreter on the stripped one.
    with tarfile.open(os.path.join(FIXTURES, "calib_96.tar.gz")) as tar:
        tar.extractall(work)
    samples = sorted(os.listdir(os.path.join(work, "calib_96")))[: args.samples]
    worst = {"ort_vs_interp": 0.0, "strip_vs_qdq_sqnr": float("inf"),
             "float_vs_qdq_sqnr": float("inf"), "strip_vs_float_sqnr": float("inf"),
             "strip_vs_float_cosine": 1.0, "ratio": 0.0}
    float_path = None
    if args.float_model:
        float_path = gunzip(os.path.join(FIXTURES, args.float_model + ".onnx.gz"),
                            os.path.join(work, "float.onnx"))
    for sample in samples:
        input_dir = os.path.join(work, "inputs_" + sample[:-4])
        os.makedirs(input_dir, exist_ok=True)
        array = np.load(os.path.join(work, "calib_96", sample))
        np.save(os.path.join(input_dir, qdq.graph.input[0].name + ".npy"), array)
        out_s = run_ort(args.node, out_path, input_dir, os.path.join(input_dir, "ort_stripped"))
        out_q = run_ort(args.node, qdq_path, input_dir, os.path.join(input_dir, "ort_qdq"))
        out_i = run_qopt_run(args.qopt_run, out_path, input_dir,
                             os.path.join(input_dir, "interp_stripped"), list(out_s))
        out_f = (run_ort(args.node, float_path, input_dir, os.path.join(input_dir, "ort_float"))
                 if float_path else None)
        for name in out_s:
            s, q, i = out_s[name], out_q[name], out_i[name]
            worst["ort_vs_interp"] = max(worst["ort_vs_interp"], max_relative(i, s))
            worst["strip_vs_qdq_sqnr"] = min(worst["strip_vs_qdq_sqnr"], sqnr_db(s, q))
            if out_f is not None:
                f = list(out_f.values())[list(out_s).index(name)]
                worst["float_vs_qdq_sqnr"] = min(worst["float_vs_qdq_sqnr"], sqnr_db(f, q))
                worst["strip_vs_float_sqnr"] = min(worst["strip_vs_float_sqnr"], sqnr_db(s, f))
                worst["strip_vs_float_cosine"] = min(worst["strip_vs_float_cosine"], cosine(s, f))
                ratio = np.linalg.norm(s - q) / (np.linalg.norm(f - q) + 1e-30)
                worst["ratio"] = max(worst["ratio"], float(ratio))
    print(f"over {len(samples)} samples: " +
          ", ".join(f"{k} {v:.4g}" for k, v in worst.items()))
    if worst["ort_vs_interp"] > 1e-4:
        failures.append(f"interpreter and ONNX Runtime differ: {worst['ort_vs_interp']:.3g}")
    if float_path:
        if worst["ratio"] > 1.5:
            failures.append(f"stripped model is {worst['ratio']:.3g}x farther from the Q/DQ "
                            "outputs than the float original")
        if worst["strip_vs_float_cosine"] < 0.99 or worst["strip_vs_float_sqnr"] < 20:
            failures.append("stripped model outside verify's budget against the float original")
    elif worst["strip_vs_qdq_sqnr"] < 15:
        failures.append(f"stripped vs Q/DQ SQNR {worst['strip_vs_qdq_sqnr']:.3g} dB < 15 dB")

    return finish(failures, f"{args.fixture}: PASSED")


if __name__ == "__main__":
    sys.exit(main())
