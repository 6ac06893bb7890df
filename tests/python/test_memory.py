"""Samples stream: a run over 1,000 calibration samples that a generator makes one at a time
peaks at about the memory of a run over 50."""
import subprocess
import sys
import textwrap

import onnx
import pytest

from conftest import SANITIZED, conv_stack

# Prints the process's peak resident memory (kB) after a run over COUNT samples of 110 KB each:
# 110 MB in all for 1,000, which a copy of them anywhere would show.
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import qopt

    def samples(count):
        rng = np.random.default_rng(1)
        for _ in range(count):
            yield {"x": rng.standard_normal((1, 3, 96, 96)).astype(np.float32)}

    # The run keeps decoded samples up to an eighth of --max-memory (SampleCache, 64 MB at
    # most): with 64M that bound is 8 MB, small enough not to hide a leak per sample.
    qopt.run(sys.argv[1], "insert-qdq", calib=samples(int(sys.argv[2])), max_memory="64M")
    with open("/proc/self/status") as status:
        print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
""")


def peak_kb(script, model, count):
    proc = subprocess.run([sys.executable, str(script), str(model), str(count)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout)


@pytest.mark.skipif(SANITIZED, reason="the sanitizers' shadow memory and quarantine grow with "
                                      "what is allocated, not with what is held")
def test_memory_stays_flat_while_samples_stream(tmp_path):
    script = tmp_path / "stream.py"
    script.write_text(SCRIPT)
    model = tmp_path / "model.onnx"
    onnx.save(conv_stack(channels=8, size=96), str(model))
    few = peak_kb(script, model, 50)
    many = peak_kb(script, model, 1000)
    assert many <= 1.3 * few + 32 * 1024, f"peak {many} kB over 1,000 samples, {few} kB over 50"
