#!/usr/bin/env python3
"""Opens qopt's HTML report in headless Chromium and checks that it rendered.

Writes a report for a run whose verification fails on purpose (a weight scaled by the
perturb-weight test pass), loads it in Chromium twice (--dump-dom for the rendered DOM with the
console on stderr, --screenshot for the pixels), and checks: the layer-error chart and the
histogram overlay are non-empty SVG, the console stays silent, and the screenshot shows the
chart's colours. Exit status 0 when every check passes; each failure is printed."""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from onnx_check_common import fresh_dir, tool_parser  # noqa: E402
from report_in_chromium import chart_dots, charts, rendered_dom, screenshot_colours  # noqa: E402


def main():
    args = tool_parser(__doc__, "--qopt", "--plugins", "--chromium", "--model",
                       "--work").parse_args()
    fresh_dir(args.work)
    failures = []

    report = os.path.join(args.work, "report.html")
    run = subprocess.run([args.qopt, f"--load-pass-plugin={os.path.join(args.plugins, 'perturb-weight.so')}",
                          "-p", "perturb-weight{node=c2},verify{layers=all}", "-q",
                          f"--report-html={report}", args.model,
                          os.path.join(args.work, "out.onnx")], capture_output=True, text=True)
    if run.returncode != 1:
        failures.append(f"qopt exited {run.returncode}, expected 1 (verification fails):\n{run.stderr}")
    if not os.path.exists(report):
        print("\n".join(failures + ["no HTML report written"]))
        return 1

    dom = rendered_dom(args.chromium, args.work, report, failures)
    found = charts(dom)
    kinds = [kind for kind, _ in found]
    for wanted in ("layer-error", "histogram", "share"):
        if wanted not in kinds:
            failures.append(f"no '{wanted}' chart in the rendered DOM (charts: {kinds})")
    for kind, body in found:
        if kind == "layer-error":
            dots, flagged = chart_dots(body)
            # verify{layers=all} compares 4 layers of the model (two Conv -> Relu layers, a
            # Conv, the pooling), 3 of them after the perturbed c2.
            if dots != 4 or flagged != 3 or 'class="divergence"' not in body:
                failures.append(f"layer-error chart: {dots} dots, {flagged} flagged, divergence "
                                f"marker {'present' if 'divergence' in body else 'missing'}")
        if kind == "histogram" and not re.search(r'<path class="reference" d="M [^"]{20,}"', body):
            failures.append("histogram chart has no reference distribution path")
    if "First layer whose error jumps: <code>c2</code>" not in dom:
        failures.append("the page does not name c2 as the first divergence")

    shot = screenshot_colours(args.chromium, args.work, report, failures)
    if shot is not None:
        colours, flag, line = shot
        if colours < 16:
            failures.append(f"the screenshot looks blank ({colours} colours)")
        if flag < 20 or line < 20:
            failures.append(f"the screenshot lacks chart colours (flag {flag}, line {line})")

    if failures:
        print("\n\n".join(failures))
        return 1
    print(f"HTML report rendered: {len(found)} charts, screenshot "
          f"{os.path.join(args.work, 'report.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
