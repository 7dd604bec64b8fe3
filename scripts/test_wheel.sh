#!/usr/bin/env bash
# Opt-in tier (not in .ci/run): installs wheels of scripts/build_wheel.sh into a fresh venv inside a
# clean root (a minimal Debian made by debootstrap: that release's Python and pip, none of pt2onnx's
# build dependencies: no compiler, no protobuf, spdlog or fmt, no libpython shared library), with only
# the matching torch wheel and stock onnxruntime (CI's pin), then runs tests/wheel/check_installed.py
# there (CLI convert, pt2onnx.export, pt2onnx.InferenceSession against PyTorch, a PythonOp model in
# onnxruntime through the wheel's custom-op library; ldd of every shared object). One fresh root per
# wheel and Python.
#   bash scripts/test_wheel.sh dist/pt2onnx-0.1.0+torch2.14-*.whl
#   bash scripts/test_wheel.sh WHEEL --python 3.13   # only in the Debian 13 root
#   bash scripts/test_wheel.sh --all                 # every wheel in dist/
# The Python picks the Debian release: 3.11 Debian 12 (bookworm), 3.13 Debian 13 (trixie), 3.14 and
# 3.15 Debian unstable (sid). Left out: every Python the wheel is tagged for that has a release here.
# The first run of a release makes its root (debootstrap from deb.debian.org, ~3 min) and keeps it as a
# tarball, build/clean-root-<release>-python<X.Y>.tar. What a root installs (torch, onnxruntime, the
# wheel's dependencies) is downloaded for its Python by this machine's pip into the wheelhouse of
# scripts/test_torch.sh, then installed offline. Each result is appended to build/wheels-tested.log
# (docs/install.md's table).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ONNXRUNTIME_PIN=$(grep -m1 '^onnxruntime==' "$ROOT/requirements/common.txt")
wheels=() pythons=()
while [ $# -gt 0 ]; do
  case "$1" in
    --all) wheels+=("$ROOT"/dist/pt2onnx-*.whl) ;;
    --python) pythons+=("${2:?--python needs a version, e.g. 3.13}"); shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "test_wheel.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) wheels+=("$(realpath "$1")") ;;
  esac
  shift
done
[ ${#wheels[@]} -gt 0 ] && [ -f "${wheels[0]}" ] || { echo "usage: scripts/test_wheel.sh WHEEL... [--python X.Y] | --all (wheels of scripts/build_wheel.sh)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test_wheel.sh makes and enters a root filesystem (debootstrap, chroot): run it as root" >&2; exit 2; }
bash "$ROOT/scripts/debian_packages.sh" debootstrap || exit 1

release_of() { bash "$ROOT/scripts/python_headers.sh" --suite "$1"; }  # the Debian release packaging X.Y

# A minimal root of that release with python X.Y and its venv module, kept as a tarball.
root_tarball() {
  local python=$1 release
  release=$(release_of "$python") || { echo "[clean root] no Debian release reachable here has CPython $python (3.11, 3.13, 3.14, 3.15)" >&2; return 1; }
  local tarball=$ROOT/build/clean-root-$release-python$python.tar
  if [ ! -f "$tarball" ]; then
    echo "[clean root] debootstrap: a minimal Debian $release with python$python and python$python-venv" >&2
    local staging=$ROOT/build/clean-root-staging-$release
    rm -rf "$staging"
    debootstrap --variant=minbase --include=python$python,python$python-venv "$release" "$staging" http://deb.debian.org/debian \
      > "$ROOT/build/debootstrap-$release.log" 2>&1 || { tail -20 "$ROOT/build/debootstrap-$release.log" >&2; return 1; }
    tar -C "$staging" -cf "$tarball" . && rm -rf "$staging"
  fi
  echo "$tarball"
}

wheelhouse=${PT2ONNX_WHEELHOUSE:-$HOME/.cache/pt2onnx/wheels}
# What the root's pip installs from, mounted read-only: the wheelhouse (filled by this machine's pip
# below) and this machine's own torch files.
sources=(/opt/wheels "$wheelhouse")

test_one() (  # a subshell: its EXIT trap unmounts and removes the root, whatever fails
  local wheel=$1 python=$2 name tarball
  name=$(basename "$wheel")
  tarball=$(root_tarball "$python") || return 1
  local minor=${name#*+torch}; minor=${minor%%-*}  # pt2onnx-0.1.0+torch2.14-cp311-... -> 2.14
  local requirements
  requirements=$(ls "$ROOT"/requirements/torch-"$minor".*.txt 2>/dev/null | head -1)
  [ -n "$requirements" ] || { echo "[clean root] $name: no requirements/torch-$minor.*.txt names its torch" >&2; return 2; }
  local torch_pin
  torch_pin=$(grep -E '^torch==' "$requirements")
  local root
  root=$(mktemp -d "${TMPDIR:-/var/tmp}/pt2onnx-clean-root.XXXX")
  tar -C "$root" -xf "$tarball"
  local mounts=()
  cleanup() { for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null; done; rm -rf --one-file-system "$root"; }
  trap cleanup EXIT
  mount -t proc proc "$root/proc" && mounts+=("$root/proc")
  mount --bind /dev "$root/dev" && mounts+=("$root/dev")
  mount --bind -o ro /sys "$root/sys" && mounts+=("$root/sys")  # torch reads the CPU's topology there
  local links=()
  for s in "${sources[@]}"; do
    [ -d "$s" ] || continue
    mkdir -p "$root$s" && mount --bind -o ro "$s" "$root$s" && mounts+=("$root$s")
  done
  mkdir -p "$root/wheels" "$root/check"
  cp "$wheel" "$root/wheels/"
  cp "$ROOT/tests/wheel/check_installed.py" "$root/check/"
  # What the root has: none of the build's libraries, and no libpython shared library.
  local present
  present=$(chroot "$root" sh -c 'ls /usr/lib/x86_64-linux-gnu/ | grep -E "^lib(protobuf|spdlog|fmt|python3\.[0-9]+)\.so" ; command -v gcc c++ cc' || true)
  [ -z "$present" ] || { echo "[clean root] the root is not clean: $present" >&2; return 1; }
  # What the root installs is downloaded here first, by this machine's pip for that Python (torch,
  # onnxruntime and the wheel's own dependencies, from PyPI or this machine's files): the root's pip
  # then installs offline. (A root's own pip cannot always verify this network's TLS: Python 3.13
  # checks certificates strictly.)
  echo "[clean root] $name: downloading what python$python installs (this machine's pip)"
  # Every manylinux the root's glibc runs (pip takes --platform tags literally).
  local glibc_minor
  glibc_minor=$(chroot "$root" ldd --version | head -1 | grep -oE '2\.[0-9]+$' | cut -d. -f2)
  [ -n "$glibc_minor" ] || { echo "[clean root] cannot read the root's glibc version (ldd --version)" >&2; return 1; }
  local platforms="--platform manylinux2014_x86_64"
  for ((v = 17; v <= glibc_minor; v++)); do platforms+=" --platform manylinux_2_${v}_x86_64"; done
  PIP_CONSTRAINT= python3 -m pip download -q --progress-bar off --dest "$wheelhouse" --only-binary=:all: \
      --python-version "$python" $platforms \
      "$torch_pin" "$ONNXRUNTIME_PIN" "$wheel" \
      > "$root/download.log" 2>&1 || { tail -20 "$root/download.log" >&2; return 1; }
  local pipconf="--no-index --find-links $wheelhouse --find-links /opt/wheels"
  echo "[clean root] $name on Debian $(release_of "$python")'s python$python: python$python -m venv, pip install $torch_pin"
  local t0=$(date +%s)
  chroot "$root" sh -c "python$python -m venv /opt/venv && /opt/venv/bin/pip install -q --progress-bar off $pipconf '$torch_pin'" \
    > "$root/torch-install.log" 2>&1 || { tail -20 "$root/torch-install.log" >&2; return 1; }
  local torch_seconds=$(( $(date +%s) - t0 ))
  echo "[clean root] $name: pip install the wheel (torch took ${torch_seconds} s)"
  t0=$(date +%s)
  chroot "$root" sh -c "/opt/venv/bin/pip install -q --progress-bar off $pipconf /wheels/$name" > "$root/wheel-install.log" 2>&1 ||
    { tail -20 "$root/wheel-install.log" >&2; return 1; }
  # Stock onnxruntime from PyPI beside it: check_installed.py runs a PythonOp model in it through the
  # wheel's custom-op library (docs/onnxruntime.md).
  chroot "$root" sh -c "/opt/venv/bin/pip install -q --progress-bar off $pipconf '$ONNXRUNTIME_PIN'" >> "$root/wheel-install.log" 2>&1 ||
    { tail -20 "$root/wheel-install.log" >&2; return 1; }
  local install_seconds=$(( $(date +%s) - t0 ))
  echo "[clean root] $name: installed in ${install_seconds} s; checks:"
  chroot "$root" sh -c "cd /tmp && env -i PATH=/usr/bin:/bin HOME=/root /opt/venv/bin/python /check/check_installed.py"
  local status=$?
  echo "$name | python$python on Debian $(release_of "$python") | install ${install_seconds} s | checks $([ $status = 0 ] && echo passed || echo FAILED) | $(date -u +%F) $(git -C "$ROOT" rev-parse --short HEAD)" \
    >> "$ROOT/build/wheels-tested.log"
  return $status
)

# The Pythons a wheel is tagged for: pt2onnx-0.1.0+torch2.14-cp311.cp313-cp311.cp313-... -> 3.11 3.13.
wheel_pythons() {
  local tags
  tags=$(basename "$1" | cut -d- -f3)
  for tag in ${tags//./ }; do echo "3.${tag#cp3}"; done
}

status=0
for w in "${wheels[@]}"; do
  if [ ${#pythons[@]} -gt 0 ]; then targets=("${pythons[@]}"); else targets=($(wheel_pythons "$w")); fi
  for python in "${targets[@]}"; do
    if ! wheel_pythons "$w" | grep -qx "$python"; then
      echo "[clean root] $(basename "$w") carries no module for CPython $python" >&2; status=1; continue
    fi
    if [ ${#pythons[@]} -eq 0 ] && ! release_of "$python" >/dev/null; then
      echo "[clean root] $(basename "$w"): CPython $python not tested (no Debian release here has it)"; continue
    fi
    test_one "$w" "$python" || status=1
  done
done
exit $status
