"""Loading a qopt HTML report in headless Chromium and reading what it rendered, shared by the
report checks (check_html_report.py: a planted error; check_demo_report.py: scripts/demo.sh's
report): the DOM after rendering with the console messages, the SVG charts in it, and a
screenshot's pixels. Only the Python standard library is used."""

import html
import os
import re
import shutil
import struct
import subprocess
import zlib

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


def file_url(path):
    return "file://" + os.path.abspath(path)


def rendered_dom(chromium, work, report, failures):
    """The DOM of `report` as Chromium rendered it ("" when it could not); a failed run and any
    console message (the page has no scripts, so a message means a blocked resource, a CSP
    violation or the like; console.error does not say its level in Chromium's log) are added
    to `failures`."""
    run = run_chromium(chromium, work, "dom", ["--dump-dom"], file_url(report))
    if run.returncode != 0 or "</html>" not in run.stdout:
        failures.append(f"chromium --dump-dom failed ({run.returncode}):\n{run.stderr[-2000:]}")
        return ""
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    if console:
        failures.append("console messages:\n" + "\n".join(console))
    return run.stdout


def charts(dom):
    """(kind, body) of each SVG chart: kind is its class after "chart" (layer-error, histogram,
    share)."""
    return re.findall(r'<svg class="chart ([a-z -]+)"(.*?)</svg>', dom, re.S)


def chart_dots(body):
    """(dots, flagged dots) of a layer-error chart's body."""
    return len(re.findall(r"<circle", body)), len(re.findall(r'<circle class="flagged"', body))


def task_figures(dom):
    """(classes, sentence, detail) of each task figure the report opens with, unescaped."""
    found = re.findall(r'<p class="task-figure ([a-z ]*)"><span class="figure">(.*?)</span>'
                       r'<span class="detail">(.*?)</span></p>', dom, re.S)
    return [(kind, html.unescape(figure), html.unescape(re.sub(r"<[^>]+>", "", detail)))
            for kind, figure, detail in found]


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


def screenshot_colours(chromium, work, report, failures, height=2400):
    """Screenshots `report` (1280 x `height`) and counts, on every other pixel of every other
    row, the distinct colours and the pixels near the flag red and the SQNR line's blue:
    (colours, flag, line), or None when the screenshot failed (said in `failures`)."""
    png = os.path.join(work, "report.png")
    shot = run_chromium(chromium, work, "shot",
                        ["--screenshot=" + png, f"--window-size=1280,{height}",
                         "--hide-scrollbars"], file_url(report))
    if shot.returncode != 0 or not os.path.exists(png):
        failures.append(f"chromium --screenshot failed ({shot.returncode}):\n{shot.stderr[-2000:]}")
        return None
    colours = set()
    flag = line = 0
    for row in png_pixels(png)[::2]:
        for p in row[::2]:
            colours.add(p)
            flag += close(p, FLAG_RGB)
            line += close(p, REFERENCE_RGB)
    return len(colours), flag, line
