#!/usr/bin/env bash
# Configures and builds qopt in ./build (or $QOPT_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
source "$(dirname "$0")/cmake-env.sh"
BUILD_DIR="${QOPT_BUILD_DIR:-build}"
cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${LAUNCHER[@]}" "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
