#!/usr/bin/env bash
# Installs everything qopt needs on Debian 12: compilers and libraries from Debian's packages,
# and the ONNX Runtime reference (npm, pinned in package-lock.json, no install scripts run).
# Packages are installed without their Recommends, so every package the build or the tests
# use must be listed here or be a Depends of one listed (ctest -R install-list checks that).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libboost-dev libfmt-dev libgflags-dev
  libgtest-dev libgmock-dev
  llvm-14 llvm-14-tools clang-14 libclang-rt-14-dev libomp-14-dev clang-format
  libopenblas-dev libeigen3-dev libdnnl-dev ocl-icd-opencl-dev
  libzip-dev  # interp/Npz.cpp (.npz data)
  libpng-dev libjpeg62-turbo-dev libsndfile1-dev libsamplerate0-dev  # passes/lib/media (calibration data from images and audio)
  python3 python3-onnx python3-numpy
  pybind11-dev python3-dev python3-pytest  # python/ (the qopt module) and its tests
  python3-pil fonts-dejavu-core  # document pages: scripts/demo_data.py, bench/quality/make_data.py
  espeak-ng sox  # tests/corpus/vad (make_speech.py speaks its sentences and resamples them)
  nodejs npm
  chromium
)

# tests/deps/check_install_list.py reads the list from here, so it is stated once.
if [ "${1:-}" = "--print-packages" ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from elsewhere (e.g. a newer Node.js): only install Debian's when absent.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs/}")
  missing=("${missing[@]/npm/}")
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | grep -v '^$' || true)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "install-deps: npm ci --ignore-scripts"
    npm ci --ignore-scripts --no-audit --no-fund
  fi
fi
