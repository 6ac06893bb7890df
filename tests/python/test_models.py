"""run, inspect and Session on real models: the bundled small MobileNetV2 with its calibration
samples, and trained models of the corpus (PaddleOCR's direction classifier, and its text
detector at a small input shape), fetched into the user's cache or skipped."""
import numpy as np
import onnx
import pytest

import qopt
from conftest import corpus_model, op_types


def int8_layers(report):
    return [layer["node"] for layer in report["layers"] if layer["precision"] == "INT8"]


def test_mnv2_with_the_bundled_samples(mnv2):
    model, calib = mnv2
    result = qopt.run(model, "fold-bn,insert-qdq{calibrator=percentile},"
                             "verify{cosine=0.98 sqnr=15}", calib=calib)
    assert "verify: PASSED" in result.log
    assert result.report["input"]["path"] == str(model)
    quantized = result.model_proto()
    assert "QuantizeLinear" in op_types(quantized)
    assert [i.name for i in quantized.graph.input] == ["input"]

    report = qopt.inspect(result.model, calib=calib)
    assert report["summary"]["shapes"]["inputs"] == {"input": [1, 3, 96, 96]}
    assert len(int8_layers(report)) >= 50  # of 52 Conv and a Gemm
    assert report["summary"]["int8-mac-share"] > 0.9

    sample = {"input": np.load(calib / "sample_000.npy")}
    (reference,) = qopt.Session(model).run(None, sample)
    (logits,) = qopt.Session(result.model).run(["logits"], sample)
    assert logits.shape == reference.shape == (1, 10)
    cosine = float(np.dot(logits.ravel(), reference.ravel()) /
                   (np.linalg.norm(logits) * np.linalg.norm(reference)))
    assert cosine > 0.98


def document_samples(shape, count, seed=5):
    """Inputs near the corpus' 'document:0.5:0.5' data: light pages, normalized."""
    rng = np.random.default_rng(seed)
    return [{"x": ((rng.random(shape) * 0.4 + 0.6 - 0.5) / 0.5).astype(np.float32)}
            for _ in range(count)]


def test_ppocr_mobile_cls():
    path = corpus_model("ppocr-mobile-cls")
    samples = document_samples((1, 3, 48, 192), 4)
    result = qopt.run(path, "fold-bn,insert-qdq,verify", calib=samples)
    assert "verify: PASSED" in result.log
    report = qopt.inspect(result.model, input_shapes={"x": (1, 3, 48, 192)})
    assert int8_layers(report)
    assert "INT8" in qopt.inspect(result.model, calib=samples, json=False)

    session = qopt.Session(result.model)
    (x,) = session.get_inputs()
    assert (x.name, x.shape[1], x.type) == ("x", 3, "tensor(float)")
    (probabilities,) = session.run(None, samples[0])
    assert probabilities.shape == (1, 2)
    np.testing.assert_allclose(probabilities.sum(), 1.0, rtol=1e-5)
    (reference,) = qopt.Session(path).run(None, samples[0])
    assert np.argmax(probabilities) == np.argmax(reference)


def test_ppocr_v4_det_at_a_small_shape():
    path = corpus_model("ppocr-v4-det")
    samples = document_samples((1, 3, 64, 64), 2)
    result = qopt.run(path, "fold-bn,insert-qdq", calib=samples, input_shapes="x:1x3x64x64")
    quantized = onnx.load_model_from_string(result.model)
    assert "QuantizeLinear" in op_types(quantized)

    report = qopt.inspect(result.model, input_shapes={"x": (1, 3, 64, 64)})
    assert report["summary"]["shapes"]["inputs"] == {"x": [1, 3, 64, 64]}
    assert len(int8_layers(report)) > 10

    (text_map,) = qopt.Session(result.model).run(None, samples[0])
    (reference,) = qopt.Session(path).run(None, samples[0])
    assert text_map.shape == reference.shape == (1, 1, 64, 64)
    assert np.all((text_map >= 0) & (text_map <= 1))  # a Sigmoid's probabilities


def test_a_missing_corpus_model_is_a_skip_not_a_failure():
    with pytest.raises(pytest.skip.Exception, match="no-such-model"):
        corpus_model("no-such-model")
