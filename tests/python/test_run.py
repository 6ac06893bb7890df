"""qopt.run: pipelines on models given as a file, bytes or a ModelProto, with samples from
Python."""
import os
import tempfile

import onnx

import qopt
from conftest import Reader, op_types


def test_insert_qdq_with_a_list_of_samples(model, samples):
    result = qopt.run(model, "insert-qdq", calib=samples)
    assert "QuantizeLinear" in op_types(onnx.load_model_from_string(result.model))
    assert result.report["pipeline"].startswith("insert-qdq{calibrator=auto ")
    assert result.report["passes"][0]["name"] == "insert-qdq"
    # A model given in memory was read from a temporary file, which the report does not name.
    assert result.report["input"]["path"] is None
    assert isinstance(result.log, str)


def test_a_calibration_data_reader_gives_what_the_list_gives(model, samples):
    from_list = qopt.run(model, "insert-qdq", calib=samples)
    reader = Reader(samples)
    from_reader = qopt.run(model, "insert-qdq", calib=reader)
    assert reader.calls == len(samples) + 1  # the last call returned None
    assert from_reader.model == from_list.model
    assert "QuantizeLinear" in op_types(from_reader.model_proto())


def test_samples_are_written_one_at_a_time_and_removed(model, samples, tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    written = []

    def count_written(call):
        written.append(sum(len(os.listdir(calib)) for calib in temp.glob("qopt-*/calib")))

    qopt.run(model, "insert-qdq", calib=Reader(samples, count_written))
    # Sample k is asked for once the k before it are on disk, not after all were collected.
    assert written == list(range(len(samples) + 1))
    assert os.listdir(temp) == []


def test_file_bytes_and_model_proto_give_the_same_model(model, samples, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    from_path = qopt.run(path, "insert-qdq", calib=samples)
    from_str = qopt.run(str(path), "insert-qdq", calib=samples)
    from_bytes = qopt.run(path.read_bytes(), "insert-qdq", calib=samples)
    from_proto = qopt.run(model, "insert-qdq", calib=samples)
    assert from_path.model == from_str.model == from_bytes.model == from_proto.model
    assert from_path.report["input"]["path"] == str(path)
    assert from_path.report["input"]["sha256"] == from_bytes.report["input"]["sha256"]


def test_a_pipeline_file(model, samples, tmp_path):
    pipeline = tmp_path / "int8.qp"
    pipeline.write_text("# INT8\nfold-bn\ninsert-qdq{calibrator=max}\n")
    from_file = qopt.run(model, str(pipeline), calib=samples)
    from_text = qopt.run(model, "fold-bn,insert-qdq{calibrator=max}", calib=samples)
    assert from_file.report["pipeline"] == from_text.report["pipeline"]
    assert from_file.model == from_text.model


def test_calibration_data_from_a_folder(model, samples, tmp_path):
    import numpy as np

    for index, sample in enumerate(samples):
        (tmp_path / f"{index}").mkdir()
        np.save(tmp_path / f"{index}" / "x.npy", sample["x"])
    from_folder = qopt.run(model, "insert-qdq", calib=tmp_path)
    assert from_folder.model == qopt.run(model, "insert-qdq", calib=samples).model


def test_options_reach_the_run(model, samples):
    result = qopt.run(model, "insert-qdq", calib=samples, target="tensorrt-8.6", seed=7,
                      threads=1, max_memory="1G", verbose=True)
    assert result.report["target"] == "tensorrt-8.6"
    assert result.report["seed"] == 7
    assert "remark: insert-qdq" in result.log
    # The command's note about a pass folder beside the executable (here the interpreter) is
    # not passed on: the module's passes come from beside libqopt.so.
    assert "no built-in pass folder" not in result.log


def test_help_documents_the_options():
    for keyword in ("calib", "eval", "preprocess", "resize=", "target", "input_shapes",
                    "input_values", "threads", "max_memory", "seed", "plugins", "verbose",
                    "VerificationError", "KeyboardInterrupt"):
        assert keyword in qopt.run.__doc__
    assert "preprocess" in qopt.inspect.__doc__


def test_an_empty_pipeline_writes_the_model_back(model):
    result = qopt.run(model, "")
    assert op_types(result.model_proto()) == ["Gemm", "Relu"]
