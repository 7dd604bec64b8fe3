# Sourced by the scripts: which venv and build directory they work in.
#   PT2ONNX_VENV   the venv (default .venv: torch 2.14.1 + torchvision, what CI runs)
#   PT2ONNX_BUILD  the CMake build directory of that venv's pt2onnx (default build/main)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${PT2ONNX_VENV:-$ROOT/.venv}
BUILD_DIR=${PT2ONNX_BUILD:-$ROOT/build/main}
PYTHON=$VENV/bin/python
export PATH="$VENV/bin:$PATH"
