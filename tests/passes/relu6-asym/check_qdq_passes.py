#!/usr/bin/env python3
"""Checks relu6-asym and propagate-scales numerically on a Q/DQ model, on qopt's reference
interpreter (qopt-run) and on ONNX Runtime (tests/ort/run_ort.js).

  check_qdq_passes.py --qopt BIN --qopt-run BIN --run-ort JS --work DIR --model M.onnx[.gz]
                      --samples DIR|TAR.GZ [--float-model F.onnx[.gz]] [--max-samples N]
                      [--mode outputs|sqnr|exact]

--mode outputs (the default) runs three pipelines and compares each model's outputs with the
model before the passes, sample by sample (the .npy files of --samples feed the one graph input):
  propagate-scales            exact rewrites: max|after - before| <= 1 step on both runtimes;
  relu6-asym{target=ort}      the uint8 rewrite changes the quantization of ReLU6 outputs (a finer
  relu6-asym{target=ort},propagate-scales    step), so these are compared with the float model:
                              max|after - float| <= max|before - float| + 1 step.
"step" is the output's quantization step: the scale of the DequantizeLinear producing it, or for
a float output, the scale of the last activation DequantizeLinear on its path. The float model
is --float-model, else the model with its activation QuantizeLinear/DequantizeLinear removed.
Each runtime is compared with itself only: the interpreter and ONNX Runtime may round an
activation differently (a 1e-7 difference flips a rounding), which the differential tests cover.

--mode exact runs propagate-scales on a model whose movable ops all sit between equal
quantizations (tests/models/qdq_propagation.py): outputs must not change at all on either runtime,
and no MaxPool/Reshape/.../Concat may still read a DequantizeLinear.

--mode sqnr measures every ReLU6 activation (Clip(0, 6) -> QuantizeLinear -> DequantizeLinear) of
the model before and after relu6-asym{target=ort},propagate-scales:
SQNR = 10 log10(sum r^2 / sum (r - d)^2), with d the DequantizeLinear output and r = clip(x, 0, 6) for x the float tensor the activation
quantizes (the Clip's input, or y where that input is DQ(Q(y))), in the same run, so each
activation is measured on its own quantization. Prints a table and fails unless every activation
improves and the mean improvement is at least --min-gain dB.
Uses only Debian's python3-onnx and python3-numpy.
"""

import gzip
import json
import math
import os
import shutil
import sys
import tarfile

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "support"))
from onnx_check_common import (constant_values, file_stem, fresh_dir,  # noqa: E402
                               ort_outputs, qopt_run_outputs, run, strip_activation_qdq,
                               tool_parser)


def unpack_model(path, work, name):
    target = os.path.join(work, name)
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        shutil.copyfile(path, target)
    return target


def sample_dirs(samples, work, input_name, limit):
    """One folder per sample holding <input>.npy."""
    source = samples
    if samples.endswith(".tar.gz"):
        source = os.path.join(work, "samples_unpacked")
        os.makedirs(source, exist_ok=True)
        with tarfile.open(samples) as tar:
            tar.extractall(source)
    files = []
    for root, _, names in os.walk(source):
        files.extend(os.path.join(root, n) for n in names if n.endswith(".npy"))
    files = sorted(files)[:limit]
    if not files:
        sys.exit(f"FAIL: no .npy samples in {samples}")
    dirs = []
    for i, f in enumerate(files):
        d = os.path.join(work, "inputs", f"sample_{i:03d}")
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(f, os.path.join(d, file_stem(input_name) + ".npy"))
        dirs.append(d)
    return dirs


def output_steps(model):
    """Per graph output: its quantization step (see the module doc)."""
    graph = model.graph
    consts = constant_values(graph)
    producer = {out: node for node in graph.node for out in node.output}
    steps = []
    for out in graph.output:
        name, step, seen = out.name, None, set()
        queue = [name]
        while queue and step is None:
            name = queue.pop(0)
            node = producer.get(name)
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type == "DequantizeLinear" and node.input[0] not in consts:
                step = float(np.max(consts[node.input[1]]))
                break
            queue.extend(i for i in node.input if i and i not in consts)
        if step is None:
            sys.exit(f"FAIL: output '{out.name}' has no quantization on its path")
        steps.append(step)
    return steps


def run_both(args, model_path, dirs, tag):
    """Outputs per sample for both runtimes: {runtime: [[array per output] per sample]}."""
    results = {"interp": [], "ort": []}
    names = [o.name for o in onnx.load(model_path, load_external_data=False).graph.output]
    for d in dirs:
        base = os.path.join(args.work, "out", tag, os.path.basename(d))
        interp = qopt_run_outputs(args.qopt_run, model_path, d, base + "_interp", names)
        results["interp"].append([a.astype(np.float64) for a in interp])
        _, ort = ort_outputs(args.run_ort, model_path, d, base + "_ort", names)
        results["ort"].append([a.astype(np.float64) for a in ort])
    return results


def max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for xs, ys in zip(a, b) for x, y in zip(xs, ys))


def mean_diff(a, b):
    total = sum(float(np.sum(np.abs(x - y))) for xs, ys in zip(a, b) for x, y in zip(xs, ys))
    count = sum(x.size for xs in a for x in xs)
    return total / max(count, 1)


def check_outputs(args):
    work = args.work
    before = unpack_model(args.model, work, "before.onnx")
    model = onnx.load(before)
    input_name = model.graph.input[0].name
    dirs = sample_dirs(args.samples, work, input_name, args.max_samples)
    step = max(output_steps(model))
    if args.float_model:
        float_path = unpack_model(args.float_model, work, "float.onnx")
    else:
        float_path = os.path.join(work, "float.onnx")
        onnx.save(strip_activation_qdq(onnx.load(before)), float_path)

    ref = run_both(args, before, dirs, "before")
    flt = run_both(args, float_path, dirs, "float")
    failures = []
    print(f"{os.path.basename(args.model)}: {len(dirs)} samples, output step {step:.6g}")
    for runtime in ("interp", "ort"):
        print(f"  {runtime}: before vs float max|d| = {max_diff(ref[runtime], flt[runtime]):.6g}")
    print(f"  before: interp vs ort {max_diff(ref['interp'], ref['ort']):.6g}")

    pipelines = [("propagate-scales", "propagate-scales", False),
                 ("relu6-asym", "relu6-asym{target=ort}", True),
                 ("relu6-asym+propagate-scales", "relu6-asym{target=ort},propagate-scales", True)]
    for tag, pipeline, against_float in pipelines:
        after = os.path.join(work, f"after_{tag}.onnx")
        report = os.path.join(work, f"report_{tag}.json")
        run([args.qopt, "-p", pipeline, "--report", report, before, after])
        with open(report) as f:
            stats = json.load(f)
        res = run_both(args, after, dirs, tag)
        line = f"  {pipeline}: interp vs ort {max_diff(res['interp'], res['ort']):.6g}"
        for runtime in ("interp", "ort"):
            d_before = max_diff(res[runtime], ref[runtime])
            if against_float:
                e_after = max_diff(res[runtime], flt[runtime])
                e_before = max_diff(ref[runtime], flt[runtime])
                line += (f"; {runtime}: max|after-before| {d_before:.6g}, max|after-float| "
                         f"{e_after:.6g} (before: {e_before:.6g}), mean|after-float| "
                         f"{mean_diff(res[runtime], flt[runtime]):.6g} (before: "
                         f"{mean_diff(ref[runtime], flt[runtime]):.6g})")
                if e_after > e_before + step:
                    failures.append(f"{pipeline} on {runtime}: {e_after:.6g} from the float model, "
                                    f"more than {e_before:.6g} + 1 step")
            else:
                line += f"; {runtime}: max|after-before| {d_before:.6g}"
                if d_before > step:
                    failures.append(f"{pipeline} on {runtime}: outputs moved by {d_before:.6g} "
                                    f"> 1 step ({step:.6g})")
        print(line)
        print("    statistics: " + json.dumps(pass_statistics(stats)))
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


def pass_statistics(report):
    """The non-zero statistics of every pass in a --report JSON."""
    found = {}

    def walk(node):
        if isinstance(node, dict):
            if "statistics" in node and isinstance(node["statistics"], dict):
                name = node.get("name", node.get("pass", "?"))
                found[name] = {k: v for k, v in node["statistics"].items() if v}
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(report)
    return found


def relu6_sites(model):
    """(float source, DequantizeLinear output) of every Clip(0, 6) -> Q -> DQ. The float source
    is what the activation quantizes: the Clip's input, or, where that is itself DQ(Q(y)) (ONNX
    Runtime quantizes the Conv output before the Clip too), y."""
    graph = model.graph
    consts = constant_values(graph)
    producer = {out: node for node in graph.node for out in node.output}
    users = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    sites = []
    for node in graph.node:
        if node.op_type != "Clip" or len(node.input) < 3:
            continue
        lo, hi = consts.get(node.input[1]), consts.get(node.input[2])
        if lo is None or hi is None or float(lo) != 0.0 or float(hi) != 6.0:
            continue
        for q in users.get(node.output[0], []):
            if q.op_type != "QuantizeLinear":
                continue
            source = node.input[0]
            dq_in = producer.get(source)
            if dq_in is not None and dq_in.op_type == "DequantizeLinear":
                q_in = producer.get(dq_in.input[0])
                if q_in is not None and q_in.op_type == "QuantizeLinear":
                    source = q_in.input[0]
            for dq in users.get(q.output[0], []):
                if dq.op_type == "DequantizeLinear":
                    sites.append((source, dq.output[0]))
    return sites


def with_outputs(path, names, target):
    model = onnx.load(path)
    existing = {o.name for o in model.graph.output}
    for name in names:
        if name not in existing:
            model.graph.output.append(helper.make_empty_tensor_value_info(name))
            model.graph.output[-1].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            existing.add(name)
    onnx.save(model, target)


def check_sqnr(args):
    work = args.work
    before = unpack_model(args.model, work, "before.onnx")
    model = onnx.load(before)
    sites = relu6_sites(model)
    if not sites:
        sys.exit("FAIL: the model has no Clip(0, 6) -> QuantizeLinear -> DequantizeLinear")
    dirs = sample_dirs(args.samples, work, model.graph.input[0].name, args.max_samples)
    after = os.path.join(work, "after.onnx")
    run([args.qopt, "-p", "relu6-asym{target=ort},propagate-scales", before, after])
    names = sorted({n for site in sites for n in site})
    measured = {}
    for tag, path in (("before", before), ("after", after)):
        exposed = os.path.join(work, f"{tag}_exposed.onnx")
        with_outputs(path, names, exposed)
        sums = {site: [0.0, 0.0] for site in sites}
        for d in dirs:
            out = os.path.join(work, "out", tag, os.path.basename(d))
            run([args.qopt_run, exposed, "--inputs", d, "--outputs", out])
            for x_name, y_name in sites:
                x = np.load(os.path.join(out, file_stem(x_name) + ".npy")).astype(np.float64)
                y = np.load(os.path.join(out, file_stem(y_name) + ".npy")).astype(np.float64)
                r = np.clip(x, 0.0, 6.0)
                sums[(x_name, y_name)][0] += float(np.sum(r ** 2))
                sums[(x_name, y_name)][1] += float(np.sum((r - y) ** 2))
        measured[tag] = {s: (math.inf if n == 0 else 10 * math.log10(p / n))
                         for s, (p, n) in sums.items()}
    print(f"SQNR (dB) of each ReLU6 activation, Q->DQ output vs clip(x, 0, 6), "
          f"{len(dirs)} samples:")
    print(f"{'activation':60s} {'before':>8s} {'after':>8s} {'gain':>7s}")
    gains, failures = [], []
    for site in sites:
        b, a = measured["before"][site], measured["after"][site]
        gains.append(a - b)
        print(f"{site[1][-60:]:60s} {b:8.2f} {a:8.2f} {a - b:+7.2f}")
        if not a > b:
            failures.append(f"{site[1]}: {b:.2f} dB -> {a:.2f} dB")
    mean_gain = sum(gains) / len(gains)
    print(f"{len(sites)} activations: mean gain {mean_gain:+.2f} dB, "
          f"min {min(gains):+.2f} dB, max {max(gains):+.2f} dB")
    if failures:
        sys.exit("FAIL: SQNR did not improve: " + "; ".join(failures))
    if mean_gain < args.min_gain:
        sys.exit(f"FAIL: mean gain {mean_gain:.2f} dB < {args.min_gain} dB")
    print("PASS")


MOVABLE_OPS = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice",
               "Gather", "Split", "Pad", "Resize", "Concat"}


def check_exact(args):
    work = args.work
    before = unpack_model(args.model, work, "before.onnx")
    model = onnx.load(before)
    dirs = sample_dirs(args.samples, work, model.graph.input[0].name, args.max_samples)
    after = os.path.join(work, "after.onnx")
    report = os.path.join(work, "report.json")
    run([args.qopt, "-p", "propagate-scales", "--report", report, before, after])
    with open(report) as f:
        print("statistics: " + json.dumps(pass_statistics(json.load(f))))
    ref = run_both(args, before, dirs, "before")
    res = run_both(args, after, dirs, "after")
    failures = []
    for runtime in ("interp", "ort"):
        d = max_diff(res[runtime], ref[runtime])
        print(f"{runtime}: max|after - before| = {d:.6g} over {len(dirs)} samples")
        if d != 0:
            failures.append(f"outputs changed on {runtime} by {d:.6g}")
    graph = onnx.load(after).graph
    producer = {out: node for node in graph.node for out in node.output}
    for node in graph.node:
        if node.op_type not in MOVABLE_OPS:
            continue
        for name in node.input[:1] if node.op_type != "Concat" else node.input:
            source = producer.get(name)
            if source is not None and source.op_type == "DequantizeLinear":
                failures.append(f"{node.op_type} '{node.name}' still reads a DequantizeLinear")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


def main():
    parser = tool_parser(__doc__, "--qopt", "--qopt-run", "--run-ort", "--work", "--model",
                         "--samples")
    parser.add_argument("--float-model")
    parser.add_argument("--max-samples", type=int, default=8)
    parser.add_argument("--mode", choices=["outputs", "sqnr", "exact"], default="outputs")
    parser.add_argument("--min-gain", type=float, default=5.0)
    args = parser.parse_args()
    fresh_dir(args.work)
    if args.mode == "sqnr":
        check_sqnr(args)
    elif args.mode == "exact":
        check_exact(args)
    else:
        check_outputs(args)


if __name__ == "__main__":
    main()
