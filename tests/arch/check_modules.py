#!/usr/bin/env python3
"""Checks that passes/ is built of modules: a pass folder holds that pass alone.

- A source under passes/<pass>/ includes only files of its own folder (by a plain relative name)
  and public library headers ("qopt/<library>/..."): never another pass's folder, never a path
  that leaves its folder ("../").
- A library under passes/lib/<library>/ never includes a pass folder.
- Every source file is compiled once in the build (compile_commands.json): a pass's sources go
  into its module (or its parts, which its tests link), shared code into one library.

Exit 1 naming each file and the rule it breaks; 0 with a one-line summary otherwise.
"""
import argparse
import collections
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_ENDINGS = (".cpp", ".cc", ".h", ".hpp")


def pass_folders(passes_dir):
    """Folders of passes/ that build a pass module (qopt_add_builtin_pass in their CMakeLists)."""
    found = []
    for name in sorted(os.listdir(passes_dir)):
        cmake = os.path.join(passes_dir, name, "CMakeLists.txt")
        if os.path.isfile(cmake) and "qopt_add_builtin_pass(" in open(cmake).read():
            found.append(name)
    return found


def sources_under(folder):
    for dirpath, _, files in os.walk(folder):
        for f in sorted(files):
            if f.endswith(SOURCE_ENDINGS):
                yield os.path.join(dirpath, f)


def owner_of(target, pass_paths):
    """The pass whose folder holds `target`, or None."""
    return next((p for p, d in pass_paths.items() if target.startswith(d + os.sep)), None)


def check_includes(source_dir, problems):
    passes_dir = os.path.join(source_dir, "passes")
    passes = pass_folders(passes_dir)
    pass_paths = {p: os.path.realpath(os.path.join(passes_dir, p)) for p in passes}
    for name in passes:
        folder = pass_paths[name]
        for path in sources_under(folder):
            rel = os.path.relpath(path, source_dir)
            for inc in INCLUDE.findall(open(path, errors="replace").read()):
                if inc.startswith("qopt/"):
                    continue
                target = os.path.realpath(os.path.join(os.path.dirname(path), inc))
                if ".." in inc.split("/") or not target.startswith(folder + os.sep):
                    owner = owner_of(target, pass_paths)
                    what = f"pass '{owner}'s folder" if owner else "a file outside its folder"
                    problems.append(f"{rel}: includes \"{inc}\", {what}: a pass includes only its "
                                    "own files and public library headers (qopt/<library>/...)")
    lib_dir = os.path.join(passes_dir, "lib")
    for path in sources_under(lib_dir):
        rel = os.path.relpath(path, source_dir)
        for inc in INCLUDE.findall(open(path, errors="replace").read()):
            target = os.path.realpath(os.path.join(os.path.dirname(path), inc))
            owner = owner_of(target, pass_paths)
            if owner:
                problems.append(f"{rel}: includes \"{inc}\" from pass '{owner}': a library never "
                                "depends on a pass")
    return len(passes)


def check_compiled_once(compile_commands, source_dir, problems):
    with open(compile_commands) as f:
        entries = json.load(f)
    counts = collections.Counter()
    for entry in entries:
        path = os.path.realpath(os.path.join(entry.get("directory", ""), entry["file"]))
        counts[path] += 1
    root = os.path.realpath(source_dir) + os.sep
    for path, n in sorted(counts.items()):
        if n > 1 and path.startswith(root):
            problems.append(f"{os.path.relpath(path, source_dir)}: compiled {n} times: build it "
                            "once, in a library or an object library that every user links")
    return len(counts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--compile-commands", required=True, help="the build's compile_commands.json")
    args = parser.parse_args()
    problems = []
    n_passes = check_includes(args.source_dir, problems)
    n_sources = check_compiled_once(args.compile_commands, args.source_dir, problems)
    for p in problems:
        print(f"check_modules: FAIL: {p}")
    if problems:
        return 1
    print(f"check_modules: {n_passes} pass folders include only their own files and library "
          f"headers; {n_sources} sources each compiled once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
