#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, address + undefined sanitizers) in the
# sanitized build that scripts/sanitize.sh also uses, build-asan (or $QOPT_FUZZ_BUILD_DIR), and
# runs each for $QOPT_FUZZ_SECONDS (default 60), starting from the seeds in fuzz/corpus/<target>.
# Prints the executions of every target. A crash, leak, timeout or broken property fails the
# script and leaves the input in BUILD_DIR/crashes/<target>/; add it to fuzz/regressions/<target>/
# once fixed, where the fuzz-replay-<target> test replays it.
#
#   scripts/fuzz.sh [TARGET...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QOPT_FUZZ_BUILD_DIR:-${QOPT_ASAN_BUILD_DIR:-build-asan}}"
SECONDS_PER_TARGET="${QOPT_FUZZ_SECONDS:-60}"
JOBS="${QOPT_JOBS:-$(nproc)}"
ALL_TARGETS=(onnx-import pipeline tensor-files calib-cache interpreter image audio)
TARGETS=("$@")
if [ "${#TARGETS[@]}" -eq 0 ]; then TARGETS=("${ALL_TARGETS[@]}"); fi

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
scripts/configure-sanitized.sh "$BUILD_DIR"
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]/#/qopt_fuzz_}"
# This build uses clang and its sanitizer and libFuzzer runtimes (linked implicitly, so
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
