"""qopt.run: the qopt command on one model, in this process."""
import json
import os
import tempfile

from . import _qopt
from ._data import data_path
from ._errors import VerificationError, make_error
from ._models import model_file
from ._spec import shapes_text, values_text


class Result:
    """What a run produced: .model (the output model's bytes), .report (the --report JSON as a
    dict), .log (what the command prints to stderr)."""

    def __init__(self, model, report, log):
        self.model = model
        self.report = report
        self.log = log

    def model_proto(self):
        """The output model as an onnx.ModelProto (needs the onnx package)."""
        import onnx

        return onnx.load_model_from_string(self.model)

    def __repr__(self):
        return f"<qopt.Result: {len(self.model)} bytes, pipeline {self.report.get('pipeline')!r}>"


def run(model, pipeline, *, calib=None, eval=None, preprocess=None, target=None,
        input_shapes=None, input_values=None, threads=0, max_memory=None, seed=0, plugins=(),
        verbose=False):
    with tempfile.TemporaryDirectory(prefix="qopt-") as folder:
        path, display = model_file(model, folder)
        pipeline_text, pipeline_is_file = _pipeline(pipeline)
        report_file = os.path.join(folder, "report.json")
        out, log, failure = _qopt.run_command(
            model=path,
            display_name=display,
            pipeline=pipeline_text,
            pipeline_is_file=pipeline_is_file,
            report_file=report_file,
            calib_data=data_path(calib, os.path.join(folder, "calib"), "calib"),
            eval_data=data_path(eval, os.path.join(folder, "eval"), "eval"),
            preprocess=preprocess or "",
            target=target or "",
            input_shapes=shapes_text(input_shapes),
            input_values=values_text(input_values),
            max_memory="" if max_memory is None else str(max_memory),
            threads=threads,
            seed=seed,
            plugins=[os.fsdecode(os.fspath(p)) for p in plugins],
            verbose=verbose)
        report = _report(report_file, path, display)
    if failure is not None:
        error = make_error(*failure)
        error.log = log
        if isinstance(error, VerificationError):
            error.model = out
            error.report = report
        raise error
    return Result(out, report, log)


# The reference, shared with the command's help: it is what runDriver prints for help here.
run.__doc__ = _qopt.help()


def _pipeline(pipeline):
    """(text, is a file name): a path object or an existing *.qp file is --pipeline-file."""
    if isinstance(pipeline, os.PathLike):
        return os.fsdecode(os.fspath(pipeline)), True
    if not isinstance(pipeline, str):
        raise TypeError(f"pipeline: expected a str or a file name, got {type(pipeline).__name__}")
    if pipeline.endswith(".qp") and os.path.isfile(pipeline):
        return pipeline, True
    return pipeline, False


def _report(report_file, model_path, display_name):
    """The report the run wrote (None when it failed before writing one). A model given in
    memory was read from a temporary file, gone now: the report names no input file, and its
    failure names the model as the exception does."""
    if not os.path.exists(report_file):
        return None
    with open(report_file, encoding="utf-8") as f:
        report = json.load(f)
    if model_path != display_name:
        report["input"]["path"] = None
        failure = report.get("failure")
        if failure is not None and failure.startswith(model_path + ": "):
            report["failure"] = display_name + failure[len(model_path):]
    return report
