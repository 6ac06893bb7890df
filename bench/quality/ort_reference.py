#!/usr/bin/env python3
"""ONNX Runtime's quantizers on the quality benchmark's models and data: the reference rows that
run_quality.py sets beside qopt's. Needs python3 with numpy, onnx and onnxruntime (1.30 was
used; its quantization tool ships inside it).

For one model (`run`), on the calibration split of the data that make_data.py wrote:

  ort-minmax, ort-entropy, ort-percentile
      quantize_static(QuantFormat.QDQ, calibrate_method=...) with its other defaults (int8
      activations asymmetric, per-tensor int8 weights, every op type it knows), after
      quant_pre_process (shape inference and ONNX Runtime's basic graph optimizations), as
      its documentation advises
  ort-trt
      the TensorRT settings: MinMax, int8 activations and weights, both symmetric
      (ActivationSymmetric, WeightSymmetric), per-channel weights, bias left in float
      (QuantizeBias=False), Q/DQ only on the inputs of Conv, ConvTranspose, Gemm and MatMul
  ort-4bit-* (transformers only)
      MatMulNBitsQuantizer, block 128, on every MatMul with a constant weight: its default
      round-to-nearest (asymmetric, as the class defaults, and symmetric, as its command line
      defaults), and the other algorithms it ships where they load: RTN (its copy of Intel Neural
      Compressor's code), HQQ, k-quant, and with --with-gptq GPTQ (calibrated on the same samples)

then runs the FP32 model and every quantized one with ONNX Runtime (CPU, graph optimizations
disabled, as run_quality.py does) on the evaluation split and scores them with
quality_common.score. Each method's result is written as soon as it is known, so a run cut short
keeps what it finished. `merge` gathers the per-model files into ort_reference.json.

  ort_reference.py run --model NAME --path MODEL.onnx --data DIR --out NAME.json
                       [--threads N] [--deadline UNIX_TIME] [--methods a,b] [--with-gptq]
  ort_reference.py merge --data DIR [--spec transformers.spec.json] --out ort_reference.json A.json ...
                       (inputs: per-model files or earlier merged ones; later ones add methods)
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import quality_common as qc  # noqa: E402

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear", "MatMulNBits")
TRT_OPS = ["Conv", "ConvTranspose", "Gemm", "MatMul"]


def limit_threads(threads):
    """Several models are quantized side by side; the calibrators create their sessions with the
    default options (every core each), so every session of this process gets `threads`
    intra-op threads unless its options already say how many."""
    import onnxruntime as ort

    base = ort.InferenceSession

    class Limited(base):
        def __init__(self, path_or_bytes, sess_options=None, providers=None, **kwargs):
            options = sess_options if sess_options is not None else ort.SessionOptions()
            if options.intra_op_num_threads == 0:
                options.intra_op_num_threads = threads
            super().__init__(path_or_bytes, sess_options=options,
                             providers=providers or ["CPUExecutionProvider"], **kwargs)

    ort.InferenceSession = Limited


class Reader:
    """The calibration samples as ONNX Runtime's CalibrationDataReader protocol wants them."""

    def __init__(self, feeds):
        self.feeds = feeds
        self.index = 0

    def get_next(self):
        if self.index >= len(self.feeds):
            return None
        self.index += 1
        return self.feeds[self.index - 1]

    def rewind(self):
        self.index = 0

    def __len__(self):
        return len(self.feeds)

    def __iter__(self):
        return self

    def __next__(self):
        item = self.get_next()
        if item is None:
            raise StopIteration
        return item


def make_reader(feeds):
    from onnxruntime.quantization import CalibrationDataReader

    class OrtReader(Reader, CalibrationDataReader):
        pass

    return OrtReader(feeds)


def evaluate(path, name, feeds, threads, preactivation=True):
    """The first output on every feed, and the pre-activation outputs
    (qc.with_preactivation_output) or None; `preactivation` False skips looking for them."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = threads
    probe = path + ".pre.onnx"
    pre = qc.with_preactivation_output(path, probe) if preactivation else None
    try:
        session = ort.InferenceSession(probe if pre else path, sess_options=options,
                                       providers=["CPUExecutionProvider"])
    finally:
        if pre:
            os.remove(probe)
    names = [o.name for o in session.get_outputs()][:2 if pre else 1]
    runs = [session.run(names, feed) for feed in feeds]
    return [r[0] for r in runs], ([r[1] for r in runs] if pre else None)


def node_counts(path):
    import onnx

    model = onnx.load(path, load_external_data=False)
    counts = {}
    for n in model.graph.node:
        if n.op_type in QDQ_OPS:
            counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


def int8_methods():
    from onnxruntime.quantization import CalibrationMethod

    base = "quantize_static, QDQ, defaults otherwise (int8 activations asymmetric, per-tensor int8 weights, all op types)"
    return [
        ("ort-minmax", f"{base}; MinMax", {"calibrate_method": CalibrationMethod.MinMax}),
        ("ort-entropy", f"{base}; Entropy", {"calibrate_method": CalibrationMethod.Entropy}),
        ("ort-percentile", f"{base}; Percentile (99.999)", {"calibrate_method": CalibrationMethod.Percentile}),
        ("ort-trt", "quantize_static, QDQ, TensorRT-style: MinMax, int8 symmetric activations and "
                    "weights, per-channel weights, float bias, Q/DQ on Conv/ConvTranspose/Gemm/MatMul inputs",
         {"calibrate_method": CalibrationMethod.MinMax, "per_channel": True,
          "op_types_to_quantize": TRT_OPS,
          "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True, "QuantizeBias": False}}),
    ]


def default_opset(path):
    import onnx

    model = onnx.load(path, load_external_data=False)
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def quantize_int8(src, dst, calib_feeds, settings):
    """quantize_static with `settings`; returns a note when the model had to be converted first.
    Per-channel scales need DequantizeLinear's axis (opset 13), which quantize_static does not
    raise the opset for (it writes the attribute into an opset-11 model, which ONNX Runtime then
    refuses), so a per-channel method converts an older model with ONNX's version converter."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    note = None
    if settings.get("per_channel") and default_opset(src) < 13:
        before = default_opset(src)
        converted = onnx.version_converter.convert_version(onnx.load(src), 13)
        src = dst + ".opset13.onnx"
        onnx.save(converted, src)
        note = f"converted from opset {before} to 13 by onnx.version_converter (per-channel axis)"
    kwargs = {"quant_format": QuantFormat.QDQ, "activation_type": QuantType.QInt8,
              "weight_type": QuantType.QInt8}
    kwargs.update(settings)
    try:
        quantize_static(src, dst, make_reader(calib_feeds), **kwargs)
    finally:
        if note and os.path.exists(src):
            os.remove(src)
    return note


def weight_only_methods(calib_feeds, with_gptq):
    """(name, label, factory) for the 4-bit algorithms this onnxruntime has; a factory returns the
    quantizer's keyword arguments. GPTQ (its Python implementation) runs only when asked: on 16
    cores it needed minutes per model, past what one device call allows."""
    from onnxruntime.quantization import matmul_nbits_quantizer as mnb

    methods = [
        ("ort-4bit-rtn", "MatMulNBits block 128, default quantizer (round to nearest), asymmetric (the class default)",
         lambda: {"block_size": 128, "is_symmetric": False,
                  "algo_config": mnb.DefaultWeightOnlyQuantConfig(block_size=128, is_symmetric=False)}),
        ("ort-4bit-rtn-sym", "MatMulNBits block 128, default quantizer (round to nearest), symmetric (the command line default)",
         lambda: {"block_size": 128, "is_symmetric": True,
                  "algo_config": mnb.DefaultWeightOnlyQuantConfig(block_size=128, is_symmetric=True)}),
    ]
    if hasattr(mnb, "HQQWeightOnlyQuantConfig"):
        methods.append(("ort-4bit-hqq", "MatMulNBits block 128, HQQ (asymmetric)",
                        lambda: {"block_size": 128, "algo_config": mnb.HQQWeightOnlyQuantConfig(block_size=128, bits=4)}))
    if hasattr(mnb, "RTNWeightOnlyQuantConfig"):
        methods.append(("ort-4bit-inc-rtn", "MatMulNBits block 128, RTN of its Neural Compressor code, symmetric",
                        lambda: {"block_size": 128, "is_symmetric": True, "algo_config": mnb.RTNWeightOnlyQuantConfig()}))
    if hasattr(mnb, "KQuantWeightOnlyQuantConfig"):
        methods.append(("ort-4bit-kquant", "MatMulNBits block 128, k-quant",
                        lambda: {"block_size": 128, "is_symmetric": True, "algo_config": mnb.KQuantWeightOnlyQuantConfig()}))
    if with_gptq and hasattr(mnb, "GPTQWeightOnlyQuantConfig"):
        methods.append(("ort-4bit-gptq", "MatMulNBits block 128, GPTQ (calibrated on the 32 samples), symmetric",
                        lambda: {"block_size": 128, "is_symmetric": True,
                                 "algo_config": mnb.GPTQWeightOnlyQuantConfig(
                                     calibration_data_reader=make_reader(calib_feeds), block_size=128)}))
    return methods


def quantize_weight_only(src, dst, kwargs):
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(onnx.load(src), **kwargs)
    quantizer.process()
    model = quantizer.model
    if hasattr(model, "save_model_to_file"):
        model.save_model_to_file(dst, False)
    else:
        onnx.save(model, dst)


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def run_model(args):
    import onnx
    import onnxruntime as ort

    limit_threads(args.threads)
    name = args.model
    spec = qc.MODELS[name]
    calib = [{spec["input"]: qc.model_input(name, s)} for s in qc.load_split(args.data, name, "calib")]
    evals = [{spec["input"]: qc.model_input(name, s)} for s in qc.load_split(args.data, name, "eval")]
    result = {"model": name, "model_sha256": qc.sha256_file(args.path), "calib_samples": len(calib),
              "eval_samples": len(evals), "methods": {},
              "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    start = time.time()
    reference, reference_pre = evaluate(args.path, name, evals, args.threads)
    result["fp32"] = {"digest": qc.fp32_digest(name, reference), "eval_s": round(time.time() - start, 2)}
    write_json(args.out, result)
    work = tempfile.mkdtemp(prefix=f"ort-{name}-")
    prepared = os.path.join(work, "prepared.onnx")
    try:
        from onnxruntime.quantization import quant_pre_process
        quant_pre_process(args.path, prepared)
        result["preprocess"] = "quant_pre_process"
    except Exception as e:  # a model that its shape inference cannot take is quantized as it is
        prepared = args.path
        result["preprocess"] = f"quant_pre_process failed, quantized the model as given: {type(e).__name__}: {str(e)[:300]}"

    jobs = [(m, label, "int8", settings) for m, label, settings in int8_methods()]
    if spec["source"] == "device":
        jobs += [(m, label, "4bit", factory) for m, label, factory in weight_only_methods(calib, args.with_gptq)]
    if args.methods:
        wanted = set(args.methods.split(","))
        jobs = [job for job in jobs if job[0] in wanted]
    for method, label, kind, settings in jobs:
        entry = {"label": label}
        if time.time() > args.deadline:
            entry["status"] = "not run: out of time"
            result["methods"][method] = entry
            continue
        dst = os.path.join(work, f"{method}.onnx")
        try:
            t0 = time.time()
            if kind == "int8":
                note = quantize_int8(prepared, dst, calib, settings)
                if note:
                    entry["note"] = note
            else:
                quantize_weight_only(args.path, dst, settings())
            entry["quantize_s"] = round(time.time() - t0, 2)
            entry["nodes"] = node_counts(dst)
            t0 = time.time()
            outputs, pres = evaluate(dst, name, evals, args.threads,
                                     preactivation=reference_pre is not None)
            entry["eval_s"] = round(time.time() - t0, 2)
            entry.update(qc.score(name, reference, outputs, reference_pre, pres))
            entry["status"] = "ok"
        except Exception as e:  # one method failing is a finding for the table, not the end
            entry["status"] = f"failed: {type(e).__name__}: {str(e)[:400]}"
            traceback.print_exc()
        finally:
            if os.path.exists(dst):
                os.remove(dst)
        result["methods"][method] = entry
        print(f"{name} {method}: {json.dumps({k: v for k, v in entry.items() if k != 'label'})}", flush=True)
        write_json(args.out, result)
    result["total_s"] = round(time.time() - start, 1)
    result["versions"] = {"onnxruntime": ort.__version__, "onnx": onnx.__version__,
                          "numpy": np.__version__, "python": platform.python_version()}
    write_json(args.out, result)


def merge(args):
    with open(os.path.join(args.data, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    out = {
        "about": "ONNX Runtime's quantizers on the quality benchmark (bench/quality/ort_reference.py); "
                 "metrics against the FP32 model on the evaluation split: sqnr_db, cosine, task (%)",
        "task_metric": qc.TASK_METRIC,
        "data_sha256": {k: v["sha256"] for k, v in manifest["files"].items()},
        "models": {},
    }
    if args.spec and os.path.exists(args.spec):
        out["transformers_sha256"] = {k: v["sha256"] for k, v in qc.load_spec(args.spec).items()}
    # Later inputs add to or replace the methods of earlier ones (a run limited by --methods).
    for path in args.inputs:
        with open(path, encoding="utf-8") as f:
            part = json.load(f)
        for model in part["models"].values() if "models" in part else [part]:
            if "machine" in part and "machine" not in model:  # merged before models said it
                model["machine"] = part["machine"]
            have = out["models"].setdefault(model["model"], model)
            if have is not model:
                if have["model_sha256"] != model["model_sha256"]:
                    sys.exit(f"error: {path}: {model['model']} is another model than in the earlier inputs")
                have["methods"].update(model["methods"])
    write_json(args.out, out)
    print(f"wrote {args.out}: {', '.join(out['models'])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--model", required=True, choices=sorted(qc.MODELS))
    run.add_argument("--path", required=True)
    run.add_argument("--data", required=True)
    run.add_argument("--out", required=True)
    run.add_argument("--threads", type=int, default=4)
    run.add_argument("--deadline", type=float, default=float("inf"))
    run.add_argument("--methods", help="only these methods (comma-separated)")
    run.add_argument("--with-gptq", action="store_true", help="also run the 4-bit GPTQ quantizer")
    mrg = sub.add_parser("merge")
    mrg.add_argument("--data", required=True)
    mrg.add_argument("--spec")
    mrg.add_argument("--out", required=True)
    mrg.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    if args.command == "run":
        run_model(args)
    else:
        merge(args)


if __name__ == "__main__":
    main()
