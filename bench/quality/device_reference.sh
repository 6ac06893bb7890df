#!/bin/bash
# Device side of bench/quality (a folder made by pack_for_device.sh): rebuilds the transformers
# from their skeletons (or, with EXPORT=1, exports them anew with torch, timm and transformers,
# writing new skeletons and spec to $OUT), then runs ort_reference.py on every model, three
# streams side by side, each stopped at LIMIT seconds (default 540) after the start, and merges
# what finished into $OUT/ort_reference.json, with the logs in $OUT/log.txt.
# MODELS=a,b limits the models; METHODS=a,b the methods; GPTQ=1 adds the 4-bit GPTQ quantizer.
set -u
C=$(cd "$(dirname "$0")" && pwd)
W=${WORK:-/tmp/qopt-quality}
OUT=${OUT:?set OUT to the results folder}
LIMIT=${LIMIT:-540}
MODELS=${MODELS:-ppocr-v4-det,ppocr-v4-rec,ppocr-mobile-cls,vit-b16,gpt2}
export PYTHONUNBUFFERED=1
t0=$(date +%s)
rm -rf "$W"; mkdir -p "$W/ort" "$W/models" "$OUT"
tar -xJf "$C/data.tar.xz" -C "$W"
spec=$C/models/transformers.spec.json
if [ "${EXPORT:-0}" = 1 ]; then
  python3 "$C/export_transformers.py" --out "$OUT" --models "$W/models" 2>&1 | grep -v Warning | tail -5
  spec=$OUT/transformers.spec.json
else
  python3 - "$C" "$W/models" <<'PY' || exit 1
import os, sys
sys.path.insert(0, sys.argv[1])
import quality_common as qc
specs = qc.load_spec(os.path.join(sys.argv[1], "models", "transformers.spec.json"))
for name, entry in specs.items():
    data = qc.rebuild_model(os.path.join(sys.argv[1], "models", f"{name}.skeleton.onnx.gz"), entry)
    path = os.path.join(sys.argv[2], f"{name}.onnx")
    with open(path, "wb") as f:
        f.write(data)
    if qc.sha256_file(path) != entry["sha256"]:
        sys.exit(f"{name}: the rebuilt model differs from the recorded SHA-256")
    print(f"{name}: rebuilt, SHA-256 as recorded")
PY
fi
deadline=$(( t0 + LIMIT - 120 ))
extra=()
[ -n "${METHODS:-}" ] && extra+=(--methods "$METHODS")
[ "${GPTQ:-0}" = 1 ] && extra+=(--with-gptq)
runone() {  # name path threads
  timeout $(( t0 + LIMIT - $(date +%s) )) python3 "$C/ort_reference.py" run --model "$1" --path "$2" \
    --data "$W/data" --out "$W/ort/$1.json" --threads "$3" --deadline "$deadline" "${extra[@]}" \
    > "$W/log-$1.txt" 2>&1
  echo "$1: exit $? at $(( $(date +%s) - t0 )) s"
}
wants() { case ",$MODELS," in *,$1,*) return 0;; esac; return 1; }
( for m in ppocr-mobile-cls ppocr-v4-rec ppocr-v4-det; do
    wants $m && runone $m "$C/corpus/$m.onnx" 4
  done ) &
wants vit-b16 && runone vit-b16 "$W/models/vit-b16.onnx" 5 &
wants gpt2 && runone gpt2 "$W/models/gpt2.onnx" 6 &
wait
python3 "$C/ort_reference.py" merge --data "$W/data" --spec "$spec" --out "$OUT/ort_reference.json" "$W"/ort/*.json
for f in "$W"/log-*.txt; do
  echo "== $f"; grep -v -e WARNING -e Warning -e "W:onnxruntime" -e Progress "$f" | tail -40
done > "$OUT/log.txt"
