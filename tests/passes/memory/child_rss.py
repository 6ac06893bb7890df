"""Peak resident memory of one command, not inflated by the process that starts it.

On Linux a child's ru_maxrss starts from its parent's high-water mark: fork copies the parent's
address space and exec keeps the larger of the old and the new peak (vfork and posix_spawn alike).
A Python process that has imported numpy, built models or written a data set would put its own
peak under every command it starts, even after freeing the memory. So the command is started by a
fresh interpreter that has imported next to nothing and reports its child's rusage: the floor is
that interpreter's few MB.
"""
import collections
import os
import shutil
import subprocess
import sys
import tempfile

Run = collections.namedtuple("Run", "code peak_rss_bytes wall_s timed_out cpu_s")

# argv: result file, timeout seconds (0: none), command. Writes "exit maxrss_kib wall timed_out
# cpu" (cpu: user + system seconds of the command).
_RUNNER = r"""
import os, signal, sys, time
result, timeout, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
start = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    except OSError as e:
        os.write(2, ("cannot run %s: %s\n" % (argv[0], e)).encode())
    os._exit(127)
expired = []
def expire(*_):
    expired.append(1)
    os.kill(pid, signal.SIGKILL)
if timeout > 0:
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
_, status, usage = os.wait4(pid, 0)
signal.setitimer(signal.ITIMER_REAL, 0)
with open(result, "w") as f:
    f.write("%d %d %.6f %d %.6f\n" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss,
                                     time.monotonic() - start, len(expired),
                                     usage.ru_utime + usage.ru_stime))
"""


def run(cmd, stdout=None, stderr=None, timeout=0):
    """Runs `cmd` (stdout and stderr as subprocess takes them) and returns Run: its exit code
    (negative: the signal that ended it), peak RSS in bytes, wall seconds, whether `timeout`
    seconds (0: none) ran out and it was killed, and its CPU seconds (user + system)."""
    exe = shutil.which(cmd[0]) or cmd[0]
    with tempfile.TemporaryDirectory(prefix="qopt-rss-") as tmp:
        result = os.path.join(tmp, "rusage")
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", _RUNNER, result, str(timeout or 0),
                               os.path.abspath(exe)] + [str(a) for a in cmd[1:]],
                              stdout=stdout, stderr=stderr)
        if not os.path.exists(result):
            raise RuntimeError(f"could not measure {cmd[0]}: the runner exited {proc.returncode}")
        with open(result, encoding="utf-8") as f:
            code, maxrss_kib, wall, timed_out, cpu = f.read().split()
    return Run(int(code), int(maxrss_kib) * 1024, float(wall), timed_out == "1", float(cpu))
