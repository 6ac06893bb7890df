"""Calibration and evaluation samples given in Python, written where --calib-data reads them:
one folder per sample (read in name order), each holding <input name>.npy per input, with
characters outside [A-Za-z0-9_.-] in names replaced by '_'."""
import os
import re
from collections.abc import Mapping

from ._errors import UsageError

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def data_path(data, folder, what):
    """The --calib-data / --eval-data value for `data` ("" for None): a file or folder name as it
    is; an iterable of {input name: array} dicts, or an object with get_next() (ONNX Runtime's
    CalibrationDataReader), written to `folder` one sample at a time."""
    if data is None:
        return ""
    if isinstance(data, (str, os.PathLike)):
        return os.fsdecode(os.fspath(data))
    os.mkdir(folder)
    count = 0
    for sample in _samples(data, what):
        _write_sample(sample, os.path.join(folder, f"{count:012d}"), what, count)
        count += 1
    if count == 0:
        raise UsageError(f"{what}: no samples given", "usage", 2)
    return folder


def _samples(data, what):
    get_next = getattr(data, "get_next", None)
    if callable(get_next):
        return iter(get_next, None)
    try:
        return iter(data)
    except TypeError:
        raise TypeError(f"{what}: expected a file or folder name, an iterable of {{input name: "
                        f"array}} dicts or an object with get_next(), got "
                        f"{type(data).__name__}") from None


def _write_sample(sample, folder, what, index):
    import numpy

    if not isinstance(sample, Mapping):
        raise TypeError(f"{what}: sample {index} is a {type(sample).__name__}, not a dict of "
                        f"{{input name: array}}")
    os.mkdir(folder)
    names = {}
    for name, value in sample.items():
        stem = _UNSAFE.sub("_", str(name))
        if stem in names:
            raise UsageError(f"{what}: sample {index}: inputs '{names[stem]}' and '{name}' would "
                             f"both be read from {stem}.npy", "usage", 2)
        names[stem] = name
        numpy.save(os.path.join(folder, stem + ".npy"), numpy.asarray(value))
