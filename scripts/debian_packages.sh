#!/usr/bin/env bash
# The Debian packages that building pt2onnx needs (scripts/setup.sh, scripts/build_wheel.sh): the C++
# libraries it links beside torch (protobuf, spdlog, fmt, CLI11, zlib), GoogleTest, ccache, ONNX's
# conformance data. ONNX itself is built from its source release (cmake/OnnxLibrary.cmake). Installs
# the missing ones only; arguments name more packages (scripts/test_wheel.sh: debootstrap).
set -euo pipefail
PACKAGES=("$@"

  build-essential ccache pkg-config
  libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev libonnx-testdata zlib1g-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[packages] installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

