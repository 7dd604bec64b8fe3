#!/usr/bin/env bash
# Opt-in tier (not in .ci/run): pt2onnx's custom-op library for stock ONNX Runtime (onnxruntime_ops/,
# docs/onnxruntime.md) in onnxruntime releases from PyPI other than the venv's own (1.32.0, which
# scripts/test.sh tests), each pinned exactly:
#   bash scripts/test_onnxruntime_versions.sh                      # 1.24.4
#   bash scripts/test_onnxruntime_versions.sh 1.24.4 1.21.1        # each in turn
#   bash scripts/test_onnxruntime_versions.sh 1.21.1 -- -k pyop    # after --: arguments for pytest
# Each release is installed alone (pip install --no-deps --target, through pip's own cache) into
# build/onnxruntime-VERSION, kept and reused by later runs, and put first on PYTHONPATH, ahead of the
# venv's onnxruntime, for
#   - pytest tests/onnxruntime_ops (the library installed in the venv's pt2onnx: this script builds
#     nothing, run scripts/setup.sh first). In releases < 1.24 test_training_graphs.py checks the
#     documented refusal of PythonOpGrad instead of running the training models;
#   - the C++ host test (CTest's onnxruntime_ops_cpp_host and onnxruntime_ops_cpp_host_missing_class:
#     BUILD_DIR/onnxruntime_ops/onnxruntime_host) with that release's capi/libonnxruntime.so.VERSION.
# One summary line per release (also appended to build/onnxruntime-tiers.log); exit 1 if anything failed.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

versions=() pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; pytest_args=("$@"); break ;;
    [0-9]*.[0-9]*.[0-9]*) versions+=("$1"); shift ;;
    *) echo "usage: scripts/test_onnxruntime_versions.sh [VERSION...] [-- PYTEST_ARGS] (VERSION: an exact release, e.g. 1.24.4)" >&2; exit 2 ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || versions=(1.24.4)
host=$BUILD_DIR/onnxruntime_ops/onnxruntime_host
mkdir -p "$ROOT/build"

# The installed release: build/onnxruntime-V/onnxruntime, made by a pip install into a staging directory
# moved into place once complete (an interrupted install leaves nothing to reuse).
install_release() {
  local v=$1 dir=$2
  if [ -f "$dir/onnxruntime-$v.dist-info/METADATA" ] && ls "$dir"/onnxruntime/capi/libonnxruntime.so.* > /dev/null 2>&1; then
    echo "[onnxruntime $v] reusing $dir"
    return 0
  fi
  echo "[onnxruntime $v] pip install --no-deps --target $dir onnxruntime==$v"
  rm -rf "$dir.partial"
  "$PYTHON" -m pip install -q --progress-bar off --no-deps --target "$dir.partial" "onnxruntime==$v" || return 1
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

# pytest's last line, "3 failed, 24 passed in 16.53s" -> the count of one outcome (0 when absent).
count() { grep -oE "[0-9]+ $1" <<< "$2" | grep -oE "^[0-9]+" || echo 0; }

status=0 summaries=()
for v in "${versions[@]}"; do
  dir=$ROOT/build/onnxruntime-$v
  if ! install_release "$v" "$dir"; then
    summaries+=("onnxruntime $v | not installed (pip install onnxruntime==$v failed) | FAILED")
    status=1; continue
  fi
  # The release the tests will import: the same interpreter, PYTHONPATH and working directory as pytest's.
  seen=$(PYTHONPATH=$dir "$PYTHON" -c 'import onnxruntime; print(onnxruntime.__version__, onnxruntime.__file__)' 2>&1) ||
    seen="(none: the import failed) $(tail -1 <<< "$seen")"
  echo "[onnxruntime $v] the tests import onnxruntime $seen"
  if [ "${seen%% *}" != "$v" ] || [ "${seen#* }" != "$dir/onnxruntime/__init__.py" ]; then
    summaries+=("onnxruntime $v | PYTHONPATH=$dir imports onnxruntime $seen instead | FAILED")
    status=1; continue
  fi

  log=$ROOT/build/onnxruntime-$v-pytest.log
  pytest_status=0
  PYTHONPATH=$dir "$PYTHON" -m pytest -q -p no:cacheprovider tests/onnxruntime_ops ${pytest_args[@]+"${pytest_args[@]}"} 2>&1 |
    tee "$log" || pytest_status=$?
  last=$(grep -E "^[0-9]+ (passed|failed|error|skipped|deselected)|no tests ran" "$log" | tail -1 || true)
  passed=$(count passed "$last") failed=$(count failed "$last") errors=$(count error "$last") skipped=$(count skipped "$last")
  deselected=$(count deselected "$last"); [ "$deselected" = 0 ] && deselected="" || deselected=", $deselected deselected"
  [ -n "$last" ] || failed="? (no pytest summary: $log)"

  # The C++ host: the model maker prints the host's arguments, the first the ORT library: this release's.
  work=$ROOT/build/onnxruntime-$v-host
  library=$(ls "$dir"/onnxruntime/capi/libonnxruntime.so.* | head -1)
  host_passed=0 host_failed=0 host_notes=()
  if [ ! -x "$host" ]; then
    host_failed=2 host_notes+=("$host is not built (scripts/setup.sh builds it)")
  elif ! args=$(PYTHONPATH=$dir "$PYTHON" tests/onnxruntime_ops/cpp_host/make_model.py "$work"); then
    host_failed=2 host_notes+=("make_model.py failed")
  else
    read -r -a host_args <<< "$args"
    host_args[0]=$library
    echo "[onnxruntime $v] C++ host: $host ${host_args[*]}"
    run_status=0
    PYTHONPATH=$work timeout 300 "$host" "${host_args[@]}" || run_status=$?
    if [ $run_status = 0 ]; then
      host_passed=$((host_passed + 1))
    else
      host_failed=$((host_failed + 1)) host_notes+=("the model run failed (exit $run_status)")
    fi
    # Without PYTHONPATH the Function's module is not found: the error names node and class. As CTest's
    # onnxruntime_ops_cpp_host_missing_class, the message decides (CTest's PASS_REGULAR_EXPRESSION
    # ignores the exit status); an exit other than 2 is reported.
    missing_status=0
    missing=$(env -u PYTHONPATH timeout 300 "$host" "${host_args[@]}" 2>&1) || missing_status=$?
    if grep -qE "Run failed: .*PythonOp [^ ]+ \(hostfunctions.SoftClamp\): LookupError: Function hostfunctions.SoftClamp: cannot import its module" <<< "$missing"; then
      host_passed=$((host_passed + 1))
      [ $missing_status = 2 ] || host_notes+=("the missing class was named, but the host exited $missing_status, not 2")
    else
      host_failed=$((host_failed + 1)) host_notes+=("no located error for the missing class (exit $missing_status): $(tail -3 <<< "$missing" | tr '\n' ' ')")
    fi
  fi

  if [ "$pytest_status" = 0 ] && [ "$host_failed" = 0 ]; then result=passed; else result=FAILED; status=1; fi
  notes=""
  [ ${#host_notes[@]} = 0 ] || notes=" ($(IFS=';'; echo "${host_notes[*]}"))"
  summaries+=("onnxruntime $v | pytest tests/onnxruntime_ops: $passed passed, $failed failed, $errors errors, $skipped skipped$deselected | C++ host: $host_passed passed, $host_failed failed$notes | $result | $(date -u +%F) $(git rev-parse --short HEAD)")
done

for s in "${summaries[@]}"; do
  echo "[onnxruntime tier] $s"
  echo "$s" >> "$ROOT/build/onnxruntime-tiers.log"
done
exit $status
