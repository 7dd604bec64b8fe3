#!/usr/bin/env bash
# Fetches ONNX Runtime's C API headers for the custom-op library (onnxruntime_ops/): the onnxruntime
# wheel ships none, and Debian 13 (trixie) packages them as libonnxruntime-dev (1.21, API 21).
# The .deb is downloaded through a private apt configuration (its own sources, state and cache
# under DEST; signatures checked against the system's Debian archive keyring) and unpacked with
# dpkg-deb: nothing is installed and the system's apt state is not touched. No root needed.
#   scripts/onnxruntime_headers.sh DEST   ->  DEST/usr/include/onnxruntime/onnxruntime_c_api.h
# cmake/OnnxRuntimeHeaders.cmake runs it when no headers are given (PT2ONNX_ONNXRUNTIME_INCLUDE_DIR).
set -euo pipefail
DEST=${1:?usage: $0 DEST}
PACKAGE=${PT2ONNX_ONNXRUNTIME_DEV_PACKAGE:-libonnxruntime-dev}
MIRROR=${PT2ONNX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
header="$DEST/usr/include/onnxruntime/onnxruntime_c_api.h"
[ -f "$header" ] && exit 0
for tool in apt-get dpkg-deb; do
  command -v $tool >/dev/null || { echo "onnxruntime_headers: $tool not found (a Debian-based system is needed; elsewhere pass -DPT2ONNX_ONNXRUNTIME_INCLUDE_DIR=<dir with onnxruntime_c_api.h>)" >&2; exit 1; }
done
[ -f "$KEYRING" ] || { echo "onnxruntime_headers: $KEYRING not found (package debian-archive-keyring)" >&2; exit 1; }

work="$DEST/.apt"
rm -rf "$work"
mkdir -p "$work/etc/sources.list.d" "$work/etc/preferences.d" "$work/state/lists/partial" \
         "$work/cache/archives/partial" "$work/debs"
: > "$work/state/status"  # an empty dpkg status: the system's installed packages play no part
echo "deb [signed-by=$KEYRING] $MIRROR trixie main" > "$work/etc/sources.list"
apt_options=(
  -o "Dir::Etc::sourcelist=$work/etc/sources.list" -o "Dir::Etc::sourceparts=$work/etc/sources.list.d"
  -o "Dir::Etc::preferencesparts=$work/etc/preferences.d" -o "Dir::State=$work/state"
  -o "Dir::State::status=$work/state/status" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
  -o "APT::Sandbox::User=$(id -un)" -o "APT::Architectures::=$(dpkg --print-architecture)" -o Acquire::Languages=none)
if ! apt-get "${apt_options[@]}" -qq update >"$work/update.log" 2>&1; then
  cat "$work/update.log" >&2
  echo "onnxruntime_headers: apt-get update against $MIRROR trixie failed" >&2; exit 1
fi
if ! (cd "$work/debs" && apt-get "${apt_options[@]}" -qq download "$PACKAGE") >"$work/download.log" 2>&1; then
  cat "$work/download.log" >&2
  echo "onnxruntime_headers: downloading $PACKAGE from trixie failed" >&2; exit 1
fi
dpkg-deb -x "$work"/debs/"$PACKAGE"_*.deb "$DEST"
[ -f "$header" ] || { echo "onnxruntime_headers: $PACKAGE holds no onnxruntime_c_api.h" >&2; exit 1; }
echo "onnxruntime_headers: $(basename "$work"/debs/*.deb) unpacked into $DEST"
rm -rf "$work"
