"""qopt.inspect and qopt.list_passes: `qopt inspect` and `qopt --list-passes` as data."""
import json as _json
import os
import tempfile

from . import _qopt
from ._data import data_path
from ._models import model_file
from ._spec import shapes_text, values_text


def inspect(model, input_shapes=None, input_values=None, calib=None, seed=0, json=True,
            preprocess=None):
    """The precision each compute layer will run in on TensorRT, as `qopt inspect` reports it:
    its --json output as a dict, or with json=False its table as text. `model`, `calib`,
    `preprocess`, `input_shapes` and `input_values` are taken as qopt.run takes them (`calib`
    gives the shapes: its first sample's); `seed` seeds the random inputs drawn where no data is
    given. Raises as qopt.run does; Ctrl-C raises KeyboardInterrupt once the one run of the
    interpreter it needs is over."""
    with tempfile.TemporaryDirectory(prefix="qopt-") as folder:
        path, display = model_file(model, folder)
        text = _qopt.inspect(
            model=path,
            display_name=display,
            json=json,
            input_shapes=shapes_text(input_shapes),
            input_values=values_text(input_values),
            calib_data=data_path(calib, os.path.join(folder, "calib"), "calib"),
            preprocess=preprocess or "",
            seed=seed)
    return _json.loads(text) if json else text


def list_passes(plugins=()):
    """Every pass a pipeline can name (the built-in ones, QOPT_PLUGIN_PATH's and those of
    `plugins`), sorted by name: dicts with name, summary, origin (the module file) and options
    (dicts with name, type, choices, default and help)."""
    return _qopt.list_passes([os.fsdecode(os.fspath(p)) for p in plugins])


def load_inputs(model, data, preprocess=None, input_shapes=None, input_values=None, limit=0):
    """What calibration and evaluation would feed `model` from `data` (a file or folder, as
    --calib-data takes: .npy, .pb, .npz, images or audio clips with `preprocess`): a list of
    (source, {input name: numpy array}) pairs, the first `limit` samples (0: all). The same
    reader and checks as qopt.run's, so a spec can be compared with one's own preprocessing.
    Raises qopt.UsageError naming the file for data that does not fit the model."""
    with tempfile.TemporaryDirectory(prefix="qopt-") as folder:
        path, display = model_file(model, folder)
        return _qopt.load_inputs(
            model=path,
            display_name=display,
            data=os.fsdecode(os.fspath(data)),
            preprocess=preprocess or "",
            input_shapes=shapes_text(input_shapes),
            input_values=values_text(input_values),
            limit=limit)
