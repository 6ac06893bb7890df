#!/usr/bin/env bash
# One command: install dependencies, build, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR="${QOPT_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" -j "$(nproc)" --output-on-failure --timeout 1800
