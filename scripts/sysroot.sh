#!/usr/bin/env bash
# Makes the Debian 11 (bullseye) sysroot that the low-glibc wheel build compiles and links against
# (cmake/toolchains/bullseye-clang.cmake; docs/install.md "The glibc floor"):
# glibc 2.31 and GCC 10's libstdc++ (so every binary needs at most GLIBC_2.31, GLIBCXX_3.4.28), their
# headers, zlib and protobuf 3.12 (whose shared library the wheel bundles), plus bookworm's headers of
# spdlog, fmt and CLI11 (used header-only, so nothing of them is bundled).
#   bash scripts/sysroot.sh DEST        # e.g. build/sysroot-bullseye; idempotent
# The .debs are pinned (below) and downloaded once by scripts/debian_debs.sh (a private apt
# configuration: nothing is installed, no root needed) into $PT2ONNX_DEB_CACHE (~/.cache/pt2onnx/debs):
# bullseye will leave deb.debian.org one day, and a cached .deb keeps building. Each is unpacked with
# dpkg-deb -x; absolute symlinks (/lib64/ld-linux-x86-64.so.2 -> /lib/...) are made relative so that
# they point inside DEST. DEST/protoc runs bullseye's protoc with its own libraries.
set -euo pipefail
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; "") usage >&2; exit 2 ;; esac
DEST=$(realpath -m "$1")
MIRROR=${PT2ONNX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${PT2ONNX_DEB_CACHE:-$HOME/.cache/pt2onnx/debs}

# suite package=version: what the floor build sees. Changing a pin remakes DEST.
PINS=(
  "bullseye libc6=2.31-13+deb11u11"
  "bullseye libc6-dev=2.31-13+deb11u11"
  "bullseye linux-libc-dev=5.10.223-1"
  "bullseye libgcc-s1=10.2.1-6"
  "bullseye libgcc-10-dev=10.2.1-6"
  "bullseye libstdc++6=10.2.1-6"
  "bullseye libstdc++-10-dev=10.2.1-6"
  "bullseye zlib1g=1:1.2.11.dfsg-2+deb11u2"
  "bullseye zlib1g-dev=1:1.2.11.dfsg-2+deb11u2"
  "bullseye libprotobuf23=3.12.4-1+deb11u1"
  "bullseye libprotobuf-dev=3.12.4-1+deb11u1"
  "bullseye libprotoc23=3.12.4-1+deb11u1"
  "bullseye protobuf-compiler=3.12.4-1+deb11u1"
  "bookworm libspdlog-dev=1:1.10.0+ds-0.4"   # bullseye's spdlog is 1.8; pt2onnx needs >= 1.10
  "bookworm libfmt-dev=9.1.0+ds1-2"           # the fmt that spdlog 1.10 is packaged with
  "bookworm libcli11-dev=2.1.2+ds-1"          # bullseye has no CLI11
)

stamp=$DEST/.pt2onnx-sysroot
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${PINS[*]}" ]; then
  exit 0
fi
for tool in dpkg-deb realpath; do
  command -v $tool >/dev/null || { echo "sysroot.sh: $tool not found (a Debian-based build machine is needed)" >&2; exit 1; }
done

# The .deb file of a pin in the cache (apt-get download writes an epoch's ':' as %3a; the
# architecture is amd64 or all), or nothing.
deb_file() { local name=${1%%=*} version=${1#*=}; ls "$CACHE/${name}_${version/:/%3a}"_{amd64,all}.deb 2>/dev/null | head -1; }

packages=()
for pin in "${PINS[@]}"; do packages+=("${pin#* }"); done
if ! bash "$(dirname "$0")/debian_debs.sh" --download-to "$CACHE" "bullseye bookworm" "${packages[@]}"; then
  echo "sysroot.sh: a pin may be gone from $MIRROR: put its .deb into $CACHE (or update the pin in $0)" >&2
  exit 1
fi

rm -rf "$DEST"
mkdir -p "$DEST"
for pin in "${PINS[@]}"; do dpkg-deb -x "$(deb_file "${pin#* }")" "$DEST"; done
# Absolute symlinks point at the build machine's files: make them relative, inside DEST.
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  case "$target" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$DEST$target")" "$link" ;;
  esac
done < <(find "$DEST" -type l -print0)
# bullseye's protoc with bullseye's libprotoc/libprotobuf (the host's glibc runs it).
cat > "$DEST/protoc" <<'EOF'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/usr/bin/protoc" "$@"
EOF
chmod +x "$DEST/protoc"
"$DEST/protoc" --version >/dev/null || { echo "sysroot.sh: $DEST/protoc does not run" >&2; exit 1; }
for f in lib/x86_64-linux-gnu/libc.so.6 usr/include/c++/10/vector usr/lib/gcc/x86_64-linux-gnu/10/crtbegin.o \
         usr/lib/x86_64-linux-gnu/libprotobuf.so usr/include/spdlog/spdlog.h usr/include/fmt/format.h usr/include/CLI/CLI.hpp; do
  [ -e "$DEST/$f" ] || { echo "sysroot.sh: $DEST/$f missing after unpacking" >&2; exit 1; }
done
echo "${PINS[*]}" > "$stamp"
echo "sysroot.sh: ${#PINS[@]} packages unpacked into $DEST ($("$DEST/protoc" --version))"
