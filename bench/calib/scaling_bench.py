#!/usr/bin/env python3
"""How `qopt --pipeline-file pipelines/trt-int8.qp` scales with the size of the calibration set.

Passes that read calibration or evaluation data are meant to stream it: read a sample, use it,
drop it, keeping a bounded amount per sample. Then peak memory stays nearly flat as the data set
grows while wall time grows about linearly. This measures both, and checks that the thread count
does not change the result.

Models:
  ppocr-v4-det  the trained PP-OCRv4 text detector of the corpus (tests/corpus/fetch_corpus.py),
                at 1x3x640x640, pages drawn as tests/corpus/corpus_test.py draws them
                (document_image), normalized as corpus.json says (document:0.45:0.226)
  ppocr-v4-rec  the trained PP-OCRv4 recognizer, at 1x3x48x320, lines drawn likewise
                (document:0.5:0.5)
  gpt2          bench/quality's GPT-2 (rebuilt from its committed skeleton by
                bench/quality/rebuild_models.py into its cache), input_ids [1,128] int64 drawn
                as bench/quality/make_data.py draws token ids

Data is written once per model into a cache outside the repository: <data>/<model>/samples/ holds
one .npy per sample (sample i is drawn from its own seed, so it is the same whatever the largest
count asked for; a larger count only adds files), and <data>/<model>/<count>/ holds symlinks to
the first <count> of them, which is what --calib-data reads. The default <data> is
$QOPT_SCALING_CACHE, else $XDG_CACHE_HOME/qopt/scaling, else ~/.cache/qopt/scaling.

For each model and each count of --counts, qopt runs once with --threads and --time-passes; its
peak resident set (ru_maxrss from os.wait4 on that one child, started through
tests/passes/memory/child_rss.py so that this script's own peak is not counted in it), wall
seconds and CPU seconds (user + system) are recorded, and the per-pass seconds parsed from its stderr. Then at --identity-count
qopt runs once with --threads 1 and once with --threads 2 and the two output models' SHA-256 are
compared.

Prints a markdown table (model | samples | peak RSS (MB) | RSS / RSS at smallest count | wall (s)
| CPU (s) | wall and CPU per added sample (ms): the slope from the count before, flat when time
grows linearly | seconds per pass) and one identity line per model. Exits 1, saying why,
when a qopt run fails (any non-zero exit, a crash or --timeout) or the two identity outputs differ;
2 on a usage or setup error.

  scaling_bench.py [--models ppocr-v4-det,ppocr-v4-rec,gpt2] [--counts 32,256,1024]
      [--identity-count 32] [--threads 0] [--max-memory SIZE] [--qopt build/bin/qopt]
      [--work DIR] [--data DIR] [--json FILE] [--timeout SECONDS]

For a quick check: --models ppocr-v4-rec --counts 4,8 --identity-count 4. The full default run
writes about 5 GB of detector samples and takes hours on a small machine.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "corpus"))
sys.path.insert(0, os.path.join(ROOT, "bench", "quality"))
sys.path.insert(0, os.path.join(ROOT, "tests", "passes", "memory"))

import child_rss  # noqa: E402
import fetch_corpus  # noqa: E402

PIPELINE = os.path.join(ROOT, "pipelines", "trt-int8.qp")

# Per model: its input, the shape every sample has (and --input-shapes fixes), and where it
# comes from (corpus or bench/quality).
MODELS = {
    "ppocr-v4-det": {"source": "corpus", "input": "x", "shape": [1, 3, 640, 640]},
    "ppocr-v4-rec": {"source": "corpus", "input": "x", "shape": [1, 3, 48, 320]},
    "gpt2": {"source": "quality", "input": "input_ids", "shape": [1, 128]},
}


class BenchError(Exception):
    pass


def default_data():
    return fetch_corpus.user_cache("scaling", "QOPT_SCALING_CACHE")


def model_path(name):
    if MODELS[name]["source"] == "corpus":
        try:
            return fetch_corpus.fetch(only=[name])[name]
        except fetch_corpus.FetchError as e:
            raise BenchError(f"{name}: {e}")
    import rebuild_models
    try:
        return rebuild_models.rebuild(name, rebuild_models.default_cache(),
                                      log=lambda m: print(m, file=sys.stderr))
    except rebuild_models.RebuildError as e:
        raise BenchError(f"{name}: {e}")


def sample_drawer(name):
    """(description of the data, fn(index) -> one sample as the model takes it)."""
    spec = MODELS[name]
    if spec["source"] == "corpus":
        import corpus_test
        entry = {e["name"]: e for e in fetch_corpus.load_corpus()["models"]}[name]
        data = entry["inputs"][spec["input"]]["data"]
        drawn = {"shape": spec["shape"], "data": data}

        def draw(i):
            rng = np.random.default_rng(zlib.crc32(f"{name}/{i}".encode()))
            return corpus_test.draw(drawn, np.float32, rng)
        return f"{data} float32 {spec['shape']}", draw
    import make_data  # bench/quality's token id law (imports Pillow)

    def draw(i):
        rng = np.random.default_rng(zlib.crc32(f"{name}/{i}".encode()))
        return make_data.token_ids(rng, spec["shape"][1]).reshape(spec["shape"])
    return f"make_data.token_ids int64 {spec['shape']}", draw


def prepare_data(name, counts, root):
    """<root>/<name>/<count>/ for each count, each a folder of symlinks to the first <count>
    samples; returns {count: folder} and one sample's bytes."""
    what, draw = sample_drawer(name)
    base = os.path.join(root, name)
    samples = os.path.join(base, "samples")
    stamp = os.path.join(base, "data.json")
    # Samples drawn otherwise (another shape, another law) must not be mixed with these.
    if os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as f:
            if json.load(f).get("data") != what:
                shutil.rmtree(base)
    os.makedirs(samples, exist_ok=True)
    with open(stamp, "w", encoding="utf-8") as f:
        json.dump({"data": what}, f)
    largest = max(counts)
    made = 0
    for i in range(largest):
        path = os.path.join(samples, f"sample_{i:05d}.npy")
        if os.path.exists(path):
            continue
        if made == 0:
            print(f"{name}: drawing samples into {samples}", file=sys.stderr)
        with open(path + ".part", "wb") as f:
            np.save(f, draw(i))
        os.replace(path + ".part", path)
        made += 1
    folders = {}
    for count in counts:
        folder = os.path.join(base, str(count))
        names = [f"sample_{i:05d}.npy" for i in range(count)]
        if not os.path.isdir(folder) or sorted(os.listdir(folder)) != names:
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            for n in names:
                os.symlink(os.path.join("..", "samples", n), os.path.join(folder, n))
        folders[count] = folder
    return folders, os.path.getsize(os.path.join(samples, "sample_00000.npy"))


PASS_LINE = re.compile(r"^\s*([0-9.]+)\s+[0-9.]+%\s+(\d+)\s+(\S.*?)\s*$")


def pass_seconds(stderr):
    """{pass: seconds} from --time-passes' table (summed where a pass name repeats)."""
    seconds = {}
    in_table = False
    for line in stderr.splitlines():
        if "pass timing" in line:
            in_table = True
            continue
        if not in_table:
            continue
        m = PASS_LINE.match(line)
        if m:
            seconds[m.group(3)] = seconds.get(m.group(3), 0.0) + float(m.group(1))
    return seconds


def run_qopt(args, model, data, threads, out, log, input_shape):
    """Runs qopt and returns (exit code, wall s, peak RSS bytes, stderr less the command)."""
    cmd = [args.qopt, "--pipeline-file", PIPELINE, "--calib-data", data, "--threads", str(threads),
           "--time-passes", "--input-shapes", input_shape]
    if args.max_memory:
        cmd += ["--max-memory", args.max_memory]
    cmd += [model, out]
    with open(log, "w", encoding="utf-8") as err:
        err.write(" ".join(cmd) + "\n")
        err.flush()
        run = child_rss.run(cmd, stdout=subprocess.DEVNULL, stderr=err, timeout=args.timeout)
    with open(log, encoding="utf-8", errors="replace") as f:
        f.readline()  # the command
        stderr = f.read()
    if run.timed_out:
        stderr += f"\nkilled after --timeout {args.timeout:g} s"
    return run.code, run.wall_s, run.peak_rss_bytes, stderr, run.cpu_s


def failure(name, what, rc, stderr, log):
    tail = [l for l in stderr.strip().splitlines() if l.strip()][-3:]
    why = f"killed by signal {-rc}" if rc < 0 else f"exit {rc}"
    return f"{name} {what}: qopt {why} (log {log}): " + " | ".join(tail)


def measure(args, name, failures):
    spec = MODELS[name]
    model = model_path(name)
    counts = sorted(set(args.counts))
    folders, sample_bytes = prepare_data(name, counts + [args.identity_count], args.data)
    shape = f"{spec['input']}:{'x'.join(str(d) for d in spec['shape'])}"
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    rows = []
    for count in counts:
        out = os.path.join(work, f"{count}.onnx")
        log = os.path.join(work, f"{count}.log")
        print(f"{name}: {count} samples, --threads {args.threads}", file=sys.stderr)
        rc, wall, rss, stderr, cpu = run_qopt(args, model, folders[count], args.threads, out, log,
                                              shape)
        row = {"model": name, "samples": count, "threads": args.threads, "exit": rc,
               "wall_s": wall, "cpu_s": cpu, "peak_rss_bytes": rss, "data_bytes": count * sample_bytes,
               "pass_seconds": pass_seconds(stderr), "log": log}
        rows.append(row)
        if rc != 0:
            failures.append(failure(name, f"with {count} samples", rc, stderr, log))
        if os.path.exists(out):
            os.remove(out)  # GPT-2's outputs are hundreds of MB each
    identity = {"model": name, "samples": args.identity_count, "runs": []}
    digests = []
    for threads in (1, 2):
        out = os.path.join(work, f"identity-threads{threads}.onnx")
        log = os.path.join(work, f"identity-threads{threads}.log")
        print(f"{name}: {args.identity_count} samples, --threads {threads}", file=sys.stderr)
        rc, wall, rss, stderr, _ = run_qopt(args, model, folders[args.identity_count], threads,
                                            out, log, shape)
        digest = fetch_corpus.sha256_of(out) if rc == 0 and os.path.exists(out) else None
        identity["runs"].append({"threads": threads, "exit": rc, "wall_s": wall,
                                 "peak_rss_bytes": rss, "sha256": digest, "log": log})
        if rc != 0:
            failures.append(failure(name, f"identity run --threads {threads}", rc, stderr, log))
        digests.append(digest)
        if os.path.exists(out):
            os.remove(out)
    identity["identical"] = None if None in digests else digests[0] == digests[1]
    if identity["identical"] is False:
        failures.append(f"{name}: --threads 1 and --threads 2 wrote different models with "
                        f"{args.identity_count} samples ({digests[0][:16]} vs {digests[1][:16]})")
    return {"model": name, "model_path": model, "sample_bytes": sample_bytes,
            "data": folders, "rows": rows, "identity": identity}


def table(results):
    """Wall and CPU seconds with, from the second count on, the seconds each added sample cost
    (the slope from the count before): linear growth keeps that slope flat, whatever the fixed
    cost of a run."""
    lines = ["| model | samples | peak RSS (MB) | RSS / RSS at smallest count | wall (s) | "
             "CPU (s) | wall per added sample (ms) | CPU per added sample (ms) | "
             "seconds per pass |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        first = r["rows"][0]["peak_rss_bytes"] if r["rows"] else 0
        before = None
        for row in r["rows"]:
            rss = row["peak_rss_bytes"]
            passes = ", ".join(f"{p} {s:.2f}" for p, s in row["pass_seconds"].items())
            if row["exit"] != 0:
                passes = f"FAILED (exit {row['exit']}) " + passes
            slopes = "- | -"
            if before is not None:
                added = row["samples"] - before["samples"]
                slopes = (f"{1000 * (row['wall_s'] - before['wall_s']) / added:.0f} | "
                          f"{1000 * (row['cpu_s'] - before['cpu_s']) / added:.0f}")
            lines.append(f"| {row['model']} | {row['samples']} | {rss / 1e6:.0f} | "
                         f"{rss / first if first else float('nan'):.2f} | {row['wall_s']:.1f} | "
                         f"{row['cpu_s']:.1f} | {slopes} | {passes} |")
            before = row
    return "\n".join(lines)


def identity_line(r):
    ident = r["identity"]
    runs = ", ".join(
        f"--threads {x['threads']}: {x['sha256'][:16] if x['sha256'] else 'exit ' + str(x['exit'])}"
        f" ({x['wall_s']:.1f} s, {x['peak_rss_bytes'] / 1e6:.0f} MB)" for x in ident["runs"])
    verdict = {True: "byte-identical", False: "DIFFERENT", None: "not compared (a run failed)"}
    return (f"identity {r['model']} at {ident['samples']} samples: {verdict[ident['identical']]}"
            f" ({runs})")


def size_text(n):
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def counts_list(text):
    try:
        counts = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sample counts: {text!r}")
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"sample counts must be positive: {text!r}")
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--counts", type=counts_list, default=[32, 256, 1024])
    parser.add_argument("--identity-count", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="qopt --threads (0: every core)")
    parser.add_argument("--max-memory", default="", help="qopt --max-memory (default: qopt's)")
    parser.add_argument("--qopt", default=os.path.join(ROOT, "build", "bin", "qopt"))
    parser.add_argument("--work", default="",
                        help="logs go here (default: a new temporary folder); output models are "
                             "deleted once measured")
    parser.add_argument("--data", default=default_data(), help="sample cache (outside the tree)")
    parser.add_argument("--json", default="")
    parser.add_argument("--timeout", type=float, default=0, help="seconds per qopt run (0: none)")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if args.identity_count < 1:
        parser.error("--identity-count must be positive")
    if not os.access(args.qopt, os.X_OK):
        parser.error(f"{args.qopt} is not an executable qopt (build it, or pass --qopt)")
    args.qopt = os.path.abspath(args.qopt)
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="qopt-scaling-"))
    os.makedirs(args.work, exist_ok=True)

    failures = []
    results = []
    try:
        for name in models:
            results.append(measure(args, name, failures))
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"qopt {args.qopt}, pipeline {os.path.relpath(PIPELINE, ROOT)}, "
          f"--threads {args.threads}, --max-memory {args.max_memory or 'default'}; logs in {args.work}")
    for r in results:
        print(f"{r['model']}: one sample {size_text(r['sample_bytes'])}, data sets "
              + ", ".join(f"{row['samples']}: {size_text(row['data_bytes'])}" for row in r["rows"]))
    print()
    print(table(results))
    print()
    for r in results:
        print(identity_line(r))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"qopt": args.qopt, "pipeline": os.path.relpath(PIPELINE, ROOT),
                       "threads": args.threads, "max_memory": args.max_memory or None,
                       "results": results, "failures": failures}, f, indent=1)
            f.write("\n")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
