#!/usr/bin/env bash
# Sets up everything pt2onnx needs on a fresh Debian 12 machine, then builds and installs it.
# Idempotent: installed packages and an up-to-date build are left alone.
#   - Debian packages (LibTorch, ONNX, protobuf, spdlog, CLI11, GoogleTest, pybind11, CMake, Ninja, ccache,
#     OpenBLAS so ATen's matmuls are not the slow reference BLAS, oneDNN headers for the runtime's matmuls)
#   - ONNX Runtime (onnxruntime-node, pinned by tools/ort/package-lock.json), the test oracle
#   - build (CMake + Ninja + ccache) into build/, install the `pt2onnx` CLI and the Python package
#     for /usr/bin/python3
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev python3-torch python3-torchvision
  libonnx-dev python3-onnx libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev
  pybind11-dev python3-dev python3-numpy python3-pytest
  libopenblas0-pthread libdnnl-dev libonnx-testdata
  nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime from the npm registry, exactly as pinned; the package ships its native library, so
# its download step is skipped (nothing else is fetched).
ORT_VERSION=$(node -p "require('./tools/ort/package.json').dependencies['onnxruntime-node']")
installed=$(node -p "try { require('./tools/ort/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }")
if [ "$installed" != "$ORT_VERSION" ]; then
  echo "[setup] installing onnxruntime-node $ORT_VERSION"
  (cd tools/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
fi
node -e "require('./tools/ort/node_modules/onnxruntime-node')" \
  || { echo "[setup] onnxruntime-node does not load" >&2; exit 1; }

echo "[setup] building (build/)"
start=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
echo "[setup] build took $(( $(date +%s) - start )) s"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO cmake --install build >/dev/null
command -v pt2onnx >/dev/null || { echo "[setup] pt2onnx is not on PATH after install" >&2; exit 1; }
(cd / && /usr/bin/python3 -c "import pt2onnx") || { echo "[setup] pt2onnx does not import in /usr/bin/python3" >&2; exit 1; }
echo "[setup] ready: $(pt2onnx --version), Python package at $(cd / && /usr/bin/python3 -c 'import pt2onnx, os; print(os.path.dirname(pt2onnx.__file__))')"
