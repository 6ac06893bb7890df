#!/usr/bin/env bash
# Builds qopt with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan (or
# $QOPT_ASAN_BUILD_DIR) and runs the whole test suite under them. Any finding fails: undefined
# behaviour does not recover, and LeakSanitizer reports leaks at exit. The same build holds the
# libFuzzer targets that scripts/fuzz.sh runs (scripts/configure-sanitized.sh says how it is
# configured). Under the sanitizers run the tests that exercise C++ directly: the gtests, the lit
# golden tests (every pass through the qopt command), the fuzz replays and the Python module's
# pytest, the extension in this build with the ASan runtime preloaded into the interpreter, and
# the data readers on images, audio and .npz (labels gtest, lit, fuzz, python, data); the
# Python-driven end-to-end checks (ONNX Runtime, the corpus) run in the plain build.
# QOPT_SANITIZE_LABELS overrides the selection ('.' runs everything); extra arguments go to ctest
# (e.g. -R lit).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QOPT_ASAN_BUILD_DIR:-build-asan}"
JOBS="${QOPT_JOBS:-$(nproc)}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
scripts/configure-sanitized.sh "$BUILD_DIR"
cmake --build "$BUILD_DIR" -j "$JOBS"

# detect_leaks: LeakSanitizer runs at exit of every instrumented process. The suppressions file
# names leaks of libraries qopt does not own (none needed so far; see scripts/sanitizers.supp).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers.supp:print_suppressions=0"
ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure --timeout 2400 \
  -L "${QOPT_SANITIZE_LABELS:-^(gtest|lit|fuzz|python|data)$}" "$@"
