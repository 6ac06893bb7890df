#!/usr/bin/env python3
"""Interpreter latency against ONNX Runtime on the same inputs, in one run.

  run_bench.py --build BUILD_DIR [--work DIR] [--runs N] [--models a,b] [--threads 1,0]
               [--corpus NAME[:SHAPE],...]

Builds the benchmark models (tests/models/build_models.py --set bench, random weights, full
224x224 sizes) into WORK, then for each model and thread count times qopt's interpreter
(BUILD_DIR/bin/qopt-interp-latency) and ONNX Runtime (tests/ort/run_ort.js, all graph
optimizations on, as deployed) alternately, checks that qopt's outputs agree within 1e-4
relative with ONNX Runtime's op for op (graph optimizations disabled: ONNX Runtime's fusions
reorder sums, and its optimized outputs differ from its own op-for-op ones by up to 1.7e-4 on
the detector; the difference to the optimized outputs and that self-difference are printed
beside it), and prints a Markdown table of the minimum latencies and the ratio qopt / ONNX Runtime
(wall time, and for one thread also CPU time per run, which a busy machine does not inflate).
Threads 0 means all cores. Needs `npm ci --ignore-scripts` in the repository root.

--corpus adds trained models of the real-model corpus (tests/corpus, fetched and checked by
fetch_corpus.py), each at the input shape given (e.g. ppocr-v4-det:1x3x640x640; default: the
corpus' shape) with the corpus' kind of input data, and each one's INT8 version
(`fold-bn,insert-qdq`, calibrated on 8 samples of that data): a row per model, its Q/DQ row, and
the Q/DQ model's time over the float model's on the interpreter. ONNX Runtime with all
optimizations runs Q/DQ models with integer kernels, which round differently from the Q/DQ
arithmetic the ONNX spec defines; a Q/DQ row's difference is reported, not checked: one rounding
boundary crossed upstream moves a value by a whole quantization step."""

import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

import build_models  # noqa: E402
import modelkit  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "corpus"))
import corpus_test  # noqa: E402
import fetch_corpus  # noqa: E402


def corpus_models(spec, work, build):
    """[(row name, model path, inputs dir, quantized: bool)] for --corpus."""
    entries = {e["name"]: e for e in fetch_corpus.load_corpus()["models"]}
    qopt = os.path.join(build, "bin", "qopt")
    rows = []
    for item in filter(None, spec.split(",")):
        name, _, shape = item.partition(":")
        if name not in entries:
            sys.exit(f"unknown corpus model {name}")
        path = fetch_corpus.fetch(only={name})[name]
        entry = entries[name]
        inputs = dict(entry["inputs"])
        if shape:
            (only,) = [k for k in inputs]
            inputs[only] = dict(inputs[only], shape=[int(d) for d in shape.split("x")])
        tag = name + (f"@{shape}" if shape else "")
        folder = os.path.join(work, tag)
        os.makedirs(folder, exist_ok=True)
        model = corpus_test.onnx.load(path)
        rng = np.random.default_rng(0)
        sample_dirs = []
        for s in range(9):  # sample 0 is timed; 1..8 calibrate
            d = os.path.join(folder, f"sample_{s}")
            os.makedirs(d, exist_ok=True)
            for i in corpus_test.graph_inputs(model):
                dtype = corpus_test.NUMPY_OF_ONNX[i.type.tensor_type.elem_type]
                np.save(os.path.join(d, corpus_test.file_stem(i.name) + ".npy"),
                        corpus_test.draw(inputs[i.name], dtype, rng))
            sample_dirs.append(d)
        calib = os.path.join(folder, "calib")
        os.makedirs(calib, exist_ok=True)
        for d in sample_dirs[1:]:
            link = os.path.join(calib, os.path.basename(d))
            if not os.path.exists(link):
                os.symlink(d, link)
        quantized = os.path.join(folder, "int8.onnx")
        if not os.path.exists(quantized):
            proc = subprocess.run([qopt, "-q", "-p", "fold-bn,insert-qdq", "--calib-data", calib,
                                   path, quantized], capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"quantizing {name} failed: {proc.stderr}")
        rows.append((tag, path, sample_dirs[0], False))
        rows.append((tag + " int8", quantized, sample_dirs[0], True))
    return rows


def run_json(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def max_relative_error(qopt_dir, ort_dir):
    names = json.load(open(os.path.join(ort_dir, "outputs.json")))
    worst = 0.0
    for name in names:
        stem = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name) + ".npy"
        a = np.load(os.path.join(qopt_dir, stem)).astype(np.float64)
        e = np.load(os.path.join(ort_dir, stem)).astype(np.float64)
        scale = np.abs(e) + np.mean(np.abs(e)) + 1e-30
        worst = max(worst, float(np.max(np.abs(a - e) / scale)))
    return worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--work", default=None)
    parser.add_argument("--runs", type=int, default=10,
                        help="timed runs per measurement, at least; more for short models, "
                             "so that each measurement takes --min-ms")
    parser.add_argument("--min-ms", type=float, default=500.0,
                        help="wall time one measurement should take at least: a short model's "
                             "minimum over few runs is mostly the machine's noise")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternations of qopt and ONNX Runtime; the minimum is reported")
    parser.add_argument("--models", default=",".join(build_models.MODEL_SETS["bench"]))
    parser.add_argument("--threads", default="1,0")
    parser.add_argument("--node", default="node")
    parser.add_argument("--corpus", default="",
                        help="corpus models, NAME or NAME:1x3x640x640, comma-separated")
    args = parser.parse_args()
    work = args.work or os.path.join(args.build, "bench", "interp", "models")
    latency = os.path.join(args.build, "bin", "qopt-interp-latency")
    run_ort = os.path.join(ROOT, "tests", "ort", "run_ort.js")

    jobs = []
    for name in filter(None, args.models.split(",")):
        model_path = os.path.join(work, name + ".onnx")
        if not os.path.exists(model_path):
            model, inputs = build_models.MODEL_SETS["bench"][name]()
            modelkit.save(model, inputs, work, name)
        jobs.append((name, model_path, os.path.join(work, name + ".inputs"), False))
    jobs += corpus_models(args.corpus, os.path.join(work, "corpus"), args.build)

    rows = []
    for name, model_path, inputs, quantized in jobs:
        for threads in args.threads.split(","):
            qopt_out = os.path.join(work, "out", f"{name}.t{threads}.qopt")
            ort_out = os.path.join(work, "out", f"{name}.t{threads}.ort")
            qopt_ms, ort_ms, qopt_cpu, ort_cpu, plain_cpu = [], [], [], [], []
            probe = run_json([latency, model_path, "--inputs", inputs, "--threads", threads,
                              "--runs", "3", "--warmup", "1"])
            runs = str(max(args.runs, math.ceil(args.min_ms / max(probe["min_ms"], 1e-3))))
            for _ in range(args.rounds):
                q = run_json([latency, model_path, "--inputs", inputs, "--outputs", qopt_out,
                              "--threads", threads, "--runs", runs, "--warmup", "2"])
                o = run_json([args.node, run_ort, "--model", model_path, "--inputs", inputs,
                              "--outputs", ort_out, "--optimization", "all",
                              "--threads", threads, "--runs", runs, "--warmup", "2"])
                qopt_ms.append(q["min_ms"])
                ort_ms.append(o["min_ms"])
                qopt_cpu.append(q["min_cpu_ms"])
                ort_cpu.append(o["min_cpu_ms"])
                if threads == "1":
                    # ONNX Runtime running the graph as given (no fusion, no layout change):
                    # the op-for-op reference for an interpreter.
                    plain = run_json([args.node, run_ort, "--model", model_path, "--inputs",
                                      inputs, "--optimization", "disabled", "--threads", threads,
                                      "--runs", runs, "--warmup", "2"])
                    plain_cpu.append(plain["min_cpu_ms"])
            # The difference is taken against ONNX Runtime running the graph op for op: with all
            # its optimizations, ONNX Runtime fuses and reorders sums, and differs from itself
            # (reported beside it).
            plain_out = ort_out + ".plain"
            run_json([args.node, run_ort, "--model", model_path, "--inputs", inputs,
                      "--outputs", plain_out, "--optimization", "disabled",
                      "--threads", threads, "--runs", "1", "--warmup", "0"])
            err = max_relative_error(qopt_out, plain_out)
            err_all = max_relative_error(qopt_out, ort_out)
            ort_self = max_relative_error(ort_out, plain_out)
            q, o = min(qopt_ms), min(ort_ms)
            qc, oc = min(qopt_cpu), min(ort_cpu)
            pc = min(plain_cpu) if plain_cpu else None
            rows.append((name, "all" if threads == "0" else threads, q, o, qc, oc, pc, err,
                         quantized, err_all, ort_self))
            print(f"{name} threads={threads}: qopt {q:.2f} ms ({qc:.2f} CPU ms), ONNX Runtime "
                  f"{o:.2f} ms ({oc:.2f} CPU ms), max relative difference {err:.1e} op for op, "
                  f"{err_all:.1e} optimized (ONNX Runtime's own {ort_self:.1e})",
                  file=sys.stderr)

    # CPU time per run is the latency a run would have on an idle core: the honest single-thread
    # figure on a shared machine. With several threads it sums their time, so only wall time is
    # compared there.
    print("| model | threads | qopt (ms) | ONNX Runtime (ms) | qopt / ORT (wall) | "
          "qopt / ORT (CPU time) | qopt / ORT without graph optimizations (CPU time) | "
          "max rel. diff, op for op | vs optimized (ORT's own) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, threads, q, o, qc, oc, pc, err, quantized, err_all, ort_self in rows:
        cpu_ratio = f"{qc / oc:.2f} ({qc:.1f} / {oc:.1f})" if threads == "1" else "-"
        plain_ratio = f"{qc / pc:.2f} ({qc:.1f} / {pc:.1f})" if pc else "-"
        diff = f"{err:.1e}" + (" (Q/DQ, not checked)" if quantized else "")
        print(f"| {name} | {threads} | {q:.2f} | {o:.2f} | {q / o:.2f} | {cpu_ratio} | "
              f"{plain_ratio} | {diff} | {err_all:.1e} ({ort_self:.1e}) |")
    by_key = {(r[0], r[1]): r for r in rows}
    quantized_rows = [r for r in rows if r[8]]
    if quantized_rows:
        print()
        print("| model | threads | Q/DQ on the interpreter / float on the interpreter |")
        print("|---|---|---|")
        for r in quantized_rows:
            base = by_key.get((r[0][:-len(" int8")], r[1]))
            if base:
                ratio = r[4] / base[4] if r[1] == "1" else r[2] / base[2]
                print(f"| {base[0]} | {r[1]} | {ratio:.2f} |")
    if any(row[7] > 1e-4 and not row[8] for row in rows):
        print("outputs differ from ONNX Runtime (op for op) by more than 1e-4 relative",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
