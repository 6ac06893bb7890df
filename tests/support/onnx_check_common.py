"""Helpers shared by the numerical pass checks (fold-bn's check_fold.py, relu6-asym's
check_qdq_passes.py) and the HTML report check: running the tools, reading the outputs that
qopt-run and tests/ort/run_ort.js write, and the Q/DQ graph surgery both pass checks need.
Uses only Debian's python3-onnx and python3-numpy."""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx


def run(command):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited with {result.returncode}:\n"
                 f"{result.stdout}{result.stderr}")
    return result


def tool_parser(doc, *required):
    """An argument parser described by the first line of `doc` with each of `required` (such as
    "--qopt") as a required option."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name in required:
        parser.add_argument(name, required=True)
    return parser


def fresh_dir(path):
    """Empties (or creates) a work folder so that no earlier run's files are read."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def file_stem(name):
    """How qopt-run and run_ort.js name a tensor's file."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in name)


def load_outputs(out_dir, names):
    return [np.load(os.path.join(out_dir, file_stem(n) + ".npy")) for n in names]


def qopt_run_outputs(qopt_run, model_path, inputs, out_dir, names):
    run([qopt_run, model_path, "--inputs", inputs, "--outputs", out_dir])
    return load_outputs(out_dir, names)


def ort_outputs(run_ort, model_path, inputs, out_dir, names=None):
    """Runs the model under ONNX Runtime; returns the output names (`names`, else those
    run_ort.js lists in outputs.json) and their arrays in that order."""
    run(["node", run_ort, "--model", model_path, "--inputs", inputs, "--outputs", out_dir])
    if names is None:
        with open(os.path.join(out_dir, "outputs.json")) as f:
            names = json.load(f)
    return names, load_outputs(out_dir, names)


def constant_values(graph):
    """name -> numpy array for initializers, Constant outputs, and Cast/Identity of those."""
    from onnx import numpy_helper
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        elif node.op_type in ("Cast", "Identity") and node.input[0] in values:
            source = values[node.input[0]]
            if node.op_type == "Cast":
                source = source.astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[node.attribute[0].i])
            values[node.output[0]] = source
    return values


def strip_activation_qdq(model):
    """Removes QuantizeLinear -> DequantizeLinear pairs whose input is not a constant (the float
    model of a QAT export: activations unquantized, weights kept). Edits and returns `model`."""
    graph = model.graph
    values = constant_values(graph)
    outputs = {o.name for o in graph.output}
    producer = {out: node for node in graph.node for out in node.output}
    replace = {}
    dropped = set()
    for node in graph.node:
        if node.op_type != "DequantizeLinear":
            continue
        q = producer.get(node.input[0])
        if q is None or q.op_type != "QuantizeLinear" or q.input[0] in values:
            continue
        if node.output[0] in outputs:
            continue
        replace[node.output[0]] = q.input[0]
        dropped.add(id(node))
    kept = [n for n in graph.node if id(n) not in dropped]
    for node in kept:
        for i, name in enumerate(node.input):
            node.input[i] = replace.get(name, name)
    used = {name for node in kept for name in node.input} | outputs
    kept = [n for n in kept if n.op_type != "QuantizeLinear" or n.output[0] in used]
    del graph.node[:]
    graph.node.extend(kept)
    return model
