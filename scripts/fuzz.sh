#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, address + undefined sanitizers) into build-fuzz
# (or $QOPT_FUZZ_BUILD_DIR) and runs each for $QOPT_FUZZ_SECONDS (default 60), starting from the
# seeds in fuzz/corpus/<target>. Prints the executions of every target. A crash, leak, timeout or
# broken property fails the script and leaves the input in build-fuzz/crashes/<target>/; add it
# to fuzz/regressions/<target>/ once fixed, where the fuzz-replay-<target> test replays it.
#
#   scripts/fuzz.sh [TARGET...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QOPT_FUZZ_BUILD_DIR:-build-fuzz}"
SECONDS_PER_TARGET="${QOPT_FUZZ_SECONDS:-60}"
JOBS="${QOPT_JOBS:-$(nproc)}"
ALL_TARGETS=(onnx-import pipeline tensor-files calib-cache interpreter)
TARGETS=("$@")
if [ "${#TARGETS[@]}" -eq 0 ]; then TARGETS=("${ALL_TARGETS[@]}"); fi

LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# A build type of its own: -O1 everywhere (the interpreter's -O3 is for release builds only).
cmake -G Ninja -S . -B "$BUILD_DIR" "${LAUNCHER[@]}" \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
  -DQOPT_FUZZ=ON -DQOPT_BUILD_TESTS=OFF -DQOPT_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]/#/qopt_fuzz_}"
# This build alone uses clang and its sanitizer and libFuzzer runtimes (linked implicitly, so
# named here): install-deps must cover them too.
/usr/bin/python3 tests/deps/check_install_list.py --build-dir "$BUILD_DIR" --source-dir . \
  --install-deps scripts/install-deps.sh \
  --tool "$(clang++-14 -print-file-name=libclang_rt.fuzzer-x86_64.a)" \
  --tool "$(clang++-14 -print-file-name=libclang_rt.asan-x86_64.a)" \
  --tool "$(clang++-14 -print-file-name=libclang_rt.ubsan_standalone-x86_64.a)"

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
summary=()
for target in "${TARGETS[@]}"; do
  work="$BUILD_DIR/fuzz-corpus/$target"
  crashes="$BUILD_DIR/crashes/$target"
  log="$BUILD_DIR/fuzz-$target.log"
  mkdir -p "$work" "$crashes"
  # New inputs go to the work folder; the committed seeds are only read.
  set +e
  "$BUILD_DIR/bin/qopt-fuzz-$target" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=25 -max_len=65536 \
    -artifact_prefix="$crashes/" "$work" "fuzz/corpus/$target" >"$log" 2>&1
  rc=$?
  set -e
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  summary+=("$(printf '%-14s %10s executions  exit %s' "$target" "${executions:-?}" "$rc")")
  if [ "$rc" -ne 0 ]; then
    failed+=("$target")
    echo "fuzz: $target failed (exit $rc); log: $log" >&2
    grep -E "^(==[0-9]+==ERROR|SUMMARY|qopt fuzz:|artifact_prefix|Test unit written)" "$log" >&2 || true
    tail -n 40 "$log" >&2
  fi
done
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failing targets: ${failed[*]} (inputs under $BUILD_DIR/crashes/)" >&2
  exit 1
fi
