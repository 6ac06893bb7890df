#!/usr/bin/env python3
"""silero-vad's speech task metric as a test: does a qopt pipeline keep the voice-activity
detector's per-frame decisions?

Makes the speech data when absent (make_speech.py), runs

    qopt ARGS... --calib-data DATA/calib silero-vad.onnx WORK/out.onnx

then streams the float model and out.onnx over the held-out audio on ONNX Runtime, each with its
own LSTM state (vad_eval.js), and fails, saying which, when

  - the float model does not behave as a voice-activity detector on the audio (it calls speech on
    less than 10 % or more than 90 % of the frames, or detects less than 80 % of the utterances):
    the data would prove nothing;
  - out.onnx's decisions (probability > 0.5) agree with the float model's on fewer than
    --min-agreement of the frames, or a probability differs by more than --max-diff;
  - with --require-qdq-in-bodies, out.onnx has no QuantizeLinear inside If/Loop/Scan bodies
    (where all of silero-vad's Convs and LSTMs are);
  - qopt exits with anything but 0 (1, verify's refusal with the model still written, is
    measured and then fails unless --accept-verify-refusal).

It prints the QuantizeLinear/DequantizeLinear counts of out.onnx (in all, and inside bodies),
the metrics, and the time of each step; --json writes them.

  vad_task_test.py --qopt Q --work DIR [--model M] [--data DIR] [--node N]
                   [--min-agreement 0.99] [--max-diff D] [--require-qdq-in-bodies]
                   [--accept-verify-refusal] [--json FILE] -- QOPT ARGS...
  vad_task_test.py --self-check [--data DIR] ...   # the float model against itself: must be exact
"""
import argparse
import json
import os
import subprocess
import sys
import time

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_speech  # noqa: E402

VAD_EVAL = os.path.join(HERE, "vad_eval.js")
MIN_SPEECH_FRACTION = 0.10
MAX_SPEECH_FRACTION = 0.90
MIN_UTTERANCES_DETECTED = 0.80


def quantize_counts(path):
    """{op: (in all, inside bodies)} for QuantizeLinear and DequantizeLinear of the model."""
    counts = {"QuantizeLinear": [0, 0], "DequantizeLinear": [0, 0]}

    def walk(graph, in_body):
        for node in graph.node:
            if node.op_type in counts and node.domain in ("", "ai.onnx"):
                counts[node.op_type][0] += 1
                counts[node.op_type][1] += int(in_body)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g, True)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        walk(g, True)

    walk(onnx.load(path, load_external_data=False).graph, False)
    return {op: tuple(c) for op, c in counts.items()}


def evaluate(node, model, reference, data):
    proc = subprocess.run([node, VAD_EVAL, "--model", model, "--reference", reference,
                           "--data", data], capture_output=True, text=True)
    if proc.returncode != 0:
        raise TaskError(f"vad_eval.js failed (exit {proc.returncode}): "
                        f"{(proc.stderr or proc.stdout).strip()[-800:]}")
    return json.loads(proc.stdout)


class TaskError(Exception):
    pass


def split_argv(argv):
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def fraction(x):
    return "-" if x is None else f"{100 * x:.2f} %"


def main():
    own, qopt_args = split_argv(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 usage="%(prog)s [options] -- QOPT ARGS...")
    ap.add_argument("--qopt", help="the qopt binary")
    ap.add_argument("--work", help="folder for the transformed model")
    ap.add_argument("--model", help="silero-vad (default: the corpus cache's, fetched if absent)")
    ap.add_argument("--data", default=make_speech.default_out(), help="make_speech.py's output")
    ap.add_argument("--node", default="node")
    ap.add_argument("--min-agreement", type=float, default=0.99)
    ap.add_argument("--max-diff", type=float, default=None)
    ap.add_argument("--require-qdq-in-bodies", action="store_true")
    ap.add_argument("--accept-verify-refusal", action="store_true")
    ap.add_argument("--self-check", action="store_true",
                    help="evaluate the float model against itself (no qopt): 100 %% and 0")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(own)
    if not args.self_check and (not args.qopt or not args.work or not qopt_args):
        ap.error("--qopt, --work and the qopt arguments after -- are required")

    failures = []
    report = {"qopt_args": qopt_args, "times_s": {}}
    try:
        start = time.monotonic()
        model = args.model or make_speech.corpus_model()
        done = make_speech.ensure(args.data, model, args.node)
        report["times_s"]["data"] = round(time.monotonic() - start, 2)
        print(f"vad-task: data {done} in {report['times_s']['data']} s: {args.data}")

        if args.self_check:
            candidate = model
            args.min_agreement, args.max_diff = 1.0, 0.0
        else:
            os.makedirs(args.work, exist_ok=True)
            candidate = os.path.join(args.work, "out.onnx")
            if os.path.exists(candidate):
                os.unlink(candidate)
            cmd = [args.qopt, *qopt_args, "--calib-data", os.path.join(args.data, "calib"),
                   model, candidate]
            print("vad-task: " + " ".join(cmd))
            start = time.monotonic()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            report["times_s"]["qopt"] = round(time.monotonic() - start, 2)
            report["qopt_exit"] = proc.returncode
            sys.stdout.write(proc.stdout)
            sys.stdout.write(proc.stderr)
            print(f"vad-task: qopt exit {proc.returncode} in {report['times_s']['qopt']} s")
            if proc.returncode != 0 and not (proc.returncode == 1 and os.path.exists(candidate)):
                raise TaskError(f"qopt failed (exit {proc.returncode}) and wrote no model")
            if proc.returncode == 1 and not args.accept_verify_refusal:
                failures.append("qopt exited with 1 (a check refused the model it wrote; "
                                "measured anyway)")
            counts = quantize_counts(candidate)
            report["qdq"] = {op: {"total": c[0], "in_bodies": c[1]} for op, c in counts.items()}
            q, dq = counts["QuantizeLinear"], counts["DequantizeLinear"]
            print(f"vad-task: QuantizeLinear {q[0]} ({q[1]} inside If/Loop/Scan bodies), "
                  f"DequantizeLinear {dq[0]} ({dq[1]} inside bodies)")
            if args.require_qdq_in_bodies and q[1] == 0:
                failures.append("no QuantizeLinear inside the If branches, where all of "
                                "silero-vad's Convs and LSTMs are")

        start = time.monotonic()
        metrics = evaluate(args.node, candidate, model, args.data)
        report["times_s"]["eval"] = round(time.monotonic() - start, 2)
        report["metrics"] = metrics
    except (TaskError, make_speech.SpeechError) as e:
        print(f"vad-task: FAIL: {e}", file=sys.stderr)
        return 1

    ref = metrics["reference_labels"]
    print(f"vad-task: {metrics['frames']} frames of {metrics['frame_samples']} samples in "
          f"{metrics['streams']} held-out streams ({report['times_s']['eval']} s); the float model "
          f"calls {fraction(ref['speech_fraction'])} of them speech (labels: "
          f"{fraction(ref['label_speech_fraction'])}), recall {fraction(ref['recall'])}, "
          f"false alarms {fraction(ref['false_alarm_noise'])} in noise and "
          f"{fraction(ref['false_alarm_silence'])} in silence, "
          f"{ref['utterances_detected']}/{ref['utterances']} utterances detected")
    print(f"vad-task: agreement {fraction(metrics['agreement'])} "
          f"({metrics['disagreeing_frames']} frames differ), max |dp| {metrics['max_abs_diff']}, "
          f"mean |dp| {metrics['mean_abs_diff']}, worst {metrics['worst_frame']}")
    for s in metrics["per_stream"]:
        print(f"vad-task:   {s['name']} {s['noise']:>5} SNR {s['snr_db']!s:>4}: "
              f"agreement {fraction(s['agreement'])}, max |dp| {s['max_abs_diff']}")

    if not MIN_SPEECH_FRACTION <= ref["speech_fraction"] <= MAX_SPEECH_FRACTION:
        failures.append(f"the float model calls {fraction(ref['speech_fraction'])} of the frames "
                        f"speech, outside [{fraction(MIN_SPEECH_FRACTION)}, "
                        f"{fraction(MAX_SPEECH_FRACTION)}]: the audio proves nothing")
    if ref["utterances_detected"] < MIN_UTTERANCES_DETECTED * ref["utterances"]:
        failures.append(f"the float model detects only {ref['utterances_detected']} of "
                        f"{ref['utterances']} utterances: the audio proves nothing")
    if metrics["agreement"] < args.min_agreement:
        failures.append(f"decision agreement {fraction(metrics['agreement'])} is below "
                        f"{fraction(args.min_agreement)}")
    max_diff = metrics["max_abs_diff"]
    if args.max_diff is not None and (max_diff == "inf" or max_diff > args.max_diff):
        failures.append(f"a probability differs by {max_diff} from the float model's, more than "
                        f"{args.max_diff}")

    report["failures"] = failures
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    for failure in failures:
        print(f"vad-task: FAIL: {failure}", file=sys.stderr)
    if not failures:
        print("vad-task: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
