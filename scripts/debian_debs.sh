#!/usr/bin/env bash
# Downloads Debian packages and unpacks them into a directory, without installing them: a private apt
# configuration (its own sources, state and cache; signatures checked against the system's Debian
# archive keyring) and dpkg-deb -x. The system's apt state is not touched and no root is needed. Only
# the named packages are fetched, not their dependencies.
#   scripts/debian_debs.sh SUITE DEST PACKAGE[=VERSION]...
#   scripts/debian_debs.sh trixie build/python3.13 libpython3.13-dev   # -> build/python3.13/usr/include/...
#   scripts/debian_debs.sh --download-to DIR "SUITE..." PACKAGE[=VERSION]...   # the .debs only, into DIR
# A .deb already there is not downloaded again (DEST/.debs, or DIR). PT2ONNX_DEBIAN_MIRROR overrides the
# mirror (http://deb.debian.org/debian).
set -euo pipefail
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
dest=""
if [ "${1:-}" = --download-to ]; then
  [ $# -ge 4 ] || { usage >&2; exit 2; }
  debs=$2 suites=$3; shift 3
else
  [ $# -ge 3 ] || { usage >&2; exit 2; }
  suites=$1 dest=$2 debs=$2/.debs; shift 2
fi
MIRROR=${PT2ONNX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
for tool in apt-get dpkg-deb; do
  command -v $tool >/dev/null || { echo "debian_debs: $tool not found (a Debian-based system is needed)" >&2; exit 1; }
done

# The .deb of PACKAGE[=VERSION] in $debs (apt-get download writes an epoch's ':' as %3a), or nothing.
deb_file() {
  local name=${1%%=*} version='*'
  [ "$1" = "$name" ] || version=${1#*=}
  compgen -G "$debs/${name}_${version/:/%3a}_*.deb" | head -1 || true
}

mkdir -p "$debs"
missing=()
for package in "$@"; do [ -n "$(deb_file "$package")" ] || missing+=("$package"); done
if [ ${#missing[@]} -gt 0 ]; then
  [ -f "$KEYRING" ] || { echo "debian_debs: $KEYRING not found (package debian-archive-keyring)" >&2; exit 1; }
  work=$(mktemp -d "${TMPDIR:-/tmp}/pt2onnx-debian-debs.XXXX")
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/etc/sources.list.d" "$work/etc/preferences.d" "$work/state/lists/partial" "$work/cache/archives/partial"
  : > "$work/state/status"  # an empty dpkg status: the system's installed packages play no part
  for suite in $suites; do echo "deb [signed-by=$KEYRING] $MIRROR $suite main"; done > "$work/etc/sources.list"
  apt_options=(
    -o "Dir::Etc::sourcelist=$work/etc/sources.list" -o "Dir::Etc::sourceparts=$work/etc/sources.list.d"
    -o "Dir::Etc::preferencesparts=$work/etc/preferences.d" -o "Dir::State=$work/state"
    -o "Dir::State::status=$work/state/status" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
    -o "APT::Sandbox::User=$(id -un)" -o "APT::Architectures::=$(dpkg --print-architecture)" -o Acquire::Languages=none)
  if ! apt-get "${apt_options[@]}" -qq update >"$work/update.log" 2>&1; then
    cat "$work/update.log" >&2
    echo "debian_debs: apt-get update against $MIRROR ($suites) failed" >&2; exit 1
  fi
  if ! (cd "$debs" && apt-get "${apt_options[@]}" -qq download "${missing[@]}") >"$work/download.log" 2>&1; then
    cat "$work/download.log" >&2
    echo "debian_debs: downloading ${missing[*]} from $MIRROR ($suites) failed" >&2; exit 1
  fi
  for package in "${missing[@]}"; do
    [ -n "$(deb_file "$package")" ] || { echo "debian_debs: apt-get download $package wrote no .deb into $debs" >&2; exit 1; }
  done
fi
[ -n "$dest" ] || exit 0
for package in "$@"; do dpkg-deb -x "$(deb_file "$package")" "$dest"; done
