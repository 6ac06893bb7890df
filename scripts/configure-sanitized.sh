#!/usr/bin/env bash
# Configures the one sanitized build that scripts/sanitize.sh (the whole test suite) and
# scripts/fuzz.sh (the libFuzzer targets) share: clang-14, AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation on every target, tests on,
# benches off. One build serves both, which saves CI a third full compile.
#
# A build type of its own: -O1 everywhere with line tables (fast to build, readable stack traces;
# the interpreter's -O3 is for release builds) and assertions on.
#
#   scripts/configure-sanitized.sh BUILD_DIR
set -euo pipefail
BUILD_DIR="$1"
source "$(dirname "$0")/cmake-env.sh"
cmake -G Ninja -S . -B "$BUILD_DIR" "${LAUNCHER[@]}" \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
  -DQOPT_FUZZ=ON -DQOPT_BUILD_TESTS=ON -DQOPT_BUILD_BENCH=OFF >/dev/null
