#!/bin/sh
# Packs a qopt build into one relocatable folder (bin/, lib/, lib/qopt/passes/, and every shared
# library they need beyond the C library), so compare_ort_quantize_static.py can run on a machine
# that has ONNX Runtime's Python tool but no Debian packages. Usage:
#   bench/calib/device_bundle.sh BUILD_DIR OUT.tar.xz
# On the other machine: tar xf OUT.tar.xz; LD_LIBRARY_PATH=$PWD/qopt-bundle/lib qopt-bundle/bin/qopt
set -eu
build=$1
out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/qopt-bundle
mkdir -p "$root/bin" "$root/lib/qopt"
cp "$build/bin/qopt" "$build/bin/qopt-run" "$root/bin/"
cp -P "$build"/lib/*.so* "$root/lib/"
cp -r "$build/lib/qopt/passes" "$root/lib/qopt/"
# The system libraries of the tools and every pass module, except the C runtime itself.
for f in "$root"/bin/* "$root"/lib/qopt/passes/*.so; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    libqopt*) ;;
    *) cp -L "$lib" "$root/lib/" ;;
  esac
done
strip --strip-unneeded "$root"/bin/* "$root"/lib/*.so* "$root"/lib/qopt/passes/*.so 2>/dev/null || true
tar -C "$stage" -cJf "$out" qopt-bundle
ls -l "$out"
