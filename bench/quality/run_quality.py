#!/usr/bin/env python3
"""The quantization quality benchmark: qopt's quantizers beside ONNX Runtime's, on the same models
and the same data, scored against the FP32 model with the same code (quality_common.py).

For each model (three trained PaddleOCR models of tests/corpus, and the random-weight ViT-B/16 and
GPT-2 of bench/quality/models), it

  1. writes the calibration and evaluation splits of make_data.py's data as qopt's sample folders
     (the data are checked against the SHA-256 that ort_reference.json recorded);
  2. runs the FP32 model with ONNX Runtime (onnxruntime-node, CPU, graph optimizations
     disabled) on the evaluation split, and compares its outputs with the ones the machine that
     made ort_reference.json got;
  3. runs every qopt method the build has (`qopt --list-passes` says which; a method whose pass
     or option is missing is "n/a", one that fails is reported with qopt's message) with
     --calib-data on the calibration split, runs the result with ONNX Runtime as in 2, and
     scores it: output SQNR (dB) and cosine against FP32, and the task metric;
  4. merges ort_reference.json's rows, writes results.json and results.md, prints the table and
     checks the goals (PASS / FAIL / N/A lines; the exit code stays 0 unless the bench itself
     failed).

Methods whose fully defaulted pipeline (`qopt --print-pipeline`) equals an earlier one's give the
same model, so they are run once and share the result.

  run_quality.py [--qopt BUILD/bin/qopt] [--models a,b] [--work DIR] [--data DIR]
                 [--eval-limit MODEL=N ...] [--threads N] [--out-dir DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "corpus"))

import make_data  # noqa: E402
import quality_common as qc  # noqa: E402
import rebuild_models  # noqa: E402

ORT_REFERENCE = os.path.join(HERE, "ort_reference.json")
QOPT_TIMEOUT_S = 1800
DEFAULT_METHOD = "qopt-trt-int8"  # the shipped pipeline, what a user runs
PLAIN_METHOD = "qopt-plain"       # fold-bn,insert-qdq with every default: plain per-channel INT8


class BenchError(Exception):
    pass


def log(message):
    print(message, file=sys.stderr, flush=True)


def default_qopt():
    for candidate in (os.path.join(ROOT, "build", "bin", "qopt"), "/work/main/build/bin/qopt"):
        if os.access(candidate, os.X_OK):
            return candidate
    return os.path.join(ROOT, "build", "bin", "qopt")


def default_work():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "qopt", "bench", "work")


# ---------------------------------------------------------------------------------------------
# What the qopt binary has


def qopt_capabilities(qopt, env):
    """{pass name: {option: type text}} from `qopt --list-passes`, which loads every pass module
    (a module half written by a running build fails here, before any model is quantized)."""
    proc = subprocess.run([qopt, "--list-passes"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise BenchError(f"{qopt} --list-passes failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    passes = {}
    current = None
    for line in proc.stdout.splitlines():
        top = re.match(r"^([A-Za-z0-9_-]+)(\(<pipeline>\))?: ", line)
        if top:
            current = passes.setdefault(top.group(1), {})
            continue
        opt = re.match(r"^\s+([A-Za-z0-9_-]+) \((.*?), default", line)
        if opt and current is not None:
            current[opt.group(1)] = opt.group(2)
    return passes


def enum_values(type_text):
    m = re.match(r"enum (\S+)", type_text or "")
    return m.group(1).split("|") if m else []


class Method:
    def __init__(self, mid, label, family, pipelines=None, pipeline_file=None, missing=None, only=None):
        self.id = mid
        self.label = label
        self.family = family          # int8, fp8, int4 or mixed
        self.pipelines = pipelines or []  # candidate -p strings, the first that runs is used
        self.pipeline_file = pipeline_file
        self.missing = missing        # why the build cannot run it, or None
        self.only = only              # model names it applies to (None: all)


def qopt_methods(caps, pipelines_dir):
    iq = caps.get("insert-qdq", {})
    calibrators = enum_values(iq.get("calibrator"))
    methods = []
    for c in ("max", "percentile", "entropy", "mse", "auto"):
        methods.append(Method(f"qopt-{c}", f"fold-bn,insert-qdq{{calibrator={c}}}", "int8",
                              [f"fold-bn,insert-qdq{{calibrator={c}}}"],
                              missing=None if c in calibrators else f"insert-qdq has no calibrator={c}"))
    methods.append(Method(PLAIN_METHOD, "fold-bn,insert-qdq (defaults: per-channel INT8 weights)", "int8",
                          ["fold-bn,insert-qdq"]))
    trt = os.path.join(pipelines_dir, "trt-int8.qp")
    methods.append(Method(DEFAULT_METHOD, "pipelines/trt-int8.qp (shipped default)", "int8",
                          pipeline_file=trt, missing=None if os.path.exists(trt) else f"{trt} is missing"))

    def need(*names):
        absent = [n for n in names if n not in caps]
        return f"no pass {', '.join(absent)} in this build" if absent else None

    methods.append(Method("qopt-equalize", "fold-bn,equalize,insert-qdq", "int8",
                          ["fold-bn,equalize,insert-qdq"], missing=need("equalize")))
    methods.append(Method("qopt-bias-correct", "fold-bn,insert-qdq,bias-correct", "int8",
                          ["fold-bn,insert-qdq,bias-correct", "fold-bn,bias-correct,insert-qdq"],
                          missing=need("bias-correct")))
    methods.append(Method("qopt-equalize-bias-correct", "fold-bn,equalize,insert-qdq,bias-correct", "int8",
                          ["fold-bn,equalize,insert-qdq,bias-correct", "fold-bn,equalize,bias-correct,insert-qdq"],
                          missing=need("equalize", "bias-correct")))
    gptq_missing = (None if "gptq" in enum_values(iq.get("weight-rounding"))
                    else "insert-qdq has no weight-rounding=gptq")
    nearest = "fold-bn,equalize,insert-qdq{weight-rounding=nearest},bias-correct"
    methods.append(Method("qopt-nearest", f"{nearest} (trt-int8.qp, weights rounded to nearest)", "int8",
                          [nearest], missing=gptq_missing or need("equalize", "bias-correct")))
    methods.append(Method("qopt-smooth", "fold-bn,smooth,insert-qdq", "int8",
                          ["fold-bn,smooth,insert-qdq"], missing=need("smooth")))
    precision = iq.get("precision")
    fp8_missing = None
    if precision is None:
        fp8_missing = "insert-qdq has no precision option"
    elif enum_values(precision) and "fp8" not in enum_values(precision):
        fp8_missing = f"insert-qdq precision is {precision}"
    methods.append(Method("qopt-fp8", "fold-bn,insert-qdq{precision=fp8}", "fp8",
                          ["fold-bn,insert-qdq{precision=fp8}"], missing=fp8_missing))
    qw = caps.get("quantize-weights")
    int4_missing = None
    int4 = "quantize-weights{bits=4}"
    if qw is None:
        int4_missing = "no pass quantize-weights in this build"
    elif "bits" not in qw:
        int4_missing = "quantize-weights has no bits option"
    else:
        block = next((o for o in ("block-size", "block", "group-size") if o in qw), None)
        int4 = f"quantize-weights{{bits=4 {block}=128}}" if block else int4
    methods.append(Method("qopt-int4", int4, "int4", [int4], missing=int4_missing,
                          only=("vit-b16", "gpt2")))
    # The calibration-data methods, where the build has them.
    for m in ("awq", "gptq"):
        missing = int4_missing or (None if m in enum_values((qw or {}).get("method"))
                                   else f"quantize-weights has no method={m}")
        p = int4.replace("}", f" method={m}}}") if "{" in int4 else int4
        methods.append(Method(f"qopt-int4-{m}", p, "int4", [p], missing=missing,
                              only=("vit-b16", "gpt2")))
    methods.append(Method("qopt-mixed-precision", "fold-bn,insert-qdq,mixed-precision (defaults)", "mixed",
                          ["fold-bn,insert-qdq,mixed-precision"], missing=need("mixed-precision")))
    return methods


def snapshot_qopt(qopt, folder):
    """A private copy of the build's qopt (bin/qopt, its libraries and pass modules, which qopt
    finds next to its own binary), so a build that relinks while the bench runs changes nothing
    under it. Returns the copied binary and the environment to run it with."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(qopt)))
    lib = os.path.join(prefix, "lib")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "bin"))
    shutil.copy2(qopt, os.path.join(folder, "bin", "qopt"))
    shutil.copytree(lib, os.path.join(folder, "lib"), symlinks=True,
                    ignore=shutil.ignore_patterns("*.a", "cmake", "pkgconfig"))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(folder, "lib") + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.pop("QOPT_PLUGIN_PATH", None)
    return os.path.join(folder, "bin", "qopt"), env


def canonical(qopt, env, method, pipeline):
    """The fully defaulted pipeline, or None when qopt cannot print it."""
    cmd = [qopt, "--print-pipeline"] + (["--pipeline-file", method.pipeline_file] if pipeline is None else ["-p", pipeline])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc.stdout.strip() if proc.returncode == 0 else None


# ---------------------------------------------------------------------------------------------
# Data and models


def check_data(data_dir, reference):
    manifest_path = os.path.join(data_dir, "manifest.json")
    if not os.path.exists(manifest_path):
        log(f"rendering the benchmark data into {data_dir} (make_data.py)")
        subprocess.run([sys.executable, os.path.join(HERE, "make_data.py"), "--out", data_dir],
                       check=True, stdout=subprocess.DEVNULL)
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    if reference is None:
        return "no ort_reference.json"
    differ = []
    for key, want in reference["data_sha256"].items():
        path = os.path.join(data_dir, key + ".npy")
        if not os.path.exists(path) or qc.sha256_file(path) != want:
            differ.append(key)
    if differ:
        raise BenchError(
            f"{data_dir}: {', '.join(differ)} differ from the data ort_reference.json was made on "
            "(make_data.py renders with Pillow and the DejaVu fonts; another Pillow or FreeType "
            "draws other pixels). Regenerate ort_reference.json on this data, or pass "
            "--no-ort-reference to compare qopt's methods only")
    return f"equal to ort_reference.json's ({len(manifest['files'])} files, SHA-256)"


def model_paths(names):
    import fetch_corpus

    paths = {}
    corpus = [n for n in names if qc.MODELS[n]["source"] == "corpus"]
    if corpus:
        try:
            paths.update(fetch_corpus.fetch(only=set(corpus)))
        except fetch_corpus.FetchError as e:
            raise BenchError(f"corpus: {e}")
    for n in names:
        if qc.MODELS[n]["source"] == "device":
            try:
                paths[n] = rebuild_models.rebuild(n, rebuild_models.default_cache(), log=log)
            except rebuild_models.RebuildError as e:
                raise BenchError(str(e))
    return paths


def write_samples(model, split, data_dir, folder, limit=None):
    spec = qc.MODELS[model]
    samples = qc.load_split(data_dir, model, split)
    if limit:
        samples = samples[:limit]
    shutil.rmtree(folder, ignore_errors=True)
    for i, raw in enumerate(samples):
        d = os.path.join(folder, f"sample_{i:03d}")
        os.makedirs(d)
        np.save(os.path.join(d, spec["input"] + ".npy"), qc.model_input(model, raw))
    return len(samples)


# ---------------------------------------------------------------------------------------------
# Running


class Runner:
    def __init__(self, args, qopt, env):
        self.qopt = qopt
        self.env = env
        self.threads = args.threads
        self.node = shutil.which("node")
        if self.node is None:
            raise BenchError("node is not installed (scripts/install-deps.sh installs it)")
        roots = [ROOT, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(args.qopt))))]
        self.node_path = next((os.path.join(r, "node_modules") for r in roots
                               if os.path.isdir(os.path.join(r, "node_modules", "onnxruntime-node"))), None)
        if self.node_path is None:
            raise BenchError(f"onnxruntime-node is not installed in {' or '.join(roots)}: run "
                             "'npm ci --ignore-scripts' there")

    def ort_outputs(self, model_path, samples, out_dir, preactivation=True):
        """The model's first output on every sample, and its pre-activation outputs
        (qc.with_preactivation_output) or None; `preactivation` False skips looking for them
        (models whose FP32 form has none: the transformers, hundreds of MB to load again)."""
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        probe = os.path.join(out_dir, "with-pre-activation.onnx")
        pre = qc.with_preactivation_output(model_path, probe) if preactivation else None
        env = dict(os.environ, NODE_PATH=self.node_path)
        proc = subprocess.run([self.node, os.path.join(HERE, "ort_eval.js"), "--model",
                               probe if pre else model_path, "--samples", samples, "--outputs",
                               out_dir, "--threads", str(self.threads)],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise BenchError(f"ONNX Runtime could not run {model_path}: {proc.stderr.strip()[-400:]}")
        files = sorted(f for f in os.listdir(out_dir) if re.fullmatch(r"sample_\d+\.npy", f))
        outputs = [np.load(os.path.join(out_dir, f)) for f in files]
        pres = [np.load(os.path.join(out_dir, f[:-4] + ".out1.npy")) for f in files] if pre else None
        shutil.rmtree(out_dir, ignore_errors=True)
        return outputs, pres

    def qopt_run(self, method, pipeline, calib, src, dst, report):
        cmd = [self.qopt, "-q", "--calib-data", calib, "--report", report]
        cmd += ["--pipeline-file", method.pipeline_file] if pipeline is None else ["-p", pipeline]
        cmd += [src, dst]
        start = time.time()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=QOPT_TIMEOUT_S, env=self.env)
        except subprocess.TimeoutExpired:
            return 124, f"timed out after {QOPT_TIMEOUT_S} s", time.time() - start
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        return proc.returncode, (lines[-1] if lines else ""), time.time() - start


def qopt_source(qopt):
    """The commit of the source tree that holds the build (the build may lag behind it): a
    (short hash, subject) pair, or None outside a git tree."""
    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(qopt))))
    proc = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    commit, _, subject = proc.stdout.strip().partition(" ")
    return commit, subject


def tag_rows(result, source):
    """Marks the qopt rows of one model's run with the commit of the build that ran them."""
    for mid, entry in result["methods"].items():
        if mid.startswith("qopt-"):
            entry["build"] = source[0] if source else "unknown"


SUBJECT_CHARS = 100


def builds_lines(results, builds):
    """Markdown bullets: each build (commit) and the rows whose latest run it made, newest
    first (`builds`: remember_build's list, oldest first)."""
    rows = {}
    for name, r in results.items():
        qopt_rows = [m for m in r["methods"] if m.startswith("qopt-")]
        for mid in qopt_rows:
            build = r["methods"][mid].get("build", "unknown")
            rows.setdefault(build, {}).setdefault(name, []).append(mid)
    lines = []
    subjects = {b["commit"]: b["subject"] for b in builds}
    order = [b["commit"] for b in reversed(builds)] + [b for b in rows if b not in subjects]
    for build in order:
        if build not in rows:
            continue
        subject = subjects.get(build, "")
        if len(subject) > SUBJECT_CHARS:
            subject = subject[:SUBJECT_CHARS].rsplit(" ", 1)[0] + " ..."
        parts = []
        for name, mids in rows[build].items():
            every = len(mids) == sum(1 for m in results[name]["methods"] if m.startswith("qopt-"))
            parts.append(f"{name} ({'every qopt row' if every else ', '.join(mids)})")
        lines.append(f"- `{build}` {subject}: " + "; ".join(parts))
    return lines


def pass_times(report):
    try:
        with open(report, encoding="utf-8") as f:
            data = json.load(f)
        return {p["name"]: p["wall-time-ms"] / 1000.0 for p in data.get("passes", [])}
    except (OSError, ValueError, KeyError):
        return {}


def run_model(runner, name, path, methods, args, reference):
    spec = qc.MODELS[name]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    calib = os.path.join(work, "calib")
    evald = os.path.join(work, "eval")
    n_calib = write_samples(name, "calib", args.data, calib)
    limit = args.eval_limit.get(name)
    n_eval = write_samples(name, "eval", args.data, evald, limit)
    result = {"model": name, "what": spec["what"], "task_metric": qc.TASK_METRIC[spec["task"]],
              "calib_samples": n_calib, "eval_samples": n_eval, "model_sha256": qc.sha256_file(path),
              "methods": {}}
    start = time.time()
    fp32, fp32_pre = runner.ort_outputs(path, evald, os.path.join(work, "out"))
    result["fp32_eval_s"] = round(time.time() - start, 2)
    digest = qc.fp32_digest(name, fp32)
    theirs = (reference or {}).get("models", {}).get(name)
    if theirs:
        if theirs["model_sha256"] != result["model_sha256"]:
            raise BenchError(f"{name}: {path} is not the model ort_reference.json was made with")
        result["fp32_vs_reference"] = qc.compare_digests(name, digest, theirs["fp32"]["digest"][:n_eval])
    done = {}  # canonical pipeline -> method id that produced it
    for method in methods:
        if method.only and name not in method.only:
            continue
        if method.family == "mixed" and name != args.largest:
            continue
        entry = {"label": method.label, "family": method.family}
        result["methods"][method.id] = entry
        if method.missing:
            entry["status"] = f"n/a: {method.missing}"
            continue
        candidates = method.pipelines or [None]
        errors = []
        for pipeline in candidates:
            key = canonical(runner.qopt, runner.env, method, pipeline)
            if key is not None and key in done:
                shared = result["methods"][done[key]]
                entry.update({k: v for k, v in shared.items() if k not in ("label", "family")})
                entry["same_as"] = done[key]
                break
            dst = os.path.join(work, f"{method.id}.onnx")
            report = os.path.join(work, f"{method.id}.report.json")
            code, message, seconds = runner.qopt_run(method, pipeline, calib, path, dst, report)
            if code not in (0, 1) or not os.path.exists(dst):
                errors.append(f"{pipeline or method.pipeline_file}: exit {code}: {message}")
                continue
            entry["pipeline"] = pipeline or os.path.relpath(method.pipeline_file, ROOT)
            entry["quantize_s"] = round(seconds, 2)
            entry["pass_s"] = {k: round(v, 2) for k, v in pass_times(report).items()}
            if code == 1:
                entry["verify"] = f"refused (exit 1): {message}"
            try:
                t0 = time.time()
                outputs, pres = runner.ort_outputs(dst, evald, os.path.join(work, "out"),
                                                   preactivation=fp32_pre is not None)
                entry["eval_s"] = round(time.time() - t0, 2)
                entry.update(qc.score(name, fp32, outputs, fp32_pre, pres))
                entry["status"] = "ok"
            except BenchError as e:
                entry["status"] = f"failed: {e}"
            finally:
                if not args.keep:
                    os.remove(dst)
            if key is not None:
                done[key] = method.id
            break
        else:
            entry["status"] = "failed: " + " | ".join(errors)
        log(f"{name} {method.id}: {entry.get('status')} "
            f"{'' if 'sqnr_db' not in entry else 'SQNR %.2f dB, task %.2f' % (entry['sqnr_db'], entry['task'])}")
    return result


def merge_reference(result, reference):
    """Replaces the ONNX Runtime rows of `result` by ort_reference.json's."""
    methods = {m: e for m, e in result["methods"].items() if e.get("tool") != "onnxruntime"}
    theirs = (reference or {}).get("models", {}).get(result["model"])
    for mid, e in (theirs or {}).get("methods", {}).items():
        methods[mid] = dict(e, family="int4" if "4bit" in mid else "int8", tool="onnxruntime")
    result["methods"] = methods
    return result


# ---------------------------------------------------------------------------------------------
# Table and goals


def ok(entry):
    return entry is not None and entry.get("status") == "ok"


def better_or_equal(a, b):
    """a at least as good as b: the task metric first, then SQNR (qc.compared_sqnr: at the
    pre-activation where both rows have it)."""
    if a["task"] != b["task"]:
        return a["task"] > b["task"]
    sa, sb, _ = qc.compared_sqnr(a, b)
    return sa >= sb


def sqnr_text(e):
    """'12.34 dB', with the pre-activation SQNR where the row has it: '12.34 dB (logits 20.10)'."""
    pre = e.get("pre_sqnr_db")
    return f"{fmt(e['sqnr_db'])} dB" + (f" (pre-activation {fmt(pre)} dB)" if pre is not None else "")


def best(entries):
    chosen = None
    for mid, e in entries:
        if ok(e) and (chosen is None or not better_or_equal(chosen[1], e)):
            chosen = (mid, e)
    return chosen


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, float) and np.isinf(v):
        return "inf"
    return f"{v:.{digits}f}"


def ort_methods(r):
    return [(m, e) for m, e in r["methods"].items() if e.get("tool") == "onnxruntime"]


def goals(results):
    lines = []

    def line(verdict, text):
        lines.append(f"{verdict}: {text}")

    def judged(name, verdict):
        # The quantization goals are judged on trained models; a random-weight export is
        # reported beside them with the verdict it would get (its agreement measures how often
        # noise breaks the float model's near ties, not a task).
        if qc.MODELS.get(name, {}).get("source") == "corpus":
            return verdict
        return f"{verdict} (random weights: reported, not judged)"

    for name, r in results.items():
        d = r["methods"].get(DEFAULT_METHOD)
        b = best(ort_methods(r))
        if not ok(d) or b is None:
            line("N/A", f"{name}: qopt default vs best ONNX Runtime method (missing: "
                        f"{'qopt default' if not ok(d) else 'ONNX Runtime rows'})")
        else:
            verdict = judged(name, "PASS" if better_or_equal(d, b[1]) else "FAIL")
            line(verdict, f"{name}: qopt default ({DEFAULT_METHOD}) task {fmt(d['task'])} / {sqnr_text(d)} "
                          f"vs best ONNX Runtime {b[0]} {fmt(b[1]['task'])} / {sqnr_text(b[1])}")
    for name, r in results.items():
        d = r["methods"].get(DEFAULT_METHOD)
        if not ok(d):
            line("N/A", f"{name}: qopt default task agreement within 5 points of FP32 (no result)")
        else:
            line(judged(name, "PASS" if d["task"] >= 95.0 else "FAIL"),
                 f"{name}: qopt default task agreement {fmt(d['task'])} % (FP32 100 %, goal >= 95 %)"
                 + clear_context(d, best(ort_methods(r))))
    for name in ("ppocr-mobile-cls", "ppocr-v4-det"):
        r = results.get(name)
        if r is None:
            continue
        eb, plain = r["methods"].get("qopt-equalize-bias-correct"), r["methods"].get(PLAIN_METHOD)
        if not ok(eb) or not ok(plain):
            why = (eb or {}).get("status", "not run") if not ok(eb) else plain.get("status")
            line("N/A", f"{name}: equalize+bias-correct >= +3 dB over plain per-channel INT8 ({why})")
        else:
            se, sp, where = qc.compared_sqnr(eb, plain)
            gain = se - sp
            line("PASS" if gain >= 3.0 else "FAIL",
                 f"{name}: equalize+bias-correct {sqnr_text(eb)} vs plain {sqnr_text(plain)} "
                 f"({gain:+.2f} dB at the {where}, goal >= +3)")
    for name in ("vit-b16", "gpt2"):
        r = results.get(name)
        if r is None:
            continue
        ort = ort_methods(r)
        ort8 = best([(m, e) for m, e in ort if e["family"] == "int8"])
        ort4 = best([(m, e) for m, e in ort if e["family"] == "int4"])
        qopt4 = best([(m, e) for m, e in r["methods"].items()
                      if e.get("tool") != "onnxruntime" and e.get("family") == "int4"])
        for mid, against, what in ((DEFAULT_METHOD, ort8, "INT8"), ("qopt-fp8", ort8, "INT8"),
                                   (qopt4[0] if qopt4 else "qopt-int4", ort4, "4-bit")):
            q = r["methods"].get(mid)
            if not ok(q) or against is None:
                why = (q or {}).get("status", "not run") if not ok(q) else "no ONNX Runtime row"
                line("N/A", f"{name}: {mid} at least as good as ONNX Runtime's best {what} ({why})")
                continue
            line("PASS" if better_or_equal(q, against[1]) else "FAIL",
                 f"{name}: {mid} task {fmt(q['task'])} / {sqnr_text(q)} vs ONNX Runtime {against[0]} "
                 f"{fmt(against[1]['task'])} / {sqnr_text(against[1])}")
    return lines


def summary_table(results):
    head = ("| model | task metric | best ONNX Runtime INT8 | best ONNX Runtime 4-bit | qopt default "
            "(trt-int8.qp) | best qopt INT8 | qopt FP8 | best qopt INT4 |")
    rows = [head, "|" + "---|" * 8]

    def cell(pair):
        if pair is None:
            return "n/a"
        mid, e = pair
        pre = e.get("pre_sqnr_db")
        return (f"{mid}: {fmt(e['task'], 1)} % / {fmt(e['sqnr_db'], 1)} dB"
                + (f" ({fmt(pre, 1)} dB pre-act.)" if pre is not None else ""))

    for name, r in results.items():
        ort = ort_methods(r)
        qopt = [(m, e) for m, e in r["methods"].items() if e.get("tool") != "onnxruntime"]
        pick = lambda mid: (mid, r["methods"][mid]) if ok(r["methods"].get(mid)) else None  # noqa: E731
        rows.append("| " + " | ".join([
            name, r["task_metric"],
            cell(best([(m, e) for m, e in ort if e["family"] == "int8"])),
            cell(best([(m, e) for m, e in ort if e["family"] == "int4"])),
            cell(pick(DEFAULT_METHOD)),
            cell(best([(m, e) for m, e in qopt if e["family"] == "int8"])),
            cell(pick("qopt-fp8")), cell(best([(m, e) for m, e in qopt if e["family"] == "int4"]))]) + " |")
    return rows


def full_table(results):
    rows = ["| model | method | what | SQNR (dB) | pre-activation SQNR (dB) | cosine | task (%) | task where FP32 is clear (%) | quantize (s) | status |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        for mid, e in r["methods"].items():
            status = e.get("status", "")
            notes = [status if status != "ok" else "ok"]
            if e.get("same_as"):
                notes.append(f"same model as {e['same_as']}")
            if e.get("verify"):
                notes.append("verify refused")
            if e.get("note"):
                notes.append(e["note"])
            if e.get("tool") == "onnxruntime" and "quantize_s" in e:
                notes.append("timed on the reference machine")
            rows.append(f"| {name} | {mid} | {e.get('label', '')} | {fmt(e.get('sqnr_db'))} | {fmt(e.get('pre_sqnr_db'))} | "
                        f"{fmt(e.get('cosine'), 4)} | {fmt(e.get('task'))} | {clear_cell(e)} | {fmt(e.get('quantize_s'), 1)} | "
                        f"{'; '.join(notes)} |")
    return rows


def clear_context(d, ort):
    """What the agreement is where FP32 decides clearly (quality_common.clear_agreement), for the
    default and ONNX Runtime's best: flips where FP32 is at a near tie say little."""
    counted = d.get("clear_decisions")
    if not counted:
        return ""
    if counted[0] == 0:
        return f"; FP32 decides none of its {counted[1]} decisions clearly (top-2 margin < {qc.CLEAR_MARGIN})"
    text = f"; where FP32 decides clearly ({counted[0]} of {counted[1]}): {fmt(d.get('task_clear'))} %"
    if ort and ort[1].get("task_clear") is not None:
        text += f", ONNX Runtime's {ort[0]} {fmt(ort[1]['task_clear'])} %"
    return text


def clear_cell(e):
    """The task agreement where FP32 decides clearly (quality_common.clear_agreement), with how
    many decisions that is: '97.6 (42 of 64)'."""
    counted = e.get("clear_decisions")
    if not counted:
        return "-"
    return f"{fmt(e.get('task_clear'))} ({counted[0]} of {counted[1]})"


def mixed_precision_ratio(results, largest):
    r = results.get(largest)
    e = (r or {}).get("methods", {}).get("qopt-mixed-precision")
    if not ok(e) or "mixed-precision" not in e.get("pass_s", {}) or not e["pass_s"].get("insert-qdq"):
        return None
    mp, cal = e["pass_s"]["mixed-precision"], e["pass_s"]["insert-qdq"]
    return {"model": largest, "mixed_precision_s": mp, "insert_qdq_s": cal, "ratio": mp / cal}


def remerge(args):
    """--remerge: the qopt rows of an earlier results.json with the current ort_reference.json."""
    with open(args.remerge, encoding="utf-8") as f:
        old = json.load(f)
    with open(ORT_REFERENCE, encoding="utf-8") as f:
        reference = json.load(f)
    results = {name: merge_reference(r, reference) for name, r in old["models"].items()}
    write_results(args, results, {k: v for k, v in old.items()
                                  if k not in ("models", "goals", "mixed_precision_vs_calibration")})


METHOD_ORDER = [
    "qopt-max", "qopt-percentile", "qopt-entropy", "qopt-mse", "qopt-auto", PLAIN_METHOD, DEFAULT_METHOD,
    "qopt-equalize", "qopt-bias-correct", "qopt-equalize-bias-correct", "qopt-smooth", "qopt-fp8",
    "qopt-int4", "qopt-int4-awq", "qopt-int4-gptq", "qopt-mixed-precision", "ort-minmax", "ort-entropy", "ort-percentile", "ort-trt",
    "ort-4bit-rtn", "ort-4bit-rtn-sym", "ort-4bit-inc-rtn", "ort-4bit-hqq", "ort-4bit-kquant",
    "ort-4bit-gptq"]


def in_order(results):
    """Models in quality_common's order, methods in METHOD_ORDER (JSON round trips sort keys)."""
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    out = {}
    for name in sorted(results, key=lambda n: list(qc.MODELS).index(n)):
        r = dict(results[name])
        r["methods"] = dict(sorted(r["methods"].items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))
        out[name] = r
    return out


def remember_build(meta, source):
    """Appends the build's commit and subject to meta["builds"], a list in the order the
    builds ran (a commit that ran before moves to the end)."""
    commit, subject = source if source else ("unknown", "a build outside a git tree")
    builds = [b for b in meta.get("builds", []) if b["commit"] != commit]
    meta["builds"] = builds + [{"commit": commit, "subject": subject}]


def write_results(args, results, run):
    os.makedirs(args.out_dir, exist_ok=True)
    results = in_order(results)
    largest = run.get("largest") or next(
        (n for n, r in results.items() if "qopt-mixed-precision" in r["methods"]), None)
    ratio = mixed_precision_ratio(results, largest)
    goal_lines = goals(results)
    out = dict(run)
    out.update({
        "about": "bench/quality/run_quality.py: qopt's methods (this machine) and ONNX Runtime's "
                 "(ort_reference.json), scored against FP32 on the evaluation split",
        "mixed_precision_vs_calibration": ratio, "goals": goal_lines, "models": results})
    data_check = out["data"]
    with open(os.path.join(args.out_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    md = ["# Quantization quality: qopt and ONNX Runtime", "",
          f"Written by bench/quality/run_quality.py; data {data_check}. Each qopt row comes from "
          f"the latest run of it (`--methods ... --update`), with the build of the commit named "
          f"below.", "", "## Summary (task metric % / output SQNR dB against FP32)", ""]
    md += summary_table(results)
    md += ["", "## FP32 outputs here against the reference machine's", ""]
    for name, r in results.items():
        c = r.get("fp32_vs_reference")
        if c:
            md.append(f"- {name}: sums and sums of squares within {c['max_rel_diff']:.1e} relative; task "
                      f"labels equal on {c['labels_equal']} of {c['samples']} samples")
    if ratio:
        md += ["", f"Mixed precision on {ratio['model']} (the largest model): its pass took "
                   f"{ratio['mixed_precision_s']:.1f} s, calibration (insert-qdq) {ratio['insert_qdq_s']:.1f} s: "
                   f"ratio {ratio['ratio']:.2f}."]
    md += ["", "## Every method", ""] + full_table(results)
    md += ["", "## Builds (the rows each one ran last)", ""] + builds_lines(results, out.get("builds", []))
    md += ["", "## Goals", ""]
    md += [f"- {g}" for g in goal_lines]
    with open(os.path.join(args.out_dir, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    print()
    for g in goal_lines:
        print(g)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qopt", default=default_qopt())
    parser.add_argument("--models", default=",".join(qc.MODELS))
    parser.add_argument("--work", default=default_work(), help="scratch folder (outside the repository)")
    parser.add_argument("--data", default=make_data.default_out())
    parser.add_argument("--eval-limit", action="append", default=[], metavar="MODEL=N",
                        help="evaluate MODEL on its first N evaluation samples only")
    parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime threads")
    parser.add_argument("--out-dir", default=HERE, help="where results.json and results.md go")
    parser.add_argument("--pipelines", default=os.path.join(ROOT, "pipelines"))
    parser.add_argument("--no-ort-reference", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the quantized models in --work")
    parser.add_argument("--methods", default="",
                        help="run only these qopt methods (ids, comma-separated); with --update")
    parser.add_argument("--update", metavar="RESULTS_JSON",
                        help="replace the --methods rows of an earlier results.json with this run's")
    parser.add_argument("--remerge", metavar="RESULTS_JSON",
                        help="run nothing: merge an earlier results.json's qopt rows with ort_reference.json again")
    parser.add_argument("--no-snapshot", action="store_true",
                        help="run --qopt in place instead of a private copy of its build")
    args = parser.parse_args()
    args.eval_limit = {k: int(v) for k, v in (x.split("=", 1) for x in args.eval_limit)}
    if args.remerge:
        remerge(args)
        return
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in qc.MODELS]
    if unknown:
        sys.exit(f"error: unknown model {', '.join(unknown)} (known: {', '.join(qc.MODELS)})")
    if not os.access(args.qopt, os.X_OK):
        sys.exit(f"error: {args.qopt} is not an executable qopt (build it, or pass --qopt)")
    reference = None
    if not args.no_ort_reference:
        with open(ORT_REFERENCE, encoding="utf-8") as f:
            reference = json.load(f)
    started = time.time()
    source = qopt_source(args.qopt)  # now: the tree may move on while the bench runs
    try:
        data_check = check_data(args.data, reference)
        paths = model_paths(names)
        args.largest = max(names, key=lambda n: os.path.getsize(paths[n]))
        if args.no_snapshot:
            qopt, env = args.qopt, dict(os.environ)
        else:
            qopt, env = snapshot_qopt(args.qopt, os.path.join(args.work, "qopt-snapshot"))
        caps = qopt_capabilities(qopt, env)
        methods = qopt_methods(caps, args.pipelines)
        if args.methods:
            wanted = [m for m in args.methods.split(",") if m]
            unknown = [m for m in wanted if m not in {x.id for x in methods}]
            if unknown:
                raise BenchError(f"unknown method {', '.join(unknown)}")
            methods = [m for m in methods if m.id in wanted]
        runner = Runner(args, qopt, env)
        results = {}
        for name in names:
            log(f"== {name}")
            result = run_model(runner, name, paths[name], methods, args, reference)
            tag_rows(result, source)
            results[name] = merge_reference(result, reference)
    except BenchError as e:
        sys.exit(f"error: {e}")
    if args.update:
        with open(args.update, encoding="utf-8") as f:
            old = json.load(f)
        for name, r in results.items():
            base = old["models"].setdefault(name, r)
            if base is not r:
                # The model's own fields (evaluation samples, FP32 against the reference) are
                # this run's: the data may have grown since the rows kept from earlier runs.
                base.update({k: v for k, v in r.items() if k != "methods"})
                base["methods"].update(r["methods"])
        rows = ", ".join(m.id for m in methods)
        meta = {k: v for k, v in old.items() if k not in ("models", "goals", "mixed_precision_vs_calibration")}
        if any(m.family == "mixed" for m in methods) and meta.get("largest") in (None, *names):
            # Mixed precision ran on this run's largest model, the goal's only if this run
            # included the one recorded (a run on the small models leaves it alone).
            meta["largest"] = args.largest
        log(f"{rows} on {', '.join(names)} rerun in {time.time() - started:.0f} s")
        remember_build(meta, source)
        write_results(args, {n: merge_reference(r, reference) for n, r in old["models"].items()}, meta)
        return
    meta = {"passes": sorted(caps), "data": data_check, "largest": args.largest,
            "available": {m.id: (m.missing is None) for m in methods}}
    remember_build(meta, source)
    write_results(args, results, meta)


if __name__ == "__main__":
    main()
