#!/usr/bin/env bash
# Runs the whole test suite: GoogleTest (converter tests: TorchScript IR -> TorchScript interpreter
# vs pt2onnx -> ONNX Runtime) through CTest, then the Python/end-to-end suite through pytest, in the
# venv scripts/setup.sh made (README's second command does both), then (unless PT2ONNX_SKIP_FUZZ=1) each fuzz target for 60 s
# under ASan + UBSan (scripts/fuzz.sh; a finding fails the run). Extra arguments go to pytest.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
status=0
# Free disk at each stage: a run that fails for want of room says so in its log.
disk() { echo "[test] $1: $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') free on $ROOT's disk"; }
disk "before CTest"
export PT2ONNX_LINT_EACH_PASS=1  # lint the TorchScript graph after every lowering pass (docs/testing.md)
ctest --test-dir "$BUILD_DIR" --output-on-failure -j 2 || status=1
disk "before pytest"
"$PYTHON" -m pytest -q -p no:cacheprovider --durations=30 tests/python tests/e2e tests/onnxruntime_ops tests/opinfo "$@" || status=1
# A fixed seed: the same mutations on every run of the same corpus (docs/hardening.md). The other
# torch tiers (scripts/test_torch.sh) set PT2ONNX_SKIP_FUZZ=1: they replay the fuzz regressions (CTest).
if [ "${PT2ONNX_SKIP_FUZZ:-0}" != 1 ]; then
  disk "before fuzzing"
  bash scripts/fuzz.sh all 60 -seed=1 || status=1
fi
disk "at the end"
exit $status
