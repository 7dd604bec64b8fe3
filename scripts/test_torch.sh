#!/usr/bin/env bash
# Opt-in tier (not in .ci/run): set up, build and run the whole suite against another torch, in its
# own venv (.venv-torch<VERSION>) and build directory (build/torch<VERSION>):
#   bash scripts/test_torch.sh 2.13      # torch 2.13.0 (CPU build), from requirements/torch-2.13.txt
# torch 2.13.0 has no torchvision beside it (PyPI's does not import with it): tests that need
# torchvision are reported as skipped with that reason (tests/conftest.py), nothing else is.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: scripts/test_torch.sh VERSION (e.g. 2.13)}
shift
requirements=$ROOT/requirements/torch-$version.txt
[ -f "$requirements" ] || { echo "no $requirements: which torch to install is not known" >&2; exit 2; }
export PT2ONNX_VENV=$ROOT/.venv-torch$version PT2ONNX_BUILD=$ROOT/build/torch$version
export PT2ONNX_REQUIREMENTS=$requirements
grep -q '^torchvision' "$requirements" || export PT2ONNX_WITHOUT_TORCHVISION=1
bash "$ROOT/scripts/setup.sh" || exit 1
bash "$ROOT/scripts/test.sh" "$@"
