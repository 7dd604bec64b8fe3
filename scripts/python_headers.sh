#!/usr/bin/env bash
# Fetches CPython X.Y's C headers for building pt2onnx's Python layer for that Python
# (cmake/PythonLayers.cmake): Debian's libpython3.X-dev of the suite that packages X.Y, unpacked by
# scripts/debian_debs.sh (nothing installed, no root needed).
#   scripts/python_headers.sh 3.13 DEST   ->  DEST/usr/include/python3.13/Python.h
#   scripts/python_headers.sh --suite 3.13  ->  trixie (the Debian release of that Python; exit 1: none)
# Suites reachable here: 3.11 bookworm, 3.13 trixie, 3.14 and 3.15 sid. No Debian suite packages 3.10
# or 3.12: give those headers to CMake yourself (-DPT2ONNX_PYTHON310_INCLUDE_DIR=...; a manylinux
# image has them in /opt/python/cp310-cp310/include/python3.10).
set -euo pipefail
suite_of() {
  case "$1" in
    3.11) echo bookworm ;;
    3.13) echo trixie ;;
    3.14|3.15) echo sid ;;
    *) return 1 ;;
  esac
}
if [ "${1:-}" = --suite ]; then suite_of "${2:?usage: $0 --suite X.Y}"; exit; fi
VERSION=${1:?usage: $0 X.Y DEST} DEST=${2:?usage: $0 X.Y DEST}
[ -f "$DEST/usr/include/python$VERSION/Python.h" ] && exit 0
suite=$(suite_of "$VERSION") || {
  echo "python_headers: no Debian suite reachable here packages CPython $VERSION's headers (3.11: bookworm, 3.13: trixie, 3.14 and 3.15: sid); give them with -DPT2ONNX_PYTHON${VERSION/./}_INCLUDE_DIR=<directory holding Python.h>" >&2
  exit 1; }
bash "$(dirname "$0")/debian_debs.sh" "$suite" "$DEST" "libpython$VERSION-dev"
[ -f "$DEST/usr/include/python$VERSION/Python.h" ] || { echo "python_headers: libpython$VERSION-dev of $suite holds no python$VERSION/Python.h" >&2; exit 1; }
echo "python_headers: $(basename "$DEST"/.debs/libpython"$VERSION"-dev_*.deb) unpacked into $DEST"
