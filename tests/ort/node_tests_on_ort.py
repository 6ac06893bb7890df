#!/usr/bin/env python3
"""Differential test of interpreter kernels against ONNX Runtime, driven by ONNX's node tests:
each test model that uses one of the given ops runs on its stored inputs with ONNX Runtime
(onnxruntime-node, tests/ort/run_ort.js) and with qopt's interpreter (qopt-run), and qopt's
outputs must equal ONNX Runtime's.

  node_tests_on_ort.py --ops Op1,Op2,... --work DIR --qopt-run PATH [--node PATH]

Tests come from the onnx package's backend test data: every folder of data/node, and of
data/simple (model tests in the same layout, the only ones of ONNX 1.12 for SequenceErase,
SplitToSequence and ConcatFromSequence), whose model uses one of the ops, in its graph or in a
subgraph.

Comparison: floating point elements within RTOL relative plus an absolute tolerance of ATOL and
ATOL_OF_MAX times the output's largest magnitude (float32 sums such as DFT's leave rounding errors
of a few epsilons of the magnitudes summed, also on elements that are near zero); 16-bit floats,
whose own resolution is about 1e-3, within HALF_RTOL, HALF_ATOL and HALF_ATOL_OF_MAX. NaN must
be where ONNX Runtime has NaN. Integers, bools and strings must be equal; sequences item by item;
optionals as none or their values. Tests of models with random ops (RANDOM_OPS) compare shapes
and dtypes only.

ONNX Runtime's node binding takes and returns tensors only. So ONNX Runtime runs the test model
with sequence and optional inputs built inside the graph from tensor inputs (SequenceConstruct,
SequenceEmpty, Optional), and with sequence and optional outputs read out as tensors
(SequenceLength and SequenceAt, OptionalHasElement and OptionalGetElement); qopt runs the model
unchanged, fed with the stored .pb files. Where ONNX Runtime's StringNormalizer cannot build its
default locale (en_US.UTF-8 not installed), ONNX Runtime runs again with locale C.UTF-8, which
cases the tests' ASCII strings alike.

A test that ONNX Runtime cannot load or run is reported "not run by ONNX Runtime: <its error>"
and counted apart. Exits 1 when qopt and ONNX Runtime disagree, when qopt fails a test that ONNX
Runtime runs, when an op has no compared test (the op is named), and when ONNX Runtime is not
installed. Prints a table per op: tests found, compared, agreed, not run by ONNX Runtime."""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RTOL = 1e-4
ATOL = 1e-5
ATOL_OF_MAX = 1e-6
HALF_RTOL = 1e-3
HALF_ATOL = 1e-3
HALF_ATOL_OF_MAX = 1e-3
RANDOM_OPS = {"Bernoulli", "RandomUniform", "RandomUniformLike", "RandomNormal",
              "RandomNormalLike", "Multinomial"}
# Names of what the ONNX Runtime view adds; a test model never uses them.
TAG = "__ort_"


class Optional:
    """An optional value: `value` is None for none, else an ndarray or a list of them."""

    def __init__(self, value):
        self.value = value


class NotRun(Exception):
    """ONNX Runtime cannot load or run the test."""


def file_stem(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def data_roots():
    """ONNX's backend test data folders that hold tests in the node-test layout."""
    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    return [os.path.join(base, kind) for kind in ("node", "simple")]


def ops_of(graph):
    """Default-domain op types of `graph` and its subgraphs."""
    ops = set()
    for node in graph.node:
        if node.domain in ("", "ai.onnx"):
            ops.add(node.op_type)
        for attr in node.attribute:
            if attr.HasField("g"):
                ops |= ops_of(attr.g)
            for g in attr.graphs:
                ops |= ops_of(g)
    return ops


def find_tests(ops):
    """[(test folder, its model, the wanted ops it uses)] of every test using `ops`."""
    tests = []
    for root in data_roots():
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            model_path = os.path.join(root, name, "model.onnx")
            if not os.path.exists(model_path):
                continue
            model = onnx.load(model_path)
            used = ops_of(model.graph)
            if used & ops:
                tests.append((os.path.join(root, name), model, sorted(used & ops)))
    return tests


def data_sets(test_dir):
    return sorted(os.path.join(test_dir, d) for d in os.listdir(test_dir)
                  if d.startswith("test_data_set_"))


# ----- values -----

def read_tensor(proto):
    array = numpy_helper.to_array(proto)
    if array.dtype == object:
        return np.array([s.decode("utf-8") if isinstance(s, bytes) else s for s in array.flat],
                        dtype=object).reshape(array.shape)
    return array


def read_sequence(proto):
    if len(proto.sequence_values) or len(proto.map_values) or len(proto.optional_values):
        raise ValueError("only sequences of tensors are compared")
    return [read_tensor(t) for t in proto.tensor_values]


def read_value(path, value_type):
    """The value in a .pb file: a TensorProto, SequenceProto or OptionalProto by `value_type`."""
    with open(path, "rb") as f:
        data = f.read()
    kind = value_type.WhichOneof("value")
    if kind == "sequence_type":
        proto = onnx.SequenceProto()
        proto.ParseFromString(data)
        return read_sequence(proto)
    if kind == "optional_type":
        proto = onnx.OptionalProto()
        proto.ParseFromString(data)
        if proto.HasField("tensor_value"):
            return Optional(read_tensor(proto.tensor_value))
        if proto.HasField("sequence_value"):
            return Optional(read_sequence(proto.sequence_value))
        return Optional(None)
    proto = onnx.TensorProto()
    proto.ParseFromString(data)
    return read_tensor(proto)


def describe(value):
    if isinstance(value, Optional):
        return "optional none" if value.value is None else f"optional of {describe(value.value)}"
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    return f"{value.dtype}{list(value.shape)}"


def compare_tensor(actual, expected, values_too):
    """None when equal, else what differs."""
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} but ONNX Runtime gives {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} but ONNX Runtime gives {expected.dtype}"
    if not values_too or expected.size == 0:
        return None
    if np.issubdtype(expected.dtype, np.floating):
        half = expected.dtype.itemsize <= 2
        rtol, atol, atol_of_max = ((HALF_RTOL, HALF_ATOL, HALF_ATOL_OF_MAX) if half else
                                   (RTOL, ATOL, ATOL_OF_MAX))
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        finite = np.abs(e[np.isfinite(e)])
        atol += atol_of_max * (finite.max() if finite.size else 0.0)
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if close.all():
            return None
        i = tuple(np.argwhere(~close)[0])
        return (f"{np.count_nonzero(~close)} of {e.size} elements differ beyond rtol {rtol} "
                f"atol {atol:.3g} (first at {list(i)}: qopt {a[i]!r}, ONNX Runtime {e[i]!r})")
    equal = actual == expected
    if np.all(equal):
        return None
    i = tuple(np.argwhere(~equal)[0])
    return (f"{np.count_nonzero(~equal)} of {expected.size} elements differ (first at {list(i)}: "
            f"qopt {actual[i]!r}, ONNX Runtime {expected[i]!r})")


def compare(actual, expected, values_too):
    """None when qopt's `actual` equals ONNX Runtime's `expected`, else what differs."""
    if type(actual) is not type(expected):
        return f"{describe(actual)} but ONNX Runtime gives {describe(expected)}"
    if isinstance(expected, Optional):
        if (actual.value is None) != (expected.value is None):
            return f"{describe(actual)} but ONNX Runtime gives {describe(expected)}"
        return None if expected.value is None else compare(actual.value, expected.value,
                                                          values_too)
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return f"{describe(actual)} but ONNX Runtime gives {describe(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            diff = compare_tensor(a, e, values_too)
            if diff:
                return f"item {i}: {diff}"
        return None
    return compare_tensor(actual, expected, values_too)


# ----- ONNX Runtime's view of a test model -----

def structure(value):
    """What of a sequence or optional output the ONNX Runtime view reads out: None for a tensor,
    an item count for a sequence, ("optional", inner) for an optional (inner False for none)."""
    if isinstance(value, Optional):
        return ("optional", False if value.value is None else structure(value.value))
    if isinstance(value, list):
        return len(value)
    return None


def elem_type_of(value_type):
    kind = value_type.WhichOneof("value")
    if kind == "tensor_type":
        return value_type.tensor_type.elem_type
    if kind == "sequence_type":
        return elem_type_of(value_type.sequence_type.elem_type)
    return elem_type_of(value_type.optional_type.elem_type)


class OrtView:
    """The test model as ONNX Runtime runs it: tensor inputs and outputs only."""

    def __init__(self, model, inputs, shapes, c_locale):
        self.model = onnx.ModelProto()
        self.model.CopyFrom(model)
        self.feeds = {}  # tensor input name -> array
        self.readers = []  # (output name, function of ONNX Runtime's tensor outputs -> value)
        graph = self.model.graph
        front = []
        kept_inputs = []
        for value_info in graph.input:
            name = value_info.name
            if name not in inputs:
                kept_inputs.append(value_info)
                continue
            value = inputs[name]
            kind = value_info.type.WhichOneof("value")
            if kind == "tensor_type":
                kept_inputs.append(value_info)
                self.feeds[name] = value
                continue
            elem = elem_type_of(value_info.type)
            if kind == "sequence_type":
                front += self._construct(name, value, elem, kept_inputs)
            elif value.value is None:
                front.append(helper.make_node("Optional", [], [name],
                                              type=value_info.type.optional_type.elem_type))
            else:
                inner = name + TAG + "value"
                if isinstance(value.value, list):
                    front += self._construct(inner, value.value, elem, kept_inputs)
                else:
                    kept_inputs.append(helper.make_tensor_value_info(inner, elem, None))
                    self.feeds[inner] = value.value
                front.append(helper.make_node("Optional", [inner], [name]))
        del graph.input[:]
        graph.input.extend(kept_inputs)
        nodes = front + list(graph.node)

        outputs = []
        for value_info in graph.output:
            name = value_info.name
            shape = shapes.get(name)
            kind = value_info.type.WhichOneof("value")
            if kind == "tensor_type":
                outputs.append(value_info)
                self.readers.append((name, lambda r, name=name: r[name]))
                continue
            elem = elem_type_of(value_info.type)
            if kind == "sequence_type":
                read = self._read_sequence(name, shape or 0, elem, nodes, outputs,
                                           lambda n, name=name: Reshape(name, n))
            else:
                has = name + TAG + "has"
                nodes.append(helper.make_node("OptionalHasElement", [name], [has]))
                outputs.append(helper.make_tensor_value_info(has, onnx.TensorProto.BOOL, []))
                inner = shape[1] if shape else False
                read = self._read_optional(name, has, inner, elem, value_info, nodes, outputs)
            self.readers.append((name, read))
        del graph.output[:]
        graph.output.extend(outputs)
        del graph.node[:]
        graph.node.extend(nodes)
        if c_locale:
            for node in graph.node:
                if node.op_type == "StringNormalizer":
                    for attr in list(node.attribute):
                        if attr.name == "locale":
                            node.attribute.remove(attr)
                    node.attribute.append(helper.make_attribute("locale", "C.UTF-8"))

    def _construct(self, name, items, elem, kept_inputs):
        if not items:
            return [helper.make_node("SequenceEmpty", [], [name], dtype=elem)]
        names = []
        for i, item in enumerate(items):
            names.append(f"{name}{TAG}item{i}")
            kept_inputs.append(helper.make_tensor_value_info(names[-1], elem, None))
            self.feeds[names[-1]] = item
        return [helper.make_node("SequenceConstruct", names, [name])]

    def _read_sequence(self, name, count, elem, nodes, outputs, reshape):
        """Reads sequence `name` of `count` items; `reshape(n)` is raised for another count."""
        length = name + TAG + "length"
        nodes.append(helper.make_node("SequenceLength", [name], [length]))
        outputs.append(helper.make_tensor_value_info(length, onnx.TensorProto.INT64, []))
        items = []
        for i in range(count):
            index = f"{name}{TAG}index{i}"
            items.append(f"{name}{TAG}item{i}")
            self.model.graph.initializer.append(
                numpy_helper.from_array(np.array(i, dtype=np.int64), index))
            nodes.append(helper.make_node("SequenceAt", [name, index], [items[-1]]))
            outputs.append(helper.make_tensor_value_info(items[-1], elem, None))

        def read(results):
            n = int(results[length])
            if n != count:
                raise reshape(n)
            return [results[item] for item in items]
        return read

    def _read_optional(self, name, has, inner, elem, value_info, nodes, outputs):
        """Reads optional `name`: none where `inner` is False, else a value of that structure."""
        held_is_sequence = (value_info.type.optional_type.elem_type.WhichOneof("value") ==
                            "sequence_type")
        if inner is False:
            def read_none(results):
                if bool(results[has]):
                    raise Reshape(name, ("optional", 0 if held_is_sequence else None))
                return Optional(None)
            return read_none
        value = name + TAG + "value"
        nodes.append(helper.make_node("OptionalGetElement", [name], [value]))
        if held_is_sequence:
            read_held = self._read_sequence(value, inner or 0, elem, nodes, outputs,
                                            lambda n: Reshape(name, ("optional", n)))
        else:
            outputs.append(helper.make_tensor_value_info(value, elem, None))
            def read_held(results):
                return results[value]

        def read(results):
            if not bool(results[has]):
                raise Reshape(name, ("optional", False))
            return Optional(read_held(results))
        return read


class Reshape(Exception):
    """ONNX Runtime's sequence or optional output is not shaped as the view expected: `actual`
    is its structure() as far as this run shows it."""

    def __init__(self, output, actual):
        super().__init__(f"{output}: {actual}")
        self.output = output
        self.actual = actual


def write_feeds(feeds, folder):
    os.makedirs(folder)
    for name, array in feeds.items():
        stem = os.path.join(folder, file_stem(name))
        if array.dtype == object:
            with open(stem + ".json", "w") as f:
                json.dump({"dims": list(array.shape), "data": [str(s) for s in array.flat]}, f)
        else:
            np.save(stem + ".npy", array)


def run_ort_once(node, view, work):
    """ONNX Runtime's outputs of `view`, read out as the test model's outputs."""
    model_path = os.path.join(work, "ort_model.onnx")
    onnx.save(view.model, model_path)
    write_feeds(view.feeds, os.path.join(work, "ort_inputs"))
    out = os.path.join(work, "ort_outputs")
    proc = subprocess.run([node, os.path.join(ROOT, "tests", "ort", "run_ort.js"), "--model",
                           model_path, "--inputs", os.path.join(work, "ort_inputs"), "--outputs",
                           out, "--optimization", "disabled"], capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.startswith("run_ort.js:")]
        raise NotRun(lines[-1][len("run_ort.js:"):].strip() if lines else
                     proc.stderr.strip()[-500:])
    results = {}
    for o in view.model.graph.output:
        stem = os.path.join(out, file_stem(o.name))
        if os.path.exists(stem + ".json"):
            with open(stem + ".json") as f:
                saved = json.load(f)
            results[o.name] = np.array(saved["data"], dtype=object).reshape(saved["dims"])
        else:
            results[o.name] = np.load(stem + ".npy")
    return {name: read(results) for name, read in view.readers}


def run_ort(node, model, inputs, shapes, work):
    """Runs ONNX Runtime; reruns once where its sequence lengths or optionals differ from
    `shapes` (ONNX's stored outputs), and with locale C.UTF-8 where en_US.UTF-8 is missing."""
    c_locale = False
    attempts = 4  # the locale, then up to 3 reshapes (optional none -> sequence -> its length)
    for attempt in range(attempts):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            return run_ort_once(node, OrtView(model, inputs, shapes, c_locale), work)
        except NotRun as e:
            if "construct locale" in str(e) and not c_locale:
                c_locale = True
                print("    ONNX Runtime lacks locale en_US.UTF-8: rerun with C.UTF-8")
                continue
            raise
        except Reshape as e:
            shapes[e.output] = e.actual
    raise NotRun(f"the view of the sequence and optional outputs did not settle in {attempts} runs")


# ----- qopt -----

def run_qopt(qopt_run, model_path, model, set_dir, work):
    """qopt-run's outputs of the unchanged test model on the stored .pb inputs."""
    inputs = os.path.join(work, "qopt_inputs")
    os.makedirs(inputs)
    for i, value_info in enumerate(model.graph.input):
        src = os.path.join(set_dir, f"input_{i}.pb")
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(inputs, file_stem(value_info.name) + ".pb"))
    out = os.path.join(work, "qopt_outputs")
    proc = subprocess.run([qopt_run, model_path, "--inputs", inputs, "--outputs", out],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError((proc.stdout + proc.stderr).strip()[-1500:])
    results = {}
    for o in model.graph.output:
        stem = os.path.join(out, file_stem(o.name))
        if os.path.exists(stem + ".npy"):
            results[o.name] = np.load(stem + ".npy", allow_pickle=False)
        else:
            results[o.name] = read_value(stem + ".pb", o.type)
    return results


# ----- driver -----

def run_test(args, test_dir, model, work):
    """('agreed' | 'disagreed' | 'not run', message)."""
    values_too = not (ops_of(model.graph) & RANDOM_OPS)
    model_path = os.path.join(test_dir, "model.onnx")
    sets = data_sets(test_dir)
    if not sets:
        return "not run", "the test has no data set"
    for set_dir in sets:
        inputs = {}
        for i, value_info in enumerate(model.graph.input):
            path = os.path.join(set_dir, f"input_{i}.pb")
            if os.path.exists(path):
                inputs[value_info.name] = read_value(path, value_info.type)
        shapes = {}
        for i, value_info in enumerate(model.graph.output):
            path = os.path.join(set_dir, f"output_{i}.pb")
            if os.path.exists(path):
                shapes[value_info.name] = structure(read_value(path, value_info.type))
        set_work = os.path.join(work, os.path.basename(set_dir))
        try:
            expected = run_ort(args.node, model, inputs, shapes, os.path.join(set_work, "ort"))
        except NotRun as e:
            return "not run", str(e)
        qopt_work = os.path.join(set_work, "qopt")
        shutil.rmtree(qopt_work, ignore_errors=True)
        os.makedirs(qopt_work)
        try:
            actual = run_qopt(args.qopt_run, model_path, model, set_dir, qopt_work)
        except RuntimeError as e:
            return "disagreed", f"qopt-run failed: {e}"
        for name, value in expected.items():
            diff = compare(actual[name], value, values_too)
            if diff:
                return "disagreed", f"{os.path.basename(set_dir)} output '{name}': {diff}"
    return "agreed", "" if values_too else "shapes and dtypes only (random op)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", required=True, help="comma-separated op types")
    parser.add_argument("--work", required=True)
    parser.add_argument("--qopt-run", required=True)
    parser.add_argument("--node", default="node")
    args = parser.parse_args()

    if not os.path.exists(os.path.join(ROOT, "node_modules", "onnxruntime-node", "package.json")):
        print(f"FAILED: ONNX Runtime (onnxruntime-node) is not installed under {ROOT}/"
              "node_modules; run `npm ci --ignore-scripts` in the repository root")
        return 1
    ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    tests = find_tests(set(ops))
    stats = {op: {"tests": 0, "compared": 0, "agreed": 0, "not_run": 0} for op in ops}
    failures = []
    for test_dir, model, used in tests:
        name = os.path.basename(test_dir)
        outcome, message = run_test(args, test_dir, model, os.path.join(args.work, name))
        for op in used:
            stats[op]["tests"] += 1
            if outcome == "not run":
                stats[op]["not_run"] += 1
            else:
                stats[op]["compared"] += 1
                stats[op]["agreed"] += outcome == "agreed"
        if outcome == "not run":
            print(f"{name}: not run by ONNX Runtime: {message}")
        elif outcome == "agreed":
            print(f"{name}: agreed{': ' + message if message else ''}")
        else:
            print(f"{name}: DISAGREED: {message}")
            failures.append(f"{name} ({', '.join(used)}): {message}")

    width = max(len("op"), *(len(op) for op in ops))
    print(f"\n{'op':<{width}}  tests  compared  agreed  not run by ONNX Runtime")
    for op in ops:
        s = stats[op]
        print(f"{op:<{width}}  {s['tests']:>5}  {s['compared']:>8}  {s['agreed']:>6}  "
              f"{s['not_run']:>23}")
    uncompared = [op for op in ops if stats[op]["compared"] == 0]
    if uncompared:
        failures.append(f"no test compared for: {', '.join(uncompared)}")
    if failures:
        print("\n".join(["FAILED:"] + failures))
        return 1
    print(f"{len(tests)} tests of {len(ops)} ops: qopt agrees with ONNX Runtime on every test "
          "ONNX Runtime runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
