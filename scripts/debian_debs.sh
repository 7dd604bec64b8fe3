#!/usr/bin/env bash
# Downloads Debian packages of one suite and unpacks them into a directory, without installing them:
# a private apt configuration (its own sources, state and cache under DEST/.apt; signatures checked
# against the system's Debian archive keyring) and dpkg-deb -x. The system's apt state is not
# touched and no root is needed. Only the named packages are fetched, not their dependencies.
#   scripts/debian_debs.sh SUITE DEST PACKAGE[=VERSION]...
#   scripts/debian_debs.sh trixie build/python3.13 libpython3.13-dev   # -> build/python3.13/usr/include/...
# The .debs are kept in DEST/.debs (a second run downloads nothing). PT2ONNX_DEBIAN_MIRROR overrides
# the mirror (http://deb.debian.org/debian).
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || [ $# -lt 3 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; [ $# -ge 3 ] && exit 0 || exit 2
fi
SUITE=$1 DEST=$2; shift 2
MIRROR=${PT2ONNX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
for tool in apt-get dpkg-deb; do
  command -v $tool >/dev/null || { echo "debian_debs: $tool not found (a Debian-based system is needed)" >&2; exit 1; }
done
[ -f "$KEYRING" ] || { echo "debian_debs: $KEYRING not found (package debian-archive-keyring)" >&2; exit 1; }

debs="$DEST/.debs"
mkdir -p "$debs"
missing=()
for package in "$@"; do
  name=${package%%=*}
  compgen -G "$debs/${name}_*.deb" >/dev/null || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  work="$DEST/.apt"
  rm -rf "$work"
  mkdir -p "$work/etc/sources.list.d" "$work/etc/preferences.d" "$work/state/lists/partial" "$work/cache/archives/partial"
  : > "$work/state/status"  # an empty dpkg status: the system's installed packages play no part
  echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main" > "$work/etc/sources.list"
  apt_options=(
    -o "Dir::Etc::sourcelist=$work/etc/sources.list" -o "Dir::Etc::sourceparts=$work/etc/sources.list.d"
    -o "Dir::Etc::preferencesparts=$work/etc/preferences.d" -o "Dir::State=$work/state"
    -o "Dir::State::status=$work/state/status" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
    -o "APT::Sandbox::User=$(id -un)" -o "APT::Architectures::=$(dpkg --print-architecture)" -o Acquire::Languages=none)
  if ! apt-get "${apt_options[@]}" -qq update >"$work/update.log" 2>&1; then
    cat "$work/update.log" >&2
    echo "debian_debs: apt-get update against $MIRROR $SUITE failed" >&2; exit 1
  fi
  if ! (cd "$debs" && apt-get "${apt_options[@]}" -qq download "${missing[@]}") >"$work/download.log" 2>&1; then
    cat "$work/download.log" >&2
    echo "debian_debs: downloading ${missing[*]} from $SUITE failed" >&2; exit 1
  fi
  rm -rf "$work"
fi
for package in "$@"; do
  name=${package%%=*}
  for deb in "$debs/${name}"_*.deb; do dpkg-deb -x "$deb" "$DEST"; done
done
