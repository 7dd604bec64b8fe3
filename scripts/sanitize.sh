#!/usr/bin/env bash
# The C++ suite under sanitizers (docs/hardening.md):
#   scripts/sanitize.sh asan [GTEST_FILTER]   AddressSanitizer + UndefinedBehaviorSanitizer (build/asan)
#   scripts/sanitize.sh tsan [GTEST_FILTER]   ThreadSanitizer (build/tsan); default filter: the
#                                             concurrency tests and every test that runs threads
# Builds with clang against the venv's torch (scripts/setup.sh first; CMakePresets.json), runs
# pt2onnx_tests, and exits 1 on any report. Suppressions (tests/sanitizers/) cover LibTorch's own
# code only, each justified there.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
kind=${1:-}
case "$kind" in
  asan) filter=${2:-*} ;;
  tsan) filter=${2:-Concurren*:*Thread*:*Parallel*} ;;
  *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
[ -x "$PYTHON" ] || { echo "[sanitize] no venv at $VENV: run scripts/setup.sh first" >&2; exit 1; }
command -v clang++ >/dev/null || { echo "[sanitize] clang++ is missing (Debian: apt-get install clang)" >&2; exit 1; }
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
build=$ROOT/build/$kind
if [ ! -f "$build/build.ninja" ]; then
  echo "[sanitize] configuring $build (preset $kind)"
  cmake --preset "$kind" -DPython3_EXECUTABLE="$PYTHON" > "$build.configure.log" 2>&1 || { tail -20 "$build.configure.log" >&2; exit 1; }
fi
echo "[sanitize] building pt2onnx_tests in $build (the first build takes about 15 min on 2 cores)"
cmake --build "$build" --target pt2onnx_tests > "$build/build.log" 2>&1 ||
  { grep -E "error" "$build/build.log" | head -20 >&2; echo "[sanitize] build failed: $build/build.log" >&2; exit 1; }
supp=$ROOT/tests/sanitizers
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:detect_odr_violation=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$supp/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp}
export PT2ONNX_SOURCE_DIR=$ROOT
echo "[sanitize] running pt2onnx_tests --gtest_filter='$filter' under $kind"
start=$(date +%s)
status=0
"$build/pt2onnx_tests" --gtest_filter="$filter" > "$build/tests.log" 2>&1 || status=$?
grep -E "^\[  (PASSED|FAILED) |tests ran" "$build/tests.log" | tail -3 || true
if [ $status -ne 0 ] || grep -qE "^(==[0-9]+==ERROR|WARNING: ThreadSanitizer|SUMMARY: .*Sanitizer)|runtime error:" "$build/tests.log"; then
  grep -E "ERROR|WARNING: ThreadSanitizer|SUMMARY|runtime error|FAILED" "$build/tests.log" | head -20 >&2
  echo "[sanitize] $kind: reports or failures after $(( $(date +%s) - start )) s (log $build/tests.log)" >&2
  exit 1
fi
echo "[sanitize] $kind: clean in $(( $(date +%s) - start )) s"
