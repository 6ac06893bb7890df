"""Models and samples the module's tests share, built here with onnx.helper."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

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
