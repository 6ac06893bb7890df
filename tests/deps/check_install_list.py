#!/usr/bin/env python3
"""Proves scripts/install-deps.sh complete on the machine it runs on.

install-deps installs Debian packages without their Recommends, so a package that the build
or the tests use only because it happened to be installed here (as a Recommends of a listed
package, or by hand) breaks a fresh machine. This collects every file outside the source and
build trees that the configured build used:

  - paths that find_package/find_library/find_path/find_program/pkg-config stored in
    CMakeCache.txt (for a <Pkg>_DIR, the package's config file inside it),
  - every header the compiler read (`ninja -t deps`),
  - every library on a link line (build.ninja),
  - the programs and Python modules the tests run (--tool, --python-module),

maps each to the Debian packages that own it (dpkg-query -S, following symbolic links: every
owned link on the way must be covered, not just the final file), and fails, naming package
and file, when an owner is neither listed by `install-deps.sh --print-packages`, nor reached
from a listed package through Depends/Pre-Depends alone, nor a required (or Essential)
package or one of their dependencies.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def listed_packages(install_deps):
    out = run(["bash", install_deps, "--print-packages"], check=True).stdout
    return [p for p in out.split() if p]


def installed_metadata():
    """Installed packages: name -> (dependency alternatives, provides, priority, essential)."""
    fmt = "${Package}\\t${db:Status-Abbrev}\\t${Priority}\\t${Essential}\\t${Pre-Depends}\\t${Depends}\\t${Provides}\\n"
    out = run(["dpkg-query", "-W", "-f", fmt], check=True).stdout
    packages = {}
    provided_by = {}

    def names(field):
        groups = []
        for group in filter(None, (g.strip() for g in field.split(","))):
            alternatives = []
            for alt in group.split("|"):
                name = re.split(r"[\s(:]", alt.strip(), maxsplit=1)[0]
                if name:
                    alternatives.append(name)
            groups.append(alternatives)
        return groups

    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) < 7 or not fields[1].startswith("ii"):
            continue
        name, _, priority, essential, pre, dep, provides = fields[:7]
        packages[name] = {
            "deps": names(pre) + names(dep),
            "priority": priority,
            "essential": essential == "yes",
        }
        for group in names(provides):
            for virtual in group:
                provided_by.setdefault(virtual, set()).add(name)
    return packages, provided_by


def closure(roots, packages, provided_by):
    """Installed packages reached from roots through Depends/Pre-Depends (any alternative)."""
    seen = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        candidates = {name} | provided_by.get(name, set())
        for candidate in candidates:
            if candidate in seen or candidate not in packages:
                continue
            seen.add(candidate)
            for group in packages[candidate]["deps"]:
                stack.extend(group)
    return seen


def is_under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def cache_paths(build_dir):
    """Absolute files named in CMakeCache.txt; a <Pkg>_DIR gives the config files inside it."""
    found = {}
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.+-]+):(FILEPATH|PATH|STRING|INTERNAL|UNINITIALIZED)=(.*)$",
                         line.rstrip("\n"))
            if not m:
                continue
            key, _, value = m.groups()
            if key in UNUSED_CMAKE_TOOLS or re.match(r"CMAKE_\w+_COMPILER_(AR|RANLIB|CLANG_SCAN_DEPS)$", key):
                continue
            if key.endswith("_LAUNCHER") and value and not value.startswith("/"):
                value = shutil.which(value) or value  # a compiler launcher named by program name
            for item in value.split(";"):
                if not item.startswith("/") or not os.path.exists(item):
                    continue
                if os.path.isdir(item):
                    if key.endswith("_DIR"):
                        for entry in sorted(os.listdir(item)):
                            if re.search(r"([Cc]onfig|-config)\.cmake$", entry):
                                found.setdefault(os.path.join(item, entry), f"CMakeCache {key}")
                    continue
                found.setdefault(item, f"CMakeCache {key}")
    return found


# Tools CMake looks for and records, which a Ninja build of qopt never runs (static archives use
# CMAKE_AR and CMAKE_RANLIB; links go through the compiler driver): on a machine without them the
# build is the same, so they are not part of what install-deps must install.
UNUSED_CMAKE_TOOLS = {"CMAKE_LINKER", "CMAKE_ADDR2LINE", "CMAKE_NM", "CMAKE_OBJCOPY",
                      "CMAKE_OBJDUMP", "CMAKE_READELF", "CMAKE_STRIP", "CMAKE_DLLTOOL"}


def header_deps(build_dir):
    """Every file the compiler read, from ninja's dependency log."""
    ninja = None
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("CMAKE_MAKE_PROGRAM:"):
                ninja = line.split("=", 1)[1].strip()
    if not ninja or "ninja" not in os.path.basename(ninja):
        return {}, "the build is not a Ninja build: compiler dependencies not read"
    out = run([ninja, "-C", build_dir, "-t", "deps"])
    if out.returncode != 0:
        return {}, f"ninja -t deps failed: {out.stderr.strip()}"
    found = {}
    target = None
    for line in out.stdout.splitlines():
        if line and not line.startswith(" "):
            target = line.split(":", 1)[0]
        elif line.strip().startswith("/"):
            found.setdefault(os.path.normpath(line.strip()), f"compiling {target}")
    return found, None


def link_libraries(build_dir):
    found = {}
    path = os.path.join(build_dir, "build.ninja")
    if not os.path.exists(path):
        return found
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("LINK_LIBRARIES = "):
                continue
            for token in shlex.split(line[len("LINK_LIBRARIES = "):]):
                if token.startswith("-Wl,"):
                    continue
                if token.startswith("/") and os.path.isfile(token):
                    found.setdefault(os.path.normpath(token), "a link line in build.ninja")
    return found


def python_module_files(python, modules):
    found = {}
    for module in modules:
        out = run([python, "-c", f"import {module}; print({module}.__file__)"])
        if out.returncode != 0:
            found[f"<python module {module}>"] = f"{python} cannot import {module}: {out.stderr.strip().splitlines()[-1:]}"
        else:
            found[out.stdout.strip()] = f"the tests import {module} with {python}"
    return found


def tool_files(tools):
    found = {}
    for tool in tools:
        path = tool if "/" in tool else None
        if path is None:
            out = run(["bash", "-c", f"command -v {shlex.quote(tool)}"])
            path = out.stdout.strip()
        if not path or not os.path.exists(path):
            found[f"<program {tool}>"] = "the tests run it, and it is not installed"
        else:
            found[path] = f"the tests run {tool}"
    return found


def data_files(paths):
    """Data the tests read (a folder stands for its first file, which its package ships)."""
    found = {}
    for path in paths:
        if os.path.isdir(path):
            first = next((os.path.join(dp, f) for dp, _, fs in sorted(os.walk(path)) for f in sorted(fs)), None)
            if first is None:
                found[f"<data {path}>"] = "the tests read it, and it is empty"
                continue
            found[first] = f"the tests read {path}"
        elif os.path.exists(path):
            found[path] = "the tests read it"
        else:
            found[f"<data {path}>"] = "the tests read it, and it is not installed"
    return found


def link_chain(path):
    """The path, every symbolic link it passes through, and the final file."""
    chain = [path]
    current = path
    for _ in range(40):
        if not os.path.islink(current):
            break
        target = os.readlink(current)
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
        chain.append(current)
    real = os.path.realpath(path)
    if real not in chain:
        chain.append(real)
    return chain


def merged_usr_aliases(path):
    aliases = [path]
    for short in ("/lib", "/bin", "/sbin"):
        if path.startswith("/usr" + short + "/"):
            aliases.append(path[len("/usr"):])
        elif path.startswith(short + "/"):
            aliases.append("/usr" + path)
    return aliases


class Owners:
    """dpkg-query -S, asked once per path and merged-/usr alias."""

    def __init__(self):
        self.cache = {}

    def prefetch(self, paths):
        todo = sorted({a for p in paths for a in merged_usr_aliases(p)} - set(self.cache))
        for i in range(0, len(todo), 200):
            batch = todo[i:i + 200]
            out = run(["dpkg-query", "-S", *batch])
            for a in batch:
                self.cache.setdefault(a, set())
            for line in out.stdout.splitlines():
                if ": " not in line:
                    continue
                pkgs, file = line.split(": ", 1)
                if file in self.cache:
                    for p in pkgs.split(","):
                        self.cache[file].add(p.strip().split(":")[0])

    def of(self, path):
        owners = set()
        for alias in merged_usr_aliases(path):
            owners |= self.cache.get(alias, set())
        return owners


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--install-deps", required=True)
    ap.add_argument("--tool", action="append", default=[], help="a program the tests run")
    ap.add_argument("--data", action="append", default=[], help="a file or folder the tests read")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--python-module", action="append", default=[], help="a module the tests import")
    ap.add_argument("--exclude-package", action="append", default=[],
                    help="pretend install-deps does not list this package (shows the test can fail)")
    args = ap.parse_args()

    build_dir = os.path.realpath(args.build_dir)
    source_dir = os.path.realpath(args.source_dir)
    project_roots = [source_dir, build_dir]

    listed = [p for p in listed_packages(args.install_deps) if p not in args.exclude_package]
    packages, provided_by = installed_metadata()
    from_list = closure(listed, packages, provided_by)
    base_roots = [n for n, m in packages.items() if m["priority"] == "required" or m["essential"]]
    from_base = closure(base_roots, packages, provided_by)
    allowed = from_list | from_base

    used = {}
    notes = []
    for source in (cache_paths(build_dir), link_libraries(build_dir),
                   python_module_files(args.python, args.python_module), tool_files(args.tool),
                   data_files(args.data)):
        for path, why in source.items():
            used.setdefault(path, why)
    headers, note = header_deps(build_dir)
    if note:
        notes.append(note)
    for path, why in headers.items():
        used.setdefault(path, why)

    failures = []
    checked_files = 0
    external = {p: w for p, w in used.items() if p.startswith("<") or not is_under(os.path.realpath(p), project_roots)}
    chains = {p: link_chain(p) for p in external if not p.startswith("<")}
    owners = Owners()
    owners.prefetch([c for chain in chains.values() for c in chain])
    covered_packages = set()
    for path, why in sorted(external.items()):
        if path.startswith("<"):
            failures.append(f"{path}: {why}")
            continue
        # node_modules is installed by npm from package-lock.json, not by apt.
        if "/node_modules/" in path:
            continue
        checked_files += 1
        owned_any = False
        for link in chains[path]:
            pkgs = owners.of(link)
            if not pkgs:
                continue
            owned_any = True
            covered_packages |= pkgs
            if not pkgs & allowed:
                names = ", ".join(sorted(pkgs))
                failures.append(
                    f"package {names} is used but not installed by {os.path.basename(args.install_deps)}: "
                    f"{link}" + (f" (via {path})" if link != path else "") + f", needed by {why}")
        if not owned_any and not is_under(os.path.realpath(path), ["/etc/alternatives"]):
            failures.append(f"{path} belongs to no Debian package (installed by hand?), needed by {why}")

    unused = sorted(p for p in listed if p in packages and not closure([p], packages, provided_by) & covered_packages)
    print(f"install-list: {checked_files} files outside the tree, {len(covered_packages)} owning packages; "
          f"{len(listed)} listed packages reach {len(from_list)} through Depends; "
          f"{len(from_base)} required/essential")
    for note in notes:
        print(f"install-list: note: {note}")
    if unused:
        print("install-list: listed packages none of whose files (or dependencies' files) this build "
              "read: " + " ".join(unused) + " (scripts/fuzz.sh checks its own build; clang-format is for "
              "contributors)")
    # Deduplicate per package so the report names each missing package once, with one example.
    seen = set()
    report = []
    for f in failures:
        key = f.split(" is used", 1)[0]
        if key in seen:
            continue
        seen.add(key)
        report.append(f)
    for f in report:
        print(f"install-list: FAIL: {f}")
    print(f"install-list: {'FAILED' if report else 'OK'}")
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
