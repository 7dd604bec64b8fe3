#!/usr/bin/env bash
# Builds pt2onnx's binary wheel against one torch release, or every supported one, repaired so that at
# run time it needs only that torch and the base libraries of its manylinux platform (docs/install.md):
#   bash scripts/build_wheel.sh 2.14.1       # -> dist/pt2onnx-0.1.0+torch2.14-cp311-cp311-manylinux_2_*.whl
#   bash scripts/build_wheel.sh 2.14.1 --python 3.13 --python 3.14   # -> ...-cp311.cp313.cp314-cp311.cp313.cp314-...
#   bash scripts/build_wheel.sh --all        # every torch of packaging/wheels.toml, each with every
#                                            # Python of its row that can be built here
#   bash scripts/build_wheel.sh --keep 2.13.0   # keep the venv afterwards
#   bash scripts/build_wheel.sh --host-toolchain 2.14.1   # with this machine's GCC (a higher tag)
# The default toolchain is clang-16 against a Debian 11 sysroot (scripts/sysroot.sh,
# cmake/toolchains/bullseye-clang.cmake): glibc 2.31 and GCC 10's libstdc++, so the wheel is
# manylinux_2_31 by construction and, with two symbols linked to older versions
# (cmake/compat/manylinux_2_28.cpp), manylinux_2_28, torch's own; the script fails if any binary of
# the wheel needs GLIBC > 2.28, GLIBCXX > 3.4.24 or CXXABI > 1.3.11 (tools/build/symbol_versions.py,
# its report in the build dir) or auditwheel tags it higher.
# A wheel serves the build's own Python (this machine's python3) and each --python X.Y, which must be
# in its torch's row of packaging/wheels.toml: a Python layer each over one core (docs/install.md,
# "Which Pythons"); the other Pythons' headers come from Debian (scripts/python_headers.sh: 3.13,
# 3.14, 3.15) or PT2ONNX_PYTHON3XY_INCLUDE_DIR.
# Each torch gets its own venv (.venv-wheel-torch<V>, ~6 GB, removed afterwards unless --keep) and
# build directory (build/wheel-floor-torch<V>, or build/wheel-torch<V> with --host-toolchain; ~2 GB
# with its precompiled headers, kept: a second run is incremental). Torches that do not lie on this
# machine's disk come from the shared wheelhouse of scripts/test_torch.sh ($PT2ONNX_WHEELHOUSE).
# The repair is auditwheel's: ONNX is linked statically by the build; protobuf (and, with
# --host-toolchain, spdlog and fmt: the default toolchain uses them header-only) is copied into the
# wheel under a private soname (pt2onnx.libs/); torch's libraries are not, they are the user's
# torch's (found through the RPATH $ORIGIN/../torch/lib). The platform tag is the lowest manylinux
# that auditwheel finds every symbol version of the binaries in.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
keep=0 host_toolchain=0 all_pythons=0 versions=() pythons=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --host-toolchain) host_toolchain=1 ;;
    --python) pythons+=("${2:?--python needs a version, e.g. 3.13}"); shift ;;
    --all) all_pythons=1
           for f in "$ROOT"/requirements/torch-*.txt; do versions+=("$(basename "$f" .txt | sed 's/^torch-//')"); done ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build_wheel.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) versions+=("$1") ;;
  esac
  shift
done
[ ${#versions[@]} -gt 0 ] || { echo "usage: scripts/build_wheel.sh [--keep] [--host-toolchain] VERSION... [--python X.Y]... | --all (VERSION: $(cd "$ROOT/requirements" && ls torch-*.txt | sed 's/torch-//; s/\.txt//' | sort -V | tr '\n' ' '))" >&2; exit 2; }

# The floor's limits: auditwheel's manylinux_2_28 policy (tools/build/symbol_versions.py checks them).
FLOOR_TAG=manylinux_2_28 FLOOR_MAX=(GLIBC=2.28 GLIBCXX=3.4.24 CXXABI=1.3.11)
cmake_args=() build_prefix=wheel-torch repair_args=()
if [ $host_toolchain = 0 ]; then
  bash "$ROOT/scripts/debian_packages.sh" clang-16 || exit 1
  sysroot=$ROOT/build/sysroot-bullseye
  bash "$ROOT/scripts/sysroot.sh" "$sysroot" || { echo "build_wheel.sh: making the Debian 11 sysroot failed" >&2; exit 1; }
  export PT2ONNX_SYSROOT=$sysroot
  cmake_args=(-Ccmake.define.CMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchains/bullseye-clang.cmake")
  build_prefix=wheel-floor-torch
  # The sysroot's protobuf, which auditwheel bundles: only it, so that auditwheel's own Python does not
  # load the sysroot's other libraries.
  mkdir -p "$ROOT/build/sysroot-bundled-libs"
  ln -sfn "$sysroot"/usr/lib/x86_64-linux-gnu/libprotobuf.so.[0-9]* "$ROOT/build/sysroot-bundled-libs/"
  repair_args=(--library-path "$ROOT/build/sysroot-bundled-libs")
else
  bash "$ROOT/scripts/debian_packages.sh" || exit 1
fi
wheelhouse=${PT2ONNX_WHEELHOUSE:-$HOME/.cache/pt2onnx/wheels}
dist=$ROOT/dist
mkdir -p "$dist" "$wheelhouse" "$ROOT/build"
table=$ROOT/build/wheels.log  # one line per wheel built (docs/install.md's table)

OWN_PYTHON=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# The Pythons packaging/wheels.toml lists for torch X.Y.Z's minor, one per line.
matrix_pythons() {
  python3 - "$ROOT/packaging/wheels.toml" "${1%.*}" <<'PY'
import sys, tomllib
row = tomllib.load(open(sys.argv[1], "rb"))["torch"].get(sys.argv[2])
print("\n".join(row["pythons"]) if row else "")
PY
}

build_one() {
  local version=$1
  local requirements=$ROOT/requirements/torch-$version.txt
  [ -f "$requirements" ] || { echo "[wheel $version] no requirements/torch-$version.txt: not a supported torch" >&2; return 2; }
  # The Python layers besides the build's own: --python's, or (--all) every one of the torch's row
  # whose headers this machine reaches.
  local supported layers=() p
  supported=$(matrix_pythons "$version")
  [ -n "$supported" ] || { echo "[wheel $version] packaging/wheels.toml has no row for torch ${version%.*}" >&2; return 2; }
  if ! grep -qx "$OWN_PYTHON" <<< "$supported"; then
    echo "[wheel $version] torch ${version%.*} has no wheel for this machine's Python $OWN_PYTHON, which builds it" >&2; return 2
  fi
  if [ $all_pythons = 1 ]; then
    for p in $supported; do
      local include_var=PT2ONNX_PYTHON${p/./}_INCLUDE_DIR
      if [ "$p" != "$OWN_PYTHON" ] && { [ -n "${!include_var:-}" ] || bash "$ROOT/scripts/python_headers.sh" --suite "$p" >/dev/null; }; then
        layers+=("$p")
      fi
    done
  else
    for p in "${pythons[@]}"; do
      grep -qx "$p" <<< "$supported" || { echo "[wheel $version] torch ${version%.*} has no wheel for CPython $p (packaging/wheels.toml: $(echo $supported))" >&2; return 2; }
      [ "$p" != "$OWN_PYTHON" ] && layers+=("$p")
    done
  fi
  local python_args=()
  if [ ${#layers[@]} -gt 0 ]; then
    python_args=("-Ccmake.define.PT2ONNX_PYTHON_VERSIONS=$(IFS=';'; echo "${layers[*]}")")
    for p in "${layers[@]}"; do
      local include_var=PT2ONNX_PYTHON${p/./}_INCLUDE_DIR
      [ -n "${!include_var:-}" ] && python_args+=("-Ccmake.define.$include_var=${!include_var}")
    done
  fi
  local venv=$ROOT/.venv-wheel-torch$version build=$ROOT/build/$build_prefix$version
  local raw=$build/raw-wheel start=$(date +%s)
  # Only torch's pin applies (the tier's domain libraries are not build dependencies); it replaces
  # this machine's own cap on torch (a constraints file in pip's config).
  local constraints=$build/constraints.txt
  mkdir -p "$build"
  grep -E '^torch==' "$requirements" > "$constraints"
  export PIP_CONSTRAINT=$constraints PIP_FIND_LINKS="${PIP_FIND_LINKS:-} $wheelhouse"
  if [ ! -x "$venv/bin/python" ]; then
    echo "[wheel $version] creating $venv"
    python3 -m venv "$venv" || return 1
  fi
  echo "[wheel $version] installing $(cat "$constraints") and the build tools"
  "$venv/bin/python" -m pip install -q -r "$constraints" \
    $(grep -E '^(numpy|scikit-build-core|cmake|ninja)==' "$ROOT/requirements/common.txt") \
    -r "$ROOT/requirements/wheel.txt" || { echo "[wheel $version] pip install failed" >&2; return 1; }
  echo "[wheel $version] building for CPython $OWN_PYTHON${layers[*]:+ and ${layers[*]}} (build directory $build)"
  rm -rf "$raw"
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
  local build_start=$(date +%s)
  if ! (cd "$ROOT" && PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip wheel --no-build-isolation --no-deps -v \
          -Cbuild-dir="$build/cmake" "${cmake_args[@]}" "${python_args[@]}" -w "$raw" . > "$build/pip-wheel.log" 2>&1); then
    grep -E "error|Error|FAILED" "$build/pip-wheel.log" | head -40 >&2
    echo "[wheel $version] building failed: $build/pip-wheel.log" >&2
    return 1
  fi
  local build_seconds=$(( $(date +%s) - build_start ))
  local wheel
  wheel=$(ls "$raw"/pt2onnx-*.whl) || return 1
  echo "[wheel $version] repairing $(basename "$wheel")"
  local torch_lib
  torch_lib=$("$venv/bin/python" -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
  # torch's libraries and what they bring stay the user's torch's: every library in its lib/ directory.
  local excludes=()
  for lib in "$torch_lib"/*.so*; do excludes+=(--exclude "$(basename "$lib")"); done
  PATH="$venv/bin:$PATH" "$venv/bin/python" "$ROOT/tools/build/repair_wheel.py" "$wheel" "$dist" "$torch_lib" "${excludes[@]}" "${repair_args[@]}" \
    > "$build/repair.log" 2>&1 || { cat "$build/repair.log" >&2; echo "[wheel $version] repair failed" >&2; return 1; }
  local repaired
  repaired=$(tail -1 "$build/repair.log")
  # Every binary's needed symbol versions (and torch's libtorch_cpu.so's, for comparison).
  local limits=()
  if [ $host_toolchain = 0 ]; then
    limits=(--max "${FLOOR_MAX[@]}")
    case "$(basename "$repaired")" in
      *manylinux_2_1[0-9]_*|*manylinux_2_2[0-8]_*|*manylinux[12]*_x86_64*) ;;
      *) echo "[wheel $version] $(basename "$repaired") is tagged above $FLOOR_TAG" >&2; return 1 ;;
    esac
  fi
  if ! python3 "$ROOT/tools/build/symbol_versions.py" "$repaired" --also "$torch_lib/libtorch_cpu.so" "${limits[@]}" \
       > "$build/symbol-versions.txt" 2>&1; then
    cat "$build/symbol-versions.txt" >&2
    echo "[wheel $version] a binary of the wheel needs symbol versions above $FLOOR_TAG's (above)" >&2; return 1
  fi
  sed 's/^/  /' "$build/symbol-versions.txt"
  local size_mb
  size_mb=$(awk -v b="$(stat -c %s "$repaired")" 'BEGIN { printf "%.1f", b / 1048576 }')
  echo "[wheel $version] $repaired: ${size_mb} MB, built in ${build_seconds} s ($(( $(date +%s) - start )) s with set-up)"
  echo "torch $version | $(basename "$repaired") | $([ $host_toolchain = 0 ] && echo "clang-16 + bullseye sysroot" || echo "host GCC") | ${size_mb} MB | build ${build_seconds} s | $(date -u +%F) $(git -C "$ROOT" rev-parse --short HEAD)" >> "$table"
  if [ $keep = 0 ]; then rm -rf "$venv"; fi
}

status=0
for v in "${versions[@]}"; do build_one "$v" || status=1; done
exit $status
