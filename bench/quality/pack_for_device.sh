#!/bin/sh
# Packs what ort_reference.py needs on a machine with ONNX Runtime's Python tool into one folder
# (about 33 MB): the bench's scripts and model skeletons, make_data.py's data as one tar.xz, and
# the three corpus models. Usage: bench/quality/pack_for_device.sh DIR
# There: OUT=<results folder> DIR/device_reference.sh   (EXPORT=1 exports the transformers anew)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$1
data=${QOPT_BENCH_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/qopt/bench/data}
[ -f "$data/manifest.json" ] || /usr/bin/python3 "$here/make_data.py" --out "$data" >/dev/null
rm -rf "$out"
mkdir -p "$out/corpus" "$out/models"
cp "$here"/quality_common.py "$here"/models.json "$here"/export_transformers.py "$here"/ort_reference.py \
   "$here"/device_reference.sh "$out/"
cp "$here"/models/* "$out/models/"
tar -C "$(dirname "$data")" -cJf "$out/data.tar.xz" "$(basename "$data")"
for m in ppocr-v4-det ppocr-v4-rec ppocr-mobile-cls; do
  path=$(/usr/bin/python3 "$root/tests/corpus/fetch_corpus.py" --only "$m" | awk '{print $2}')
  cp "$path" "$out/corpus/$m.onnx"
done
du -sh "$out"
