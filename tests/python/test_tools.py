"""qopt.list_passes and qopt.inspect: the command's pass listing and `qopt inspect` as data."""
import pytest

import qopt
from conftest import gemm_relu


def test_list_passes_has_insert_qdq_with_its_options():
    passes = {entry["name"]: entry for entry in qopt.list_passes()}
    insert_qdq = passes["insert-qdq"]
    assert insert_qdq["summary"].startswith("Calibrates and inserts QuantizeLinear")
    assert insert_qdq["origin"].endswith("insert-qdq.so")
    calibrator = next(o for o in insert_qdq["options"] if o["name"] == "calibrator")
    assert calibrator["type"] == "enum"
    assert calibrator["default"] == "auto"
    assert "max" in calibrator["choices"]
    assert list(passes) == sorted(passes)


def test_a_missing_plugin_raises(tmp_path):
    with pytest.raises(qopt.UsageError, match="missing.so"):
        qopt.list_passes(plugins=[tmp_path / "missing.so"])


def test_inspect_reports_the_quantized_layer(model, samples):
    quantized = qopt.run(model, "insert-qdq", calib=samples).model
    report = qopt.inspect(quantized)
    (layer,) = report["layers"]
    assert (layer["node"], layer["precision"]) == ("gemm", "INT8")
    assert qopt.inspect(model)["layers"][0]["precision"] == "FP32"
    table = qopt.inspect(quantized, json=False)
    assert "gemm" in table and "INT8" in table


def test_inspect_takes_input_shapes():
    model = gemm_relu(batch="n")[0]
    report = qopt.inspect(model, input_shapes={"x": (2, 64)})
    assert report["summary"]["shapes"]["inputs"] == {"x": [2, 64]}
    assert report["summary"]["total-macs"] == 2 * 64 * 32
