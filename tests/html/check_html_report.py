#!/usr/bin/env python3
"""Opens qopt's HTML report in headless Chromium and checks that it rendered.

Writes a report for a run whose verification fails on purpose (a weight scaled by the
perturb-weight test pass), loads it in Chromium twice (--dump-dom for the rendered DOM with the
console on stderr, --screenshot for the pixels), and checks: the layer-error chart and the
histogram overlay are non-empty SVG, the console stays silent, and the screenshot shows the
chart's colours. Exit status 0 when every check passes; each failure is printed."""

import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from onnx_check_common import fresh_dir, tool_parser  # noqa: E402

FLAG_RGB = (0xD6, 0x27, 0x28)       # flagged layers and the first-divergence marker
REFERENCE_RGB = (0x1F, 0x77, 0xB4)  # the SQNR line


def chromium_command(chromium, profile, extra, url):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            *extra, url]


def run_chromium(chromium, work, name, extra, url):
    profile = os.path.join(work, f"profile-{name}")
    shutil.rmtree(profile, ignore_errors=True)
    os.makedirs(profile)
    result = subprocess.run(chromium_command(chromium, profile, extra, url), capture_output=True,
                            text=True, timeout=120)
    return result


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA PNG (what Chromium writes) into rows of (r, g, b)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {color})")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upleft = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - upleft
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else upleft
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return rows


def close(a, b, tolerance=40):
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


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
    url = "file://" + os.path.abspath(report)

    dom_run = run_chromium(args.chromium, args.work, "dom", ["--dump-dom"], url)
    dom = dom_run.stdout
    if dom_run.returncode != 0 or "</html>" not in dom:
        failures.append(f"chromium --dump-dom failed ({dom_run.returncode}):\n{dom_run.stderr[-2000:]}")
    # The page has no scripts, so any console message (console.error does not say its level in
    # Chromium's log, a blocked resource or a CSP violation) is a problem.
    console = [line for line in dom_run.stderr.splitlines() if ":CONSOLE" in line]
    if console:
        failures.append("console messages:\n" + "\n".join(console))

    charts = re.findall(r'<svg class="chart ([a-z -]+)"(.*?)</svg>', dom, re.S)
    kinds = [kind for kind, _ in charts]
    for wanted in ("layer-error", "histogram", "share"):
        if wanted not in kinds:
            failures.append(f"no '{wanted}' chart in the rendered DOM (charts: {kinds})")
    for kind, body in charts:
        if kind == "layer-error":
            dots = len(re.findall(r"<circle", body))
            flagged = len(re.findall(r'<circle class="flagged"', body))
            # verify{layers=all} compares 4 layers of the model (two Conv -> Relu layers, a
            # Conv, the pooling), 3 of them after the perturbed c2.
            if dots != 4 or flagged != 3 or 'class="divergence"' not in body:
                failures.append(f"layer-error chart: {dots} dots, {flagged} flagged, divergence "
                                f"marker {'present' if 'divergence' in body else 'missing'}")
        if kind == "histogram" and not re.search(r'<path class="reference" d="M [^"]{20,}"', body):
            failures.append("histogram chart has no reference distribution path")
    if "First layer whose error jumps: <code>c2</code>" not in dom:
        failures.append("the page does not name c2 as the first divergence")

    png = os.path.join(args.work, "report.png")
    shot = run_chromium(args.chromium, args.work, "shot",
                        ["--screenshot=" + png, "--window-size=1280,2400",
                         "--hide-scrollbars"], url)
    if shot.returncode != 0 or not os.path.exists(png):
        failures.append(f"chromium --screenshot failed ({shot.returncode}):\n{shot.stderr[-2000:]}")
    else:
        pixels = png_pixels(png)
        colors = set()
        flag = reference = 0
        for row in pixels[::2]:
            for p in row[::2]:
                colors.add(p)
                flag += close(p, FLAG_RGB)
                reference += close(p, REFERENCE_RGB)
        if len(colors) < 16:
            failures.append(f"the screenshot looks blank ({len(colors)} colours)")
        if flag < 20 or reference < 20:
            failures.append(f"the screenshot lacks chart colours (flag {flag}, line {reference})")

    if failures:
        print("\n\n".join(failures))
        return 1
    print(f"HTML report rendered: {len(charts)} charts, screenshot {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
