"""qopt.load_inputs: what a data path and a preprocessing spec feed the model, as numpy arrays
equal to the same preprocessing written with numpy."""
import numpy as np
import pytest

import qopt


def test_images_with_a_spec_are_what_numpy_computes(mnv2, tmp_path):
    image = pytest.importorskip("PIL.Image")
    model, _ = mnv2
    pages = tmp_path / "pages"
    pages.mkdir()
    rng = np.random.default_rng(3)
    expected = []
    for index in range(2):
        pixels = rng.integers(0, 256, (96, 96, 3), dtype=np.uint8)
        image.fromarray(pixels).save(pages / f"page-{index}.png")
        bgr = pixels[:, :, ::-1].astype(np.float64)
        x = (bgr / 255.0 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
        expected.append(x.transpose(2, 0, 1)[None].astype(np.float32))
    spec = "scale=1/255 mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channels=bgr"
    samples = qopt.load_inputs(model, pages, preprocess=spec)
    assert [source.endswith(f"page-{i}.png") for i, (source, _) in enumerate(samples)] == [True] * 2
    for (_, inputs), want in zip(samples, expected):
        (name, array), = inputs.items()
        assert array.dtype == np.float32 and array.shape == (1, 3, 96, 96)
        np.testing.assert_array_equal(array, want)
    assert len(qopt.load_inputs(model, pages, preprocess=spec, limit=1)) == 1


def test_npy_folders_read_as_calibration_reads_them(mnv2):
    model, calib = mnv2
    samples = qopt.load_inputs(model, calib)
    files = sorted(calib.iterdir())
    assert len(samples) == len(files)
    (_, first), = samples[:1]
    np.testing.assert_array_equal(next(iter(first.values())), np.load(files[0]))


def test_a_file_that_does_not_fit_names_it(mnv2, tmp_path):
    image = pytest.importorskip("PIL.Image")
    model, _ = mnv2
    image.fromarray(np.zeros((8, 8, 4), np.uint8)).save(tmp_path / "a.png")
    (tmp_path / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    with pytest.raises(qopt.UsageError, match="b.png"):
        qopt.load_inputs(model, tmp_path)
    with pytest.raises(qopt.UsageError, match="preprocess"):
        qopt.load_inputs(model, tmp_path, preprocess="colour=rgb")
