#!/usr/bin/env bash
# One command: install dependencies, build, and run qopt's main job on the bundled example model
# (a MobileNetV2 exported by PyTorch with BatchNorm kept).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR="${QOPT_BUILD_DIR:-build}"
mkdir -p "$BUILD_DIR/demo"
gunzip -c tests/fixtures/torch/mobilenetv2_bn_opset17.onnx.gz > "$BUILD_DIR/demo/mobilenetv2.onnx"
PIPELINE="${QOPT_DEMO_PIPELINE:-pipelines/cleanup.qp}"
set -x
"$BUILD_DIR/bin/qopt" --pipeline-file "$PIPELINE" --time-passes \
  --report "$BUILD_DIR/demo/report.json" \
  "$BUILD_DIR/demo/mobilenetv2.onnx" "$BUILD_DIR/demo/mobilenetv2.out.onnx"
