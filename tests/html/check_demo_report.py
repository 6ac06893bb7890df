#!/usr/bin/env python3
"""Runs scripts/demo.sh on a built tree and checks its HTML report in headless Chromium.

The demo must quantize the trained PP-OCRv4 text detector (not fall back to the bundled model),
exit 0 and end its terminal output with the task figure; the report, as Chromium renders it,
must open with that figure (map agreement with FP32 on the evaluation pages, passed), show the
per-layer SQNR chart with a dot per compared layer, and print nothing on the console.

    check_demo_report.py --demo scripts/demo.sh --build-dir BUILD --chromium C --work DIR
    check_demo_report.py --report report.html --chromium C --work DIR   # an existing report

Exit status 0 when every check passes; each failure is printed."""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from onnx_check_common import fresh_dir  # noqa: E402
from report_in_chromium import (chart_dots, charts, rendered_dom, screenshot_colours,  # noqa: E402
                                task_figures)

# "Map agreement with FP32 (IoU of positions > 0.5): 98.1 % on 16 evaluation samples — bound
# 90 %: passed"
FIGURE = re.compile(r"Map agreement with FP32 \(IoU of positions > 0\.5\): ([0-9.]+) % on "
                    r"([0-9]+) evaluation samples \u2014 bound ([0-9.]+) %: passed$")
MIN_LAYERS = 50  # verify{layers=all} compares 116 layers of the detector


def run_demo(args, work, failures):
    """Runs the demo into `work`; returns the report's path, or None."""
    env = dict(os.environ, QOPT_DEMO_SKIP_BUILD="1", QOPT_BUILD_DIR=os.path.abspath(args.build_dir),
               QOPT_DEMO_DIR=os.path.join(work, "demo"))
    env.pop("QOPT_DEMO_PIPELINE", None)
    run = subprocess.run(["bash", args.demo], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(args.demo))))
    output = run.stdout + run.stderr
    with open(os.path.join(work, "demo.log"), "w", encoding="utf-8") as f:
        f.write(output)
    if run.returncode != 0:
        failures.append(f"the demo exited {run.returncode}:\n{output[-3000:]}")
    if "could not fetch" in output:
        failures.append("the demo fell back to the bundled model: it could not fetch the detector")
    last = [line for line in run.stdout.splitlines() if line.startswith("demo: ")]
    figures = [line[len("demo: "):] for line in last if "agreement" in line]
    if not figures or not FIGURE.match(figures[-1]):
        failures.append(f"the demo's terminal output does not end with the task figure: {last}")
    report = os.path.join(work, "demo", "report.html")
    return report if os.path.exists(report) else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo")
    parser.add_argument("--build-dir")
    parser.add_argument("--report")
    parser.add_argument("--chromium", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    if not args.report and not (args.demo and args.build_dir):
        parser.error("give --demo and --build-dir, or --report")
    fresh_dir(args.work)
    failures = []
    report = args.report or run_demo(args, args.work, failures)
    if report is None or not os.path.exists(report):
        print("\n\n".join(failures + [f"no HTML report: {report or 'the demo wrote none'}"]))
        return 1

    dom = rendered_dom(args.chromium, args.work, report, failures)
    figures = task_figures(dom)
    main_figures = [(sentence, detail) for kind, sentence, detail in figures
                    if "logits" not in kind]
    figure = FIGURE.match(main_figures[0][0]) if main_figures else None
    if figure is None:
        failures.append("the report does not open with the text map's agreement with FP32, "
                        f"passed: {main_figures or 'no task figure'}")
    elif not (float(figure.group(1)) >= float(figure.group(3)) and int(figure.group(2)) >= 8):
        failures.append(f"implausible task figure: {figure.group(0)}")
    layer_charts = [body for kind, body in charts(dom) if kind == "layer-error"]
    dots = chart_dots(layer_charts[0])[0] if layer_charts else 0
    if dots < MIN_LAYERS:
        failures.append(f"the per-layer SQNR chart has {dots} dots (at least {MIN_LAYERS} wanted; "
                        f"{len(layer_charts)} layer-error charts)")
    positions = [dom.find(marker) for marker in ('class="task-figure', 'class="chart layer-error"',
                                                  "What each pass changed")]
    if -1 not in positions and positions != sorted(positions):
        failures.append("the report does not open with the figure, then the chart, then the "
                        "passes")
    for words in ("BatchNormalization folded", "layers quantized"):
        if words not in dom:
            failures.append(f"the passes table does not say '{words}'")

    shot = screenshot_colours(args.chromium, args.work, report, failures, height=1600)
    if shot is not None and (shot[0] < 16 or shot[2] < 20):
        failures.append(f"the screenshot lacks the chart (colours {shot[0]}, line {shot[2]})")

    if failures:
        print("\n\n".join(failures))
        return 1
    print(f"demo report: {main_figures[0][0]}; chart of {dots} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
