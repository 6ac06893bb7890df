"""The exceptions qopt raises: what the qopt command reports as an error and an exit code."""


class Error(Exception):
    """A failure the qopt command reports as `qopt: error: <message>`.

    kind: "usage", "input", "verification" or "internal"; exit_code: the command's exit status
    (1 when a check failed, 2 otherwise); log: what the run printed before it failed.
    """

    def __init__(self, message, kind="internal", exit_code=2):
        super().__init__(message)
        self.kind = kind
        self.exit_code = exit_code
        self.log = ""


class UsageError(Error):
    """A usage or input error (exit code 2): a bad option, an unknown pass, an unreadable model."""


class VerificationError(Error):
    """A check failed (exit code 1). The command still writes the output model and the report,
    which say what failed: here they are .model (bytes) and .report (dict)."""

    def __init__(self, message, kind="verification", exit_code=1):
        super().__init__(message, kind, exit_code)
        self.model = None
        self.report = None


_CLASSES = {"usage": UsageError, "input": UsageError, "verification": VerificationError}


def make_error(kind, message, exit_code):
    """The exception for an error of `kind` (the C++ side raises through this too)."""
    return _CLASSES.get(kind, Error)(message, kind, exit_code)
