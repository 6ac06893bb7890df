"""qopt.Session: a model run by qopt's reference interpreter, called as ONNX Runtime's
InferenceSession is."""
import tempfile

from . import _qopt
from ._models import model_file


class NodeArg:
    """An input or output as ONNX Runtime's NodeArg describes it. shape: a list of ints, dim
    names (str) and None for unknown dims, or None when the rank is unknown; type:
    "tensor(float)" and the like."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name, shape, type):
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class Session:
    """Loads `model` (a file name, bytes or an onnx.ModelProto) once; `threads` run each model
    run (0: every core)."""

    def __init__(self, model, threads=1):
        with tempfile.TemporaryDirectory(prefix="qopt-") as folder:
            path, display = model_file(model, folder)
            self._session = _qopt.Session(path, display, threads)

    def get_inputs(self):
        """The graph inputs to feed (initializers listed as inputs are left out)."""
        return [NodeArg(*arg) for arg in self._session.inputs()]

    def get_outputs(self):
        return [NodeArg(*arg) for arg in self._session.outputs()]

    def run(self, output_names, input_feed):
        """The outputs named in `output_names` (None or empty: all), as numpy arrays, computed
        from `input_feed` ({input name: numpy array}). A dtype, rank or static dim other than
        the input's, an unknown name or a missing input raises qopt.UsageError naming it."""
        if isinstance(output_names, str):
            raise TypeError("output_names: expected a list of names or None, got a str")
        names = list(output_names) if output_names else None
        return self._session.run(names, dict(input_feed))
