"""Models as the C++ side reads them: from a file, with a name for its messages."""
import os
import sys


def model_file(model, folder):
    """(file name, name for messages) of `model`: a file name (str or os.PathLike) as it is; the
    bytes of a model or an onnx.ModelProto written to a file in `folder`."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fsdecode(os.fspath(model))
        return path, path
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _written(model, folder), "<model bytes>"
    onnx = sys.modules.get("onnx")  # a ModelProto comes from an imported onnx
    if onnx is not None and isinstance(model, onnx.ModelProto):
        return _written(model.SerializeToString(), folder), "<onnx.ModelProto>"
    raise TypeError(
        f"model: expected a file name, bytes or an onnx.ModelProto, got {type(model).__name__}")


def _written(data, folder):
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(data)
    return path
