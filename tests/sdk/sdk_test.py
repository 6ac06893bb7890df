#!/usr/bin/env python3
"""qopt's SDK acceptance test.

1. `cmake --install` qopt into an empty prefix and check what it holds.
2. Build every example plugin (plugins/*/) and tests/sdk/proto-plugin out of tree against that
   prefix with find_package(qopt), in one CMake configure, and run each plugin's own lit tests
   through the installed qopt.
3. Load the plugin that links the shared ONNX protobuf libraries itself.
4. Run the tutorial (docs/writing-a-pass.md): write its files, run its commands.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path


def run(cmd, **kwargs):
    print("$", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def fail(message):
    sys.exit(f"sdk_test: FAIL: {message}")


def clean_env(args):
    """The environment an outside user has: nothing pointing into qopt's build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "QOPT_PLUGIN_PATH", "CMAKE_PREFIX_PATH")}
    env["PATH"] = os.pathsep.join([str(Path(args.cmake).parent), env.get("PATH", "/usr/bin")])
    # Plugins need qopt's compiler (qoptConfig.cmake says so); a sanitized qopt's libraries
    # also need the sanitizer runtimes linked into the programs that load them.
    env["CXX"] = str(args.cxx_compiler)
    if args.sanitizers:
        env["CXXFLAGS"] = f"-fsanitize={args.sanitizers}"
        env["LDFLAGS"] = f"-fsanitize={args.sanitizers}"
    return env


def install(args, prefix):
    run([args.cmake, "--install", args.build_dir, "--prefix", prefix])
    expected = [
        "bin/qopt", "bin/qopt-run", "lib/libqopt.so", "lib/libqopt_interp.so",
        "lib/qopt/passes/dce.so", "include/qopt/ir/Graph.h", "include/qopt/pass/PassPlugin.h",
        "include/qopt/interp/Interpreter.h", "lib/cmake/qopt/qoptConfig.cmake",
        "lib/cmake/qopt/qoptConfigVersion.cmake", "lib/cmake/qopt/qoptTargets.cmake",
        "lib/cmake/qopt/QoptPassPlugin.cmake", "share/qopt/pipelines/cleanup.qp",
    ]
    missing = [p for p in expected if not (prefix / p).exists()]
    if missing:
        fail(f"the install lacks {missing}")
    # The installed tools must find the installed libraries, not the build tree's.
    for tool in ("bin/qopt", "bin/qopt-run"):
        dynamic = subprocess.run(["readelf", "-d", prefix / tool], check=True,
                                 capture_output=True, text=True).stdout
        if "$ORIGIN/../lib" not in dynamic or str(args.build_dir) in dynamic:
            fail(f"{tool} has the wrong RUNPATH:\n{dynamic}")


def check_version_file(args, prefix, work, env):
    """find_package(qopt <next major>) must refuse this install (SameMajorVersion)."""
    major = int((prefix / "lib/cmake/qopt/qoptConfigVersion.cmake").read_text()
                .split('set(PACKAGE_VERSION "')[1].split(".")[0])
    folder = work / "version-check"
    folder.mkdir()
    (folder / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(version-check LANGUAGES NONE)\n"
        f"find_package(qopt {major + 1} REQUIRED)\n")
    result = subprocess.run([args.cmake, "-S", folder, "-B", folder / "build",
                             f"-DCMAKE_PREFIX_PATH={prefix}"], env=env, capture_output=True,
                            text=True)
    if result.returncode == 0 or "considered but not accepted" not in result.stderr:
        fail(f"find_package(qopt {major + 1}) accepted qopt {major}.x:\n{result.stderr}")


def check_library_targets(args, prefix, work, env):
    """qopt::analysis and qopt::quant are exported: a consumer links qopt::quant alone and reads
    a TensorRT calibration cache with it (TensorRT's own example line: amax 1.0)."""
    folder = work / "library-targets"
    folder.mkdir()
    (folder / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(library-targets CXX)\n"
        "set(CMAKE_CXX_STANDARD 20)\nfind_package(qopt REQUIRED)\n"
        "add_executable(read-cache main.cpp)\n"
        "target_link_libraries(read-cache qopt::quant qopt::analysis)\n")
    (folder / "main.cpp").write_text(
        '#include <cstdio>\n#include "qopt/analysis/Metrics.h"\n#include "qopt/quant/CalibCache.h"\n'
        "int main() {\n"
        '  auto cache = qopt::quant::parseCalibrationCache("TRT-8601-EntropyCalibration2\\n"\n'
        '                                                  "x: 3c010204\\n", "inline");\n'
        '  std::printf("%s %.6f\\n", cache.entries[0].tensor.c_str(), cache.entries[0].scale * 127);\n'
        "}\n")
    build = folder / "build"
    run([args.cmake, "-S", folder, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    run([args.cmake, "--build", build], env=env)
    # In a sanitizer build of qopt the libraries bring the ASan runtime, which must be loaded
    # first: preload it for this plain executable.
    run_env = dict(env)
    libraries = subprocess.run(["ldd", build / "read-cache"], check=True, capture_output=True,
                               text=True).stdout
    asan = re.search(r"(\S*libasan\.so\S*) => (\S+)", libraries)
    if asan:
        run_env["LD_PRELOAD"] = asan.group(2)
    out = subprocess.run([build / "read-cache"], env=run_env, check=True, capture_output=True,
                         text=True).stdout
    if out.strip() != "x 1.000000":
        fail(f"read-cache printed {out!r}, expected 'x 1.000000'")


def build_plugins(args, prefix, work, env):
    plugin_dirs = sorted(p.parent for p in (args.source_dir / "plugins").glob("*/CMakeLists.txt"))
    if len(plugin_dirs) < 1:
        fail("no example plugins under plugins/")
    projects = plugin_dirs + [args.source_dir / "tests/sdk/proto-plugin"]
    # One configure for all: a super-project adding each plugin's own CMakeLists.txt unchanged.
    super_dir = work / "plugins-src"
    super_dir.mkdir(parents=True)
    lines = ["cmake_minimum_required(VERSION 3.25)", "project(qopt-sdk-test LANGUAGES CXX)"]
    lines += [f'add_subdirectory("{p}" "{p.name}")' for p in projects]
    (super_dir / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    build = work / "plugins-build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run([args.cmake, "-S", super_dir, "-B", build, *generator, f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_TYPE=Release"], env=env)
    run([args.cmake, "--build", build, "--parallel", "2"], env=env)
    return plugin_dirs, build


def run_plugin_tests(args, prefix, plugin_dirs, build, env):
    for plugin in plugin_dirs:
        module = build / plugin.name / f"{plugin.name}.so"
        if not module.exists():
            fail(f"{module} was not built")
        if not (plugin / "test/lit.cfg.py").exists():
            fail(f"plugin {plugin.name} has no test/lit.cfg.py")
        run([sys.executable, args.lit, "-sv", plugin / "test", "--param", f"qopt={prefix}/bin/qopt",
             "--param", f"plugin={module}", "--param", f"build_dir={build / plugin.name}",
             "--param", f"filecheck_dir={args.llvm_tools}"], env=env)


def run_proto_plugin(prefix, build, work, env):
    model = work / "proto-model.onnxtxt"
    model.write_text('<ir_version: 8, opset_import: ["" : 17]>\n'
                     "g (float[4] x) => (float[4] y) {\n  r = Relu(x)\n  y = Neg(r)\n}\n")
    result = subprocess.run(
        [prefix / "bin/qopt", f"--load-pass-plugin={build}/proto-plugin/proto-plugin.so",
         "-p", "proto-summary", "-v", "--emit=text", model, "-"],
        env=env, capture_output=True, text=True)
    print(result.stdout, result.stderr)
    if result.returncode != 0:
        fail(f"the protobuf-linking plugin did not run (exit {result.returncode})")
    if "nodes=2" not in result.stdout + result.stderr:
        fail("the protobuf-linking plugin's remark is missing")


def run_tutorial(args, prefix, work, env):
    """Writes the files of docs/writing-a-pass.md and runs its commands, as a reader would."""
    text = (args.source_dir / "docs/writing-a-pass.md").read_text()
    blocks = re.findall(r"<!-- sdk-test: (file (\S+)|run) -->\n```[a-z]*\n(.*?)```", text, re.S)
    if not any(kind == "run" for kind, _, _ in blocks) or len(blocks) < 4:
        fail("docs/writing-a-pass.md lost its sdk-test markers")
    folder = work / "tutorial"
    folder.mkdir()
    tutorial_env = dict(env, QOPT_PREFIX=str(prefix))
    for kind, name, body in blocks:
        if kind == "run":
            run(["bash", "-euo", "pipefail", "-c", body], cwd=folder, env=tutorial_env)
        else:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(body)


def main():
    parser = argparse.ArgumentParser()
    for name in ("source-dir", "build-dir", "work-dir", "cmake", "lit", "llvm-tools"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--cxx-compiler", type=Path, required=True)
    parser.add_argument("--sanitizers", default="")
    args = parser.parse_args()
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    prefix = work / "prefix"
    env = clean_env(args)
    install(args, prefix)
    check_version_file(args, prefix, work, env)
    check_library_targets(args, prefix, work, env)
    plugin_dirs, build = build_plugins(args, prefix, work, env)
    run_plugin_tests(args, prefix, plugin_dirs, build, env)
    run_proto_plugin(prefix, build, work, env)
    run_tutorial(args, prefix, work, env)
    print("sdk_test: PASS")


if __name__ == "__main__":
    main()
