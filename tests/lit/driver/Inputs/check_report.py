"""Checks a qopt --report file: its structure, and that the recorded hashes are the SHA-256 of
the input and output files. Prints a short summary for FileCheck; exits 1 on any problem."""
import hashlib
import json
import sys


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fail(message):
    print("report check failed: " + message)
    sys.exit(1)


def main():
    report_path, input_path, output_path = sys.argv[1:4]
    with open(report_path) as f:
        report = json.load(f)
    for key in ("qopt-version", "pipeline", "target", "seed", "input", "output", "passes",
                "total-wall-time-ms", "warnings", "results", "tensor-map"):
        if key not in report:
            fail("missing key " + key)
    if report["input"]["sha256"] != sha256(input_path):
        fail("input hash differs")
    if report["output"]["sha256"] != sha256(output_path):
        fail("output hash differs")
    for entry in report["passes"]:
        for key in ("name", "options", "changed", "statistics", "remarks", "wall-time-ms"):
            if key not in entry:
                fail("pass entry without " + key)
        if not isinstance(entry["changed"], bool) or entry["wall-time-ms"] < 0:
            fail("bad pass entry " + entry["name"])
        for remark in entry["remarks"]:
            if remark["kind"] not in ("applied", "missed", "note"):
                fail("bad remark kind")
    print("version " + report["qopt-version"])
    print("pipeline " + report["pipeline"])
    print("target " + report["target"])
    for entry in report["passes"]:
        stats = " ".join("%s=%s" % kv for kv in entry["statistics"].items())
        options = " ".join("%s=%s" % (k, json.dumps(v)) for k, v in entry["options"].items())
        print("pass %s changed=%s [%s] {%s}" % (entry["name"], entry["changed"], stats, options))
        for remark in entry["remarks"]:
            print("  remark %s %s: %s" % (remark["kind"], remark["subject"], remark["message"]))
    for original, now in report["tensor-map"].items():
        print("map %s -> %s" % (original, now))
    for warning in report["warnings"]:
        print("warning " + warning)
    print("results " + json.dumps(report["results"], sort_keys=True))
    print("hashes ok")


main()
