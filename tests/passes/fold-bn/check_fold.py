#!/usr/bin/env python3
"""Proves a folding pipeline exact on one model: runs it with qopt, then runs the model before
and after on qopt's reference interpreter (qopt-run) and on ONNX Runtime (tests/ort/run_ort.js),
and compares.

  check_fold.py --qopt BIN --qopt-run BIN --run-ort JS --work DIR --model M.onnx[.gz]
                [--inputs DIR] [--pipeline fold-bn] [--tolerance 1e-5] [--max-bn-after 0]
                [--float-activations] [--check-integer-weights]

Relative error of an output: max|after - before| / max(max|before|, tiny), with tiny the smallest
normal float32, computed per output in float64; every output must be within --tolerance on both
runtimes. The BatchNormalization count after the pipeline must be at most --max-bn-after.
Without --inputs, batch-1 inputs are drawn from a seeded normal distribution using the model's
static input shapes. A .gz model is decompressed into --work first. Prints one summary line.

Quantized models: --check-integer-weights checks on the model as given that every weight behind
QuantizeLinear -> DequantizeLinear keeps its integers (each output channel equal or negated).
--float-activations then removes the QuantizeLinear/DequantizeLinear pairs of activations before
the numerical comparison, since a 1e-7 difference flips an activation's rounding and hides the
fold's own error behind one quantization step.
Uses only Debian's python3-onnx and python3-numpy.
"""

import gzip
import os
import shutil
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "support"))
from onnx_check_common import (constant_values, file_stem, fresh_dir, ort_outputs,  # noqa: E402
                               qopt_run_outputs, run, strip_activation_qdq, tool_parser)

TINY = float(np.finfo(np.float32).tiny)
NUMPY_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
               onnx.TensorProto.FLOAT16: np.float16}


def count_ops(model, op_type):
    count = 0
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            count += node.op_type == op_type
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    graphs.append(attr.g)
                graphs.extend(attr.graphs)
    return count


def integer_weights(model):
    """Node name -> integers of its weight when it is float -> QuantizeLinear -> DequantizeLinear,
    quantized as runtimes do (x / scale in float32, half to even, saturated)."""
    graph = model.graph
    values = constant_values(graph)
    producer = {out: node for node in graph.node for out in node.output}
    result = {}
    for node in graph.node:
        if node.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        dq = producer.get(node.input[1])
        q = producer.get(dq.input[0]) if dq is not None and dq.op_type == "DequantizeLinear" else None
        if q is None or q.op_type != "QuantizeLinear" or q.input[0] not in values:
            continue
        w = values[q.input[0]].astype(np.float32)
        scale = values[q.input[1]].astype(np.float32)
        zero = values[q.input[2]].astype(np.int64) if len(q.input) > 2 else np.zeros_like(scale, np.int64)
        axis = next((a.i for a in q.attribute if a.name == "axis"), 1) % w.ndim
        shape = [1] * w.ndim
        if scale.size > 1:
            shape[axis] = scale.size
        ints = np.rint(w / scale.reshape(shape)) + zero.reshape(shape)
        info = np.iinfo(values[q.input[2]].dtype) if len(q.input) > 2 else np.iinfo(np.uint8)
        result[node.name] = (np.clip(ints, info.min, info.max).astype(np.int64), axis)
    return result


def check_integer_weights(before, after):
    """Returns the number of weights compared; exits when one changed beyond a channel's sign."""
    old, new = integer_weights(before), integer_weights(after)
    for name, (ints, axis) in old.items():
        if name not in new:
            sys.exit(f"FAIL: the quantized weight of node '{name}' is gone after folding")
        folded, _ = new[name]
        for channel in range(ints.shape[axis]):
            a = np.take(ints, channel, axis=axis)
            b = np.take(folded, channel, axis=axis)
            if not (np.array_equal(a, b) or np.array_equal(a, -b)):
                sys.exit(f"FAIL: node '{name}': the integers of channel {channel} changed")
    return len(old)


def make_inputs(model, directory, seed):
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    os.makedirs(directory, exist_ok=True)
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = []
        for i, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                shape.append(dim.dim_value)
            elif i == 0:
                shape.append(1)  # batch
            else:
                sys.exit(f"FAIL: input '{value.name}' has a dynamic dim {i}; pass --inputs")
        dtype = NUMPY_TYPES[tensor_type.elem_type]
        np.save(os.path.join(directory, file_stem(value.name) + ".npy"),
                rng.standard_normal(shape).astype(dtype))


def relative_error(after, before):
    before = before.astype(np.float64)
    after = after.astype(np.float64)
    if before.shape != after.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(before))) if before.size else 0.0, TINY)
    return float(np.max(np.abs(after - before))) / scale if before.size else 0.0


def main():
    parser = tool_parser(__doc__, "--qopt", "--qopt-run", "--run-ort", "--work", "--model")
    parser.add_argument("--inputs")
    parser.add_argument("--pipeline", default="fold-bn")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--max-bn-after", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--float-activations", action="store_true")
    parser.add_argument("--check-integer-weights", action="store_true")
    args = parser.parse_args()

    fresh_dir(args.work)
    name = os.path.basename(args.model).removesuffix(".gz").removesuffix(".onnx")
    original = args.model
    if original.endswith(".gz"):
        original = os.path.join(args.work, name + ".onnx")
        with gzip.open(args.model, "rb") as src, open(original, "wb") as dst:
            shutil.copyfileobj(src, dst)
    before_model = onnx.load(original)
    integer_note = ""
    if args.check_integer_weights:
        folded_as_given = os.path.join(args.work, name + ".as-given.folded.onnx")
        run([args.qopt, "-p", args.pipeline, original, folded_as_given])
        count = check_integer_weights(before_model, onnx.load(folded_as_given))
        if count == 0:
            sys.exit(f"FAIL: {name}: no quantized weights to check")
        integer_note = f"; integers kept in {count} quantized weights"
    if args.float_activations:
        strip_activation_qdq(before_model)
        original = os.path.join(args.work, name + ".float-activations.onnx")
        onnx.save(before_model, original)
    inputs = args.inputs
    if inputs is None:
        inputs = os.path.join(args.work, "inputs")
        make_inputs(before_model, inputs, args.seed)

    folded = os.path.join(args.work, name + ".folded.onnx")
    report = os.path.join(args.work, "report.json")
    run([args.qopt, "-p", args.pipeline, "--verify-each", "--report", report, original, folded])
    after_model = onnx.load(folded)
    bn_before = count_ops(before_model, "BatchNormalization")
    bn_after = count_ops(after_model, "BatchNormalization")

    out = {tag: os.path.join(args.work, tag)
           for tag in ("ort_before", "ort_after", "qopt_before", "qopt_after")}
    names, ort_before = ort_outputs(args.run_ort, original, inputs, out["ort_before"])
    after_names, ort_after = ort_outputs(args.run_ort, folded, inputs, out["ort_after"])
    if after_names != names:
        sys.exit(f"FAIL: {name}: outputs {names} became {after_names}")
    interp_before = qopt_run_outputs(args.qopt_run, original, inputs, out["qopt_before"], names)
    interp_after = qopt_run_outputs(args.qopt_run, folded, inputs, out["qopt_after"], names)

    interp_error = max(relative_error(a, b) for a, b in zip(interp_after, interp_before))
    ort_error = max(relative_error(a, b) for a, b in zip(ort_after, ort_before))
    print(f"{name}: pipeline '{args.pipeline}': BatchNormalization {bn_before} -> {bn_after}; "
          f"max relative error interpreter {interp_error:.3g}, ONNX Runtime {ort_error:.3g} "
          f"(tolerance {args.tolerance:g}){integer_note}")
    failures = []
    if bn_after > args.max_bn_after:
        failures.append(f"{bn_after} BatchNormalization nodes left (at most {args.max_bn_after})")
    if not interp_error <= args.tolerance:
        failures.append(f"interpreter relative error {interp_error:.3g} > {args.tolerance:g}")
    if not ort_error <= args.tolerance:
        failures.append(f"ONNX Runtime relative error {ort_error:.3g} > {args.tolerance:g}")
    if failures:
        sys.exit(f"FAIL: {name}: " + "; ".join(failures))


if __name__ == "__main__":
    main()
