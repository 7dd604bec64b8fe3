#!/usr/bin/env bash
# Fetches ONNX Runtime's C API headers for the custom-op library (onnxruntime_ops/): the onnxruntime
# wheel ships none, and Debian 13 (trixie) packages them as libonnxruntime-dev (1.21, API 21).
# The .deb is downloaded and unpacked by scripts/debian_debs.sh: nothing is installed and the
# system's apt state is not touched. No root needed.
#   scripts/onnxruntime_headers.sh DEST   ->  DEST/usr/include/onnxruntime/onnxruntime_c_api.h
# cmake/OnnxRuntimeHeaders.cmake runs it when no headers are given (PT2ONNX_ONNXRUNTIME_INCLUDE_DIR).
set -euo pipefail
DEST=${1:?usage: $0 DEST}
PACKAGE=${PT2ONNX_ONNXRUNTIME_DEV_PACKAGE:-libonnxruntime-dev}
header="$DEST/usr/include/onnxruntime/onnxruntime_c_api.h"
[ -f "$header" ] && exit 0
bash "$(dirname "$0")/debian_debs.sh" trixie "$DEST" "$PACKAGE" ||
  { echo "onnxruntime_headers: fetching $PACKAGE from Debian 13 (trixie) failed (elsewhere pass -DPT2ONNX_ONNXRUNTIME_INCLUDE_DIR=<dir with onnxruntime_c_api.h>)" >&2; exit 1; }
[ -f "$header" ] || { echo "onnxruntime_headers: $PACKAGE holds no onnxruntime_c_api.h" >&2; exit 1; }
echo "onnxruntime_headers: $(basename "$DEST"/.debs/"$PACKAGE"_*.deb) unpacked into $DEST"
