"""qopt.Session: the reference interpreter with ONNX Runtime's calling convention."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import qopt
from conftest import INPUT_SHAPE, gemm_relu


def test_outputs_equal_numpy():
    model, weight, bias = gemm_relu(outputs=("h", "y"))
    session = qopt.Session(model)
    x = np.random.default_rng(3).standard_normal(INPUT_SHAPE).astype(np.float32)
    h, y = session.run(None, {"x": x})
    np.testing.assert_allclose(h, x @ weight + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, np.maximum(x @ weight + bias, 0), rtol=1e-5, atol=1e-5)
    (only_y,) = session.run(["y"], {"x": x})
    np.testing.assert_array_equal(only_y, y)


def test_inputs_and_outputs_are_described():
    session = qopt.Session(gemm_relu()[0].SerializeToString())
    (x,) = session.get_inputs()  # the initializers W and B are not inputs to feed
    assert (x.name, x.shape, x.type) == ("x", [8, 64], "tensor(float)")
    assert [(o.name, o.shape, o.type) for o in session.get_outputs()] == [
        ("y", [8, 32], "tensor(float)")]


DTYPES = {
    np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
    np.float16: TensorProto.FLOAT16, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8,
    np.int16: TensorProto.INT16, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64,
    np.bool_: TensorProto.BOOL,
}


def identity(elem_type, dims):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["b"])], "identity",
        [helper.make_tensor_value_info("a", elem_type, dims)],
        [helper.make_tensor_value_info("b", elem_type, dims)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("dtype", list(DTYPES), ids=lambda t: np.dtype(t).name)
def test_every_dtype_round_trips(dtype):
    session = qopt.Session(identity(DTYPES[dtype], ["n", 3]))
    assert session.get_inputs()[0].shape == ["n", 3]
    a = (np.arange(12).reshape(4, 3) % 5 - 2).astype(dtype)
    (b,) = session.run(None, {"a": a})
    assert b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)


def test_a_non_contiguous_feed_is_read_in_order():
    session = qopt.Session(identity(TensorProto.FLOAT, [3, 4]))
    a = np.arange(12, dtype=np.float32).reshape(4, 3).T
    np.testing.assert_array_equal(session.run(None, {"a": a})[0], a)


@pytest.mark.parametrize("feeds, message", [
    ({"x": np.zeros(INPUT_SHAPE, np.float64)}, "input 'x': expected tensor(float), got a numpy "
                                               "array of dtype float64"),
    ({"x": np.zeros(64, np.float32)}, "input 'x': expected rank 2, got an array of shape (64,)"),
    ({"x": np.zeros((8, 63), np.float32)}, "input 'x': dim 1 is 64"),
    ({"x": np.zeros(INPUT_SHAPE, np.float32), "z": np.zeros(1)}, "input 'z': the model has no "
                                                                 "such input"),
    ({}, "input 'x': not fed"),
])
def test_bad_feeds_name_the_input(feeds, message):
    session = qopt.Session(gemm_relu()[0])
    with pytest.raises(qopt.UsageError) as raised:
        session.run(None, feeds)
    assert message in str(raised.value)


def test_an_unknown_output():
    session = qopt.Session(gemm_relu()[0])
    with pytest.raises(qopt.UsageError, match="output 'h'"):
        session.run(["h"], {"x": np.zeros(INPUT_SHAPE, np.float32)})


def test_a_model_with_an_op_the_interpreter_lacks():
    graph = helper.make_graph(
        [helper.make_node("NoSuchOp", ["a"], ["b"], domain="example.unknown")], "unknown",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("example.unknown", 1)])
    with pytest.raises(qopt.Error, match="NoSuchOp"):
        qopt.Session(model)
