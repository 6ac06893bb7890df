"""qopt from Python: the qopt command's pipelines, `qopt inspect`, the pass listing and the
reference interpreter, run in this process by the same C++ code.

    import qopt
    result = qopt.run("model.onnx", "fold-bn,insert-qdq,verify", calib=samples)
    open("int8.onnx", "wb").write(result.model)
    outputs = qopt.Session(result.model).run(None, {"input": x})
"""
from ._errors import Error, UsageError, VerificationError
from ._qopt import version as _version
from ._run import Result, run
from ._session import NodeArg, Session
from ._tools import inspect, list_passes, load_inputs

__version__ = _version()

__all__ = [
    "Error",
    "NodeArg",
    "Result",
    "Session",
    "UsageError",
    "VerificationError",
    "inspect",
    "list_passes",
    "load_inputs",
    "run",
]
