#!/usr/bin/env bash
# Configures and builds qopt in ./build (or $QOPT_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QOPT_BUILD_DIR:-build}"
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# Paths relative to the checkout: clones in other folders (CI's) share the compiler cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${LAUNCHER[@]}" "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
