"""Long calls leave the GIL to other threads while C++ works, and Ctrl-C stops a run: SIGINT
raises KeyboardInterrupt out of qopt.run within a second or so, and nothing is left behind (no
output, no temporary folder)."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

import qopt
from conftest import SANITIZED, TESTS, conv_stack


class Ticker:
    """A thread that counts while it gets the GIL: `ticks` moves only while others release it."""

    def __init__(self):
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.ticks += 1
            time.sleep(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def test_long_calls_release_the_gil():
    model = conv_stack(channels=32, size=64)
    rng = np.random.default_rng(2)
    samples = [{"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)} for _ in range(40)]
    started = {}

    def calib():
        yield from samples
        started["ticks"] = ticker.ticks  # written: from here on C++ works

    with Ticker() as ticker:
        begin = time.monotonic()
        result = qopt.run(model, "insert-qdq,verify", calib=calib())
        run_ticks = ticker.ticks - started["ticks"]
        run_seconds = time.monotonic() - begin
        before = ticker.ticks
        qopt.inspect(result.model)
        session = qopt.Session(result.model)
        for sample in samples[:10]:
            session.run(None, sample)
        other_ticks = ticker.ticks - before
    # The ticker sleeps 1 ms a tick: a call that kept the GIL would leave it at 0 or 1.
    assert run_ticks >= 20, f"{run_ticks} ticks in a {run_seconds:.2f} s run"
    assert other_ticks >= 5


def test_a_run_on_another_thread():
    # Signals reach only the main thread; elsewhere a run simply runs.
    model = conv_stack()
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(result=qopt.run(model, "")))
    thread.start()
    thread.join()
    assert outcome["result"].model == qopt.run(model, "").model

# A run of about 15 s on two threads (minutes under the sanitizers), two on any machine:
# calibration and a verify over 500 samples of a model that takes tens of ms per sample, the
# most the run goes on once the flag is set.
SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import numpy as np
    import qopt
    from conftest import conv_stack

    def samples():
        rng = np.random.default_rng(1)
        for _ in range(500):
            yield {{"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}}
        # Every sample is written: the C++ side starts now.
        print("running", flush=True)

    try:
        result = qopt.run(conv_stack(channels=64, size=64), "insert-qdq,verify{{samples=0}}",
                          calib=samples(), threads=2)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
    with open(sys.argv[1], "wb") as f:
        f.write(result.model)
    print("finished", flush=True)
""")


def test_ctrl_c_stops_a_run(tmp_path):
    script = tmp_path / "long_run.py"
    script.write_text(SCRIPT.format(tests=TESTS))
    output = tmp_path / "out.onnx"
    temp = tmp_path / "temp"  # where the run's temporary folder goes
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))
    child = subprocess.Popen([sys.executable, str(script), str(output)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "running\n"
        time.sleep(1.0)  # well into the calibration
        assert child.poll() is None, "the run ended before it could be interrupted"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert stdout == "interrupted\n", stderr
    # Uncaught, KeyboardInterrupt ends Python by SIGINT; the traceback shows where it was raised.
    assert child.returncode == -signal.SIGINT, stderr
    assert "KeyboardInterrupt" in stderr
    assert "_qopt.run_command(" in stderr
    # The C++ side stops at its next sample; then the 500 samples' folder is removed. All well
    # before the 15 s the run takes.
    assert took < (30 if SANITIZED else 5), f"SIGINT took {took:.1f} s to stop the run"
    assert not output.exists()
    assert os.listdir(temp) == []
