#!/usr/bin/env bash
# One command: install dependencies, build, and run every test; then the same suite under the
# sanitizers (scripts/sanitize.sh) and every fuzz target for a bounded time (scripts/fuzz.sh).
# Any finding fails. QOPT_SKIP_SANITIZE=1 / QOPT_SKIP_FUZZ=1 leave a stage out (local runs).
# Each stage prints its wall time ("== NAME: N s"); README.md's test section quotes a cold run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QOPT_BUILD_DIR:-build}"

stage() {
  local start=$SECONDS
  echo "== $1"
  "${@:2}"
  echo "== $1: $((SECONDS - start)) s"
}
stage "install" scripts/install-deps.sh
stage "build" scripts/build.sh
stage "tests" ctest --test-dir "$BUILD_DIR" -j "$(nproc)" --output-on-failure --timeout 1800
if [ "${QOPT_SKIP_SANITIZE:-0}" != 1 ]; then stage "sanitizers" scripts/sanitize.sh; fi
# 30 s per target keeps the five targets under 3 minutes on a 2-core machine (CI runs in 90).
if [ "${QOPT_SKIP_FUZZ:-0}" != 1 ]; then
  stage "fuzzing" env QOPT_FUZZ_SECONDS="${QOPT_FUZZ_SECONDS:-30}" scripts/fuzz.sh
fi
echo "== total: $SECONDS s"
