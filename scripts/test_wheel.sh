#!/usr/bin/env bash
# Opt-in tier (not in .ci/run): installs wheels of scripts/build_wheel.sh into a fresh venv inside a
# clean root (a minimal Debian 12 made by debootstrap: Python 3.11 and pip, none of pt2onnx's build
# dependencies: no compiler, no protobuf, spdlog or fmt, no libpython3.11.so), with only the matching
# torch wheel and stock onnxruntime (CI's pin), then runs tests/wheel/check_installed.py there (CLI
# convert, pt2onnx.export, pt2onnx.InferenceSession against PyTorch, a PythonOp model in onnxruntime
# through the wheel's custom-op library; ldd of every shared object). One fresh root per wheel.
#   bash scripts/test_wheel.sh dist/pt2onnx-0.1.0+torch2.14-*.whl
#   bash scripts/test_wheel.sh --all          # every wheel in dist/
# The first run makes the root (debootstrap from deb.debian.org, ~3 min) and keeps it as a tarball in
# build/clean-root.tar. torch comes from this machine's files or the wheelhouse of scripts/test_torch.sh.
# Each wheel's result is appended to build/wheels-tested.log (docs/install.md's table).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ONNXRUNTIME_PIN=$(grep -m1 '^onnxruntime==' "$ROOT/requirements/common.txt")
wheels=()
for a in "$@"; do
  case "$a" in
    --all) wheels+=("$ROOT"/dist/pt2onnx-*.whl) ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) wheels+=("$(realpath "$a")") ;;
  esac
done
[ ${#wheels[@]} -gt 0 ] && [ -f "${wheels[0]}" ] || { echo "usage: scripts/test_wheel.sh WHEEL... | --all (wheels of scripts/build_wheel.sh)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test_wheel.sh makes and enters a root filesystem (debootstrap, chroot): run it as root" >&2; exit 2; }
bash "$ROOT/scripts/debian_packages.sh" debootstrap || exit 1

tarball=$ROOT/build/clean-root.tar
if [ ! -f "$tarball" ]; then
  echo "[clean root] debootstrap: a minimal Debian 12 with python3 and python3-venv"
  staging=$ROOT/build/clean-root-staging
  rm -rf "$staging"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$staging" http://deb.debian.org/debian \
    > "$ROOT/build/debootstrap.log" 2>&1 || { tail -20 "$ROOT/build/debootstrap.log" >&2; exit 1; }
  tar -C "$staging" -cf "$tarball" . && rm -rf "$staging"
fi
wheelhouse=${PT2ONNX_WHEELHOUSE:-$HOME/.cache/pt2onnx/wheels}
# Where pip finds torch: the machine's own index of files and the wheelhouse, mounted read-only.
sources=(/opt/pypi /opt/pypi-more /opt/wheels "$wheelhouse")

test_one() (  # a subshell: its EXIT trap unmounts and removes the root, whatever fails
  local wheel=$1 name
  name=$(basename "$wheel")
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
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mkdir -p "$root/wheels" "$root/check"
  cp "$wheel" "$root/wheels/"
  cp "$ROOT/tests/wheel/check_installed.py" "$root/check/"
  # What the root has: none of the build's libraries, and no libpython shared library.
  local present
  present=$(chroot "$root" sh -c 'ls /usr/lib/x86_64-linux-gnu/ | grep -E "^lib(protobuf|spdlog|fmt|python3\.11)\.so" ; command -v gcc c++ cc' || true)
  [ -z "$present" ] || { echo "[clean root] the root is not clean: $present" >&2; return 1; }
  local pipconf="--find-links /opt/wheels --find-links $wheelhouse --extra-index-url file:///opt/pypi/simple --extra-index-url file:///opt/pypi-more/simple"
  echo "[clean root] $name: python3 -m venv, pip install $torch_pin"
  local t0=$(date +%s)
  chroot "$root" sh -c "python3 -m venv /opt/venv && /opt/venv/bin/pip install -q --progress-bar off $pipconf '$torch_pin'" \
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
  echo "$name | install ${install_seconds} s | checks $([ $status = 0 ] && echo passed || echo FAILED) | $(date -u +%F) $(git -C "$ROOT" rev-parse --short HEAD)" \
    >> "$ROOT/build/wheels-tested.log"
  return $status
)

status=0
for w in "${wheels[@]}"; do test_one "$w" || status=1; done
exit $status
