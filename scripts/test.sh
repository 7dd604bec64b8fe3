#!/usr/bin/env bash
# Runs the whole test suite: GoogleTest (converter tests: TorchScript IR -> TorchScript interpreter
# vs pt2onnx -> ONNX Runtime) through CTest, then the Python/end-to-end suite through pytest.
# Expects scripts/setup.sh to have run (README's second command does both).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
export PT2ONNX_LINT_EACH_PASS=1  # lint the TorchScript graph after every lowering pass (docs/testing.md)
ctest --test-dir build --output-on-failure -j 2 || status=1
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python tests/e2e || status=1
exit $status
