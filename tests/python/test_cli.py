"""The module and the commands give the same results: qopt.run writes the bytes the qopt command
writes for the same pipeline and data, qopt.inspect prints what `qopt inspect` prints, and
Session computes what qopt-run computes."""
import json
import os
import subprocess

import numpy as np
import pytest

import qopt
from conftest import corpus_model


def command(*args):
    """Runs a command; fails the test with its stderr when it fails. Sanitized commands link the
    sanitizer runtime themselves: the one preloaded into this interpreter is not passed on."""
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"{args[0]} exited {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout


def write_samples(folder, samples):
    """The folder layout qopt.run writes samples given in Python to (qopt/_data.py)."""
    folder.mkdir()
    for index, sample in enumerate(samples):
        (folder / f"{index:012d}").mkdir()
        for name, array in sample.items():
            np.save(folder / f"{index:012d}" / f"{name}.npy", array)
    return folder


PIPELINES = [
    "fold-bn,insert-qdq{calibrator=percentile},verify{cosine=0.98 sqnr=15}",
    "fold-bn,insert-qdq",  # calibrator=auto
    "fold-bn,equalize,insert-qdq{calibrator=mse},bias-correct",
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_run_gives_the_commands_bytes(mnv2, tmp_path, qopt_command, pipeline):
    model, calib = mnv2
    out = tmp_path / "out.onnx"
    command(qopt_command, "-q", "-p", pipeline, "--calib-data", calib, "--seed", 3, model, out)
    result = qopt.run(model, pipeline, calib=calib, seed=3)
    assert result.model == out.read_bytes()


def test_samples_from_python_give_the_commands_bytes(mnv2, tmp_path, qopt_command):
    model, calib = mnv2
    samples = [{"input": np.load(path)} for path in sorted(calib.glob("*.npy"))]
    folder = write_samples(tmp_path / "samples", samples)
    out = tmp_path / "out.onnx"
    pipeline = "fold-bn,insert-qdq{calibrator=entropy}"
    command(qopt_command, "-q", "-p", pipeline, "--calib-data", folder, model, out)
    assert qopt.run(model, pipeline, calib=iter(samples)).model == out.read_bytes()


def test_a_corpus_model_at_a_given_shape(tmp_path, qopt_command):
    path = corpus_model("ppocr-mobile-cls")
    rng = np.random.default_rng(6)
    samples = [{"x": rng.standard_normal((1, 3, 48, 96)).astype(np.float32)} for _ in range(3)]
    folder = write_samples(tmp_path / "samples", samples)
    out = tmp_path / "out.onnx"
    pipeline = "fold-bn,insert-qdq{calibrator=max}"
    command(qopt_command, "-q", "-p", pipeline, "--calib-data", folder,
            "--input-shapes", "x:1x3x48x96", path, out)
    result = qopt.run(path, pipeline, calib=samples, input_shapes={"x": (1, 3, 48, 96)})
    assert result.model == out.read_bytes()


def test_images_with_preprocess_give_the_commands_bytes(mnv2, tmp_path, qopt_command):
    image = pytest.importorskip("PIL.Image")
    model, _ = mnv2
    pages = tmp_path / "pages"
    pages.mkdir()
    rng = np.random.default_rng(7)
    for index in range(3):
        pixels = rng.integers(0, 256, (120, 100, 3), dtype=np.uint8)
        image.fromarray(pixels).save(pages / f"page-{index}.png")
    spec = "resize=96x96 scale=1/255 mean=0.485,0.456,0.406 std=0.229,0.224,0.225"
    out = tmp_path / "out.onnx"
    pipeline = "fold-bn,insert-qdq{calibrator=max}"
    command(qopt_command, "-q", "-p", pipeline, "--calib-data", pages, "--preprocess", spec,
            model, out)
    result = qopt.run(model, pipeline, calib=pages, preprocess=spec)
    assert result.model == out.read_bytes()
    # The spec reached the data set: another one reads other inputs.
    other = qopt.run(model, pipeline, calib=pages, preprocess="resize=96x96 scale=1/255")
    assert other.model != result.model


def test_inspect_prints_what_the_command_prints(mnv2, qopt_command):
    model, calib = mnv2
    quantized = qopt.run(model, "fold-bn,insert-qdq{calibrator=max}", calib=calib).model
    path = calib.parent / "int8.onnx"
    path.write_bytes(quantized)
    assert qopt.inspect(path, calib=calib) == json.loads(
        command(qopt_command, "inspect", "--json", "--calib-data", calib, path))
    assert qopt.inspect(path, json=False) == command(qopt_command, "inspect", path)


def run_command_outputs(qopt_run_command, model, feeds, folder):
    inputs = folder / "inputs"
    outputs = folder / "outputs"
    inputs.mkdir()
    outputs.mkdir()
    for name, array in feeds.items():
        np.save(inputs / f"{name}.npy", array)
    command(qopt_run_command, model, "--inputs", inputs, "--outputs", outputs)
    return {path.stem: np.load(path) for path in outputs.glob("*.npy")}


@pytest.mark.parametrize("quantized", [False, True], ids=["fp32", "int8"])
def test_session_computes_what_qopt_run_computes(mnv2, tmp_path, qopt_run_command, quantized):
    model, calib = mnv2
    if quantized:
        int8 = tmp_path / "int8.onnx"
        int8.write_bytes(qopt.run(model, "fold-bn,insert-qdq", calib=calib).model)
        model = int8
    feeds = {"input": np.load(calib / "sample_003.npy")}
    expected = run_command_outputs(qopt_run_command, model, feeds, tmp_path)
    (logits,) = qopt.Session(model).run(None, feeds)
    assert list(expected) == ["logits"]
    assert logits.dtype == expected["logits"].dtype
    np.testing.assert_array_equal(logits, expected["logits"])


def test_session_on_a_corpus_model_computes_what_qopt_run_computes(tmp_path, qopt_run_command):
    path = corpus_model("ppocr-v4-det")
    feeds = {"x": np.random.default_rng(8).random((1, 3, 64, 64), dtype=np.float32)}
    expected = run_command_outputs(qopt_run_command, path, feeds, tmp_path)
    session = qopt.Session(path)
    names = [output.name for output in session.get_outputs()]
    got = dict(zip(names, session.run(None, feeds)))
    assert sorted(got) == sorted(expected)
    for name, array in got.items():
        np.testing.assert_array_equal(array, expected[name])
