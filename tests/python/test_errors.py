"""What the command reports as an error and exit code raises qopt.Error's subclasses, with the
command's message; the process survives every one."""
import onnx
import pytest

import qopt
from conftest import op_types


def test_a_failed_check_carries_the_model_and_report(model, samples):
    with pytest.raises(qopt.VerificationError) as raised:
        qopt.run(model, "insert-qdq,verify{sqnr=200}", calib=samples)
    error = raised.value
    assert isinstance(error, qopt.Error)
    assert (error.kind, error.exit_code) == ("verification", 1)
    assert "SQNR" in str(error) and "< 200 dB" in str(error)
    assert str(error).startswith("<onnx.ModelProto>: ")
    assert "QuantizeLinear" in op_types(onnx.load_model_from_string(error.model))
    assert error.report["failure"] == str(error)
    assert "verify: FAILED" in error.log


def test_an_unknown_pass(model):
    with pytest.raises(qopt.UsageError) as raised:
        qopt.run(model, "dce,no-such-pass")
    assert (raised.value.kind, raised.value.exit_code) == ("usage", 2)
    assert "unknown pass 'no-such-pass'" in str(raised.value)


def test_a_bad_pass_option(model):
    with pytest.raises(qopt.UsageError, match="no-such-option"):
        qopt.run(model, "insert-qdq{no-such-option=1}")


def test_a_corrupt_model():
    corrupt = b"\x08\x07\x12\xff\xff\xff\xff\x0f" + bytes(range(256))
    with pytest.raises(qopt.UsageError) as raised:
        qopt.run(corrupt, "dce")
    assert raised.value.kind == "input"
    assert str(raised.value).startswith("<model bytes>: ")


def test_a_missing_model_file_is_named(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(qopt.UsageError, match=str(missing)):
        qopt.run(missing, "dce")


@pytest.mark.parametrize("options, message", [
    ({"threads": -1}, "threads must be from 0 to 1024"),
    ({"target": "tensorrrt"}, "target: "),
    ({"max_memory": "lots"}, "--max-memory"),
    ({"input_shapes": "x:8xy"}, "x:8xy"),
])
def test_bad_options(model, options, message):
    with pytest.raises(qopt.UsageError, match=message):
        qopt.run(model, "dce", **options)


def test_samples_that_do_not_fit_the_model(model):
    with pytest.raises(qopt.UsageError, match="'x'"):
        qopt.run(model, "insert-qdq", calib=[{"not_x": [1.0]}])
    with pytest.raises(qopt.UsageError, match="no samples"):
        qopt.run(model, "insert-qdq", calib=[])


@pytest.mark.parametrize("spec, message", [
    ("resize=banana", "resize=banana: expected WxH"),
    ("no-such-key=1", "unknown key 'no-such-key'"),
])
def test_a_bad_preprocess_spec(model, samples, spec, message):
    with pytest.raises(qopt.UsageError, match=message):
        qopt.run(model, "insert-qdq", calib=samples, preprocess=spec)
    with pytest.raises(qopt.UsageError, match=message):
        qopt.inspect(model, calib=samples, preprocess=spec)
