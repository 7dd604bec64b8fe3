#!/usr/bin/env bash
# Opt-in, as root: proves that every shared object of a wheel of scripts/build_wheel.sh loads on
# glibc 2.31 / GCC 10's libstdc++ (Debian 11), the floor its default toolchain builds for. Python
# cannot run the wheel there (bullseye has Python 3.9; torch >= 2.9 needs 3.10), so the proof is the
# dynamic loader's: `ldd -r` of each shared object inside a minimal Debian 11 root (debootstrap
# minbase, kept as build/bullseye-root.tar), with the wheel unpacked beside a torch (its site-packages
# mounted read-only, so that $ORIGIN/../torch/lib resolves as in an install). It passes when every
# library resolves, no symbol version is missing, and the only undefined symbols are Python's C API
# (the interpreter's, at run time), and when the Python-free core, libpt2onnx.so, loads there with
# dlopen, its static initializers and torch's run (tools/build/load_library.c, built against the
# Debian 11 sysroot of scripts/sysroot.sh).
#   bash scripts/test_wheel_bullseye.sh dist/pt2onnx-0.1.0+torch2.14-*.whl
#   bash scripts/test_wheel_bullseye.sh --site-packages DIR WHEEL   # DIR holds torch/ (default: the
#                                                # wheel's build venv, build_wheel.sh --keep)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; }
site_packages="" wheel=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --site-packages) site_packages=$(realpath "${2:?--site-packages needs a directory}"); shift ;;
    -*) echo "test_wheel_bullseye.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) wheel=$(realpath "$1") ;;
  esac
  shift
done
[ -f "$wheel" ] || { usage >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test_wheel_bullseye.sh makes and enters a root filesystem (debootstrap, chroot): run it as root" >&2; exit 2; }
if [ -z "$site_packages" ]; then
  name=$(basename "$wheel"); minor=${name#*+torch}; minor=${minor%%-*}
  site_packages=$(ls -d "$ROOT"/.venv-wheel-torch"$minor".*/lib/python3*/site-packages 2>/dev/null | head -1 || true)
  [ -n "$site_packages" ] || { echo "test_wheel_bullseye.sh: no .venv-wheel-torch$minor.* (build_wheel.sh --keep): pass --site-packages DIR with torch $minor" >&2; exit 2; }
fi
[ -d "$site_packages/torch/lib" ] || { echo "test_wheel_bullseye.sh: $site_packages has no torch/lib" >&2; exit 2; }
bash "$ROOT/scripts/debian_packages.sh" debootstrap

tarball=$ROOT/build/bullseye-root.tar
if [ ! -f "$tarball" ]; then
  echo "[bullseye root] debootstrap --variant=minbase bullseye (~2 min)"
  staging=$ROOT/build/bullseye-root-staging
  rm -rf "$staging"
  debootstrap --variant=minbase bullseye "$staging" http://deb.debian.org/debian > "$ROOT/build/bullseye-debootstrap.log" 2>&1 ||
    { tail -20 "$ROOT/build/bullseye-debootstrap.log" >&2; exit 1; }
  tar -C "$staging" -cf "$tarball" . && rm -rf "$staging"
fi

root=$(mktemp -d "${TMPDIR:-/var/tmp}/pt2onnx-bullseye-root.XXXX")
mounted=""
cleanup() { [ -z "$mounted" ] || umount -l "$mounted"; rm -rf --one-file-system "$root"; }
trap cleanup EXIT
tar -C "$root" -xf "$tarball"
mkdir -p "$root/opt/site" "$root/opt/wheel"
mount --bind -o ro "$site_packages" "$root/opt/site" && mounted=$root/opt/site
python3 -m zipfile -e "$wheel" "$root/opt/wheel"
ln -s /opt/site/torch "$root/opt/wheel/torch"  # the installed layout: torch beside pt2onnx
echo "[bullseye root] $(chroot "$root" ldd --version | head -1); torch from $site_packages"

status=0
while IFS= read -r so; do
  out=$(chroot "$root" ldd -r "/opt/wheel/$so" 2>&1) || true
  resolved=$(grep -c "=> /" <<<"$out" || true)
  missing=$(grep -E "not found" <<<"$out" || true)
  undefined=$(grep "undefined symbol" <<<"$out" || true)
  not_python=$(grep -vE "undefined symbol: _?Py" <<<"$undefined" || true)
  if [ -z "$missing$not_python" ]; then
    echo "[bullseye root] $so: $resolved libraries resolved; undefined symbols: $(grep -c . <<<"$undefined" || true), all Python's C API"
  else
    echo "[bullseye root] $so: missing libraries, symbol versions or non-Python symbols:" >&2
    printf '%s\n%s\n' "$missing" "$not_python" | grep . | head -20 | sed 's/^/    /' >&2
    status=1
  fi
done < <(cd "$root/opt/wheel" && find . -name '*.so*' -type f | sed 's|^\./||' | sort)
# The core has no Python in it: load it for real, as an import would.
sysroot=$ROOT/build/sysroot-bullseye
bash "$ROOT/scripts/sysroot.sh" "$sysroot" > /dev/null
clang-16 --sysroot="$sysroot" --gcc-toolchain="$sysroot/usr" -O2 -o "$root/opt/load_library" \
  "$ROOT/tools/build/load_library.c" -ldl
if out=$(chroot "$root" /opt/load_library /opt/wheel/pt2onnx/libpt2onnx.so 2>&1); then
  echo "[bullseye root] $out (dlopen: its libraries, symbol versions and static initializers, torch's included)"
else
  echo "[bullseye root] $out" >&2; status=1
fi
[ $status = 0 ] && echo "[bullseye root] $(basename "$wheel"): every shared object resolves on glibc 2.31; the core loads" ||
  echo "[bullseye root] $(basename "$wheel"): FAILED (above)" >&2
exit $status
