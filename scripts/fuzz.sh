#!/usr/bin/env bash
# Coverage-guided fuzzing of pt2onnx's loaders (docs/hardening.md).
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_OPTION...]   fuzz one target for SECONDS
#   scripts/fuzz.sh all SECONDS                            each target in turn, SECONDS each
#   scripts/fuzz.sh list                                   the targets
# TARGET: onnx_session, npy_reader, input_specs, torchscript_archive (fuzz/entry_points.h), and
# python_op_attributes (fuzz/python_op_attributes.py: the PythonOp decoder, with atheris from PyPI).
# Builds build/fuzz with clang and -fsanitize=fuzzer,address,undefined against the torch of the venv
# scripts/setup.sh made (run it first), installs Debian's libFuzzer runtime when missing, makes the
# seed corpus once (fuzz/make_corpus.py: real exports), and keeps what the fuzzer learns in
# build/fuzz/corpus/TARGET. A finding (crash, leak, timeout, sanitizer report) is written to
# build/fuzz/findings/TARGET/ and the script exits 1: fix it, then copy the file into
# tests/fuzz_regressions/TARGET/, which the normal test suite replays.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
TARGETS=(onnx_session npy_reader input_specs torchscript_archive python_op_attributes)
FUZZ_BUILD=${PT2ONNX_FUZZ_BUILD:-$ROOT/build/fuzz}

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
if [ "$1" = list ]; then printf '%s\n' "${TARGETS[@]}"; exit 0; fi
[ $# -ge 2 ] || usage
target=$1 seconds=$2
shift 2
if [ "$target" = all ]; then
  status=0
  for t in "${TARGETS[@]}"; do "$0" "$t" "$seconds" "$@" || status=1; done
  exit $status
fi
printf '%s\n' "${TARGETS[@]}" | grep -qx "$target" || { echo "[fuzz] unknown target '$target' (scripts/fuzz.sh list)" >&2; exit 2; }
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "[fuzz] SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }
[ -x "$PYTHON" ] || { echo "[fuzz] no venv at $VENV: run scripts/setup.sh first" >&2; exit 1; }

if [ "$target" = python_op_attributes ]; then
  # Python code, fuzzed through atheris (libFuzzer for Python; a wheel on PyPI): no clang build.
  "$PYTHON" -c "import atheris" 2>/dev/null || { echo "[fuzz] installing atheris into $VENV"; "$PYTHON" -m pip install -q atheris==3.0.0; }
  fuzzer=("$PYTHON" "$ROOT/fuzz/python_op_attributes.py")
else
  if ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" || ! command -v clang++ >/dev/null; then
    echo "[fuzz] installing clang and its libFuzzer runtime (Debian: clang libclang-rt-14-dev)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev
  fi

  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
  if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
    echo "[fuzz] configuring $FUZZ_BUILD (clang, ASan + UBSan + libFuzzer)"
    cmake -S . -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DPT2ONNX_FUZZ=ON -DPT2ONNX_BUILD_PYTHON=OFF -DPT2ONNX_BUILD_ONNXRUNTIME_OPS=OFF -DPython3_EXECUTABLE="$PYTHON" > "$FUZZ_BUILD.configure.log" 2>&1 ||
      { tail -20 "$FUZZ_BUILD.configure.log" >&2; exit 1; }
  fi
  echo "[fuzz] building fuzz_$target (the first build compiles pt2onnx with clang: about 7 min on 2 cores)"
  cmake --build "$FUZZ_BUILD" --target "fuzz_$target" > "$FUZZ_BUILD/build-$target.log" 2>&1 ||
    { grep -E "error" "$FUZZ_BUILD/build-$target.log" | head -20 >&2; echo "[fuzz] build failed: $FUZZ_BUILD/build-$target.log" >&2; exit 1; }
  fuzzer=("$FUZZ_BUILD/fuzz_$target")
fi

mkdir -p "$FUZZ_BUILD"
seeds=$FUZZ_BUILD/seeds/$target corpus=$FUZZ_BUILD/corpus/$target findings=$FUZZ_BUILD/findings/$target
if [ ! -d "$seeds" ]; then
  echo "[fuzz] making the seed corpora ($FUZZ_BUILD/seeds)"
  "$PYTHON" fuzz/make_corpus.py "$FUZZ_BUILD/seeds"
fi
mkdir -p "$corpus" "$findings"
regressions=()
[ -d "tests/fuzz_regressions/$target" ] && regressions=("tests/fuzz_regressions/$target")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/fuzz/lsan.supp}
echo "[fuzz] fuzzing $target for $seconds s (corpus $corpus, findings $findings)"
start=$(date +%s)
status=0
"${fuzzer[@]}" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=6144 -max_len=1048576 \
  -print_final_stats=1 -artifact_prefix="$findings/" "$@" "$corpus" "$seeds" "${regressions[@]}" \
  > "$FUZZ_BUILD/fuzz-$target.log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
grep -E "^stat::number_of_executed_units|^stat::new_units_added|^#[0-9]+ *DONE" "$FUZZ_BUILD/fuzz-$target.log" | tail -3 || true
echo "$(date -u +%FT%TZ) $target ${elapsed}s status=$status" >> "$FUZZ_BUILD/fuzzing-time.log"
if [ $status -ne 0 ]; then
  # atheris prints a Python exception's traceback before libFuzzer's "fuzz target exited".
  sed -n '/=== Uncaught Python exception/,/libFuzzer: fuzz target exited/p' "$FUZZ_BUILD/fuzz-$target.log" | head -40 >&2
  grep -E "ERROR|SUMMARY|==[0-9]+==|runtime error|deadly signal|Test unit written|^Base64:" "$FUZZ_BUILD/fuzz-$target.log" | head -20 >&2
  echo "[fuzz] $target: finding after ${elapsed}s (log $FUZZ_BUILD/fuzz-$target.log, input in $findings)" >&2
  exit 1
fi
echo "[fuzz] $target: no finding in ${elapsed}s ($FUZZ_BUILD/fuzzing-time.log keeps the total)"
