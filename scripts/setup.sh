#!/usr/bin/env bash
# Sets up everything pt2onnx needs on a fresh Debian 12 machine, then builds and installs it.
# Idempotent: installed packages are left alone and the build is incremental.
#   - Debian packages: the C++ libraries pt2onnx links beside torch (protobuf, spdlog, fmt, CLI11),
#     GoogleTest, ccache, ONNX's conformance data (ONNX itself is built from its source release by
#     the CMake build: cmake/OnnxLibrary.cmake)
#   - a venv (.venv) with torch 2.14.1, torchvision 0.29.1, torchaudio 2.11.0 and the pinned tools of
#     requirements/torch-2.14.1.txt (onnxruntime, the oracle; pytest; scikit-build-core, cmake, ninja)
#   - pt2onnx built against that torch and installed into the venv by
#     `pip install --no-build-isolation .` (the `pt2onnx` CLI and `import pt2onnx` from one install),
#     with the GoogleTest suite in the same build directory (build/main)
# Another torch: PT2ONNX_VENV=DIR PT2ONNX_BUILD=DIR PT2ONNX_REQUIREMENTS=FILE (scripts/test_torch.sh).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
REQUIREMENTS=${PT2ONNX_REQUIREMENTS:-requirements/torch-2.14.1.txt}

bash "$ROOT/scripts/debian_packages.sh"

if [ ! -x "$PYTHON" ]; then
  echo "[setup] creating the venv $VENV"
  python3 -m venv "$VENV"
fi
stamp="$VENV/.pt2onnx-requirements"
if ! cmp -s <(cat "$REQUIREMENTS" requirements/common.txt) "$stamp" 2>/dev/null; then
  echo "[setup] installing $REQUIREMENTS into $VENV (torch from this machine's files or the tier's wheelhouse)"
  start=$(date +%s)
  "$PYTHON" -m pip install -q -r "$REQUIREMENTS"
  cat "$REQUIREMENTS" requirements/common.txt > "$stamp"
  echo "[setup] pip install took $(( $(date +%s) - start )) s"
fi

echo "[setup] building and installing pt2onnx ($BUILD_DIR)"
# ccache keys on paths relative to the checkout, so another clone of the same sources hits the cache.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
start=$(date +%s)
mkdir -p "$BUILD_DIR"
if ! "$PYTHON" -m pip install --no-build-isolation -v \
      -Cbuild-dir="$BUILD_DIR" -Ccmake.define.PT2ONNX_BUILD_TESTS=ON . > "$BUILD_DIR/pip-install.log" 2>&1; then
  grep -E "error|Error|FAILED" "$BUILD_DIR/pip-install.log" | head -40 >&2
  tail -20 "$BUILD_DIR/pip-install.log" >&2
  echo "[setup] building pt2onnx failed: $BUILD_DIR/pip-install.log" >&2
  exit 1
fi
echo "[setup] build + install took $(( $(date +%s) - start )) s"
echo $(( $(date +%s) - start )) > "$BUILD_DIR/.pt2onnx-build-seconds"
command -v pt2onnx | grep -q "^$VENV/bin/" || { echo "[setup] pt2onnx is not in $VENV/bin after install" >&2; exit 1; }
(cd / && "$PYTHON" -c "import pt2onnx") || { echo "[setup] pt2onnx does not import in $PYTHON" >&2; exit 1; }
echo "[setup] ready: $(pt2onnx --version | paste -sd " ") in $VENV ($("$PYTHON" -c 'import torch; print("torch", torch.__version__)'))"
