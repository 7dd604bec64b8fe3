#!/usr/bin/env bash
# Opt-in tier (not in .ci/run): set up, build and run the whole suite against one torch release, in
# its own venv (.venv-torch<VERSION>) and build directory (build/torch<VERSION>):
#   bash scripts/test_torch.sh 2.15.0        # any of requirements/torch-*.txt: 2.9.1 ... 2.15.0
#   bash scripts/test_torch.sh 2.9.1 -k archives   # extra arguments go to pytest
#   bash scripts/test_torch.sh --keep 2.12.1       # keep the venv and build directory afterwards
#   bash scripts/test_torch.sh --zoo 2.12.1        # then bench/zoo.py's default tier, pt2onnx only (~30 min)
# What each tier installs is pinned in requirements/torch-<VERSION>.txt (torch, the torchvision and
# torchaudio that import beside it, the common tools). Every torch but 2.13.0 and 2.14.1 is a download
# of several GB (a CUDA build that runs on the CPU): all tiers share one wheelhouse,
# $PT2ONNX_WHEELHOUSE (default ~/.cache/pt2onnx/wheels), so each release is downloaded once.
# Pins are enforced by a constraints file made from the requirements (never the machine's own cap),
# so pip cannot pick another torch for a package that depends on it.
# A tier's venv (~7 GB), build directory and pytest's temporary files (~11 GB) are removed after
# its run unless --keep is given.
# The run ends with one summary line, also appended to build/torch-tiers.log (docs/testing.md).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
keep=0 zoo=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1; shift ;;
    --zoo) zoo=1; shift ;;
    *) break ;;
  esac
done
version=${1:?usage: scripts/test_torch.sh [--keep] [--zoo] VERSION [pytest args] (VERSION: $(cd "$ROOT/requirements" && ls torch-*.txt | sed 's/torch-//; s/\.txt//' | sort -V | tr '\n' ' '))}
shift
requirements=$ROOT/requirements/torch-$version.txt
if [ ! -f "$requirements" ]; then  # "2.13" names the one pinned 2.13.x
  matches=("$ROOT"/requirements/torch-"$version".*.txt)
  [ ${#matches[@]} -eq 1 ] && [ -f "${matches[0]}" ] && requirements=${matches[0]} ||
    { echo "no requirements/torch-$version.txt: which torch to install is not known" >&2; exit 2; }
  version=$(basename "$requirements" .txt); version=${version#torch-}
fi
export PT2ONNX_VENV=$ROOT/.venv-torch$version PT2ONNX_BUILD=$ROOT/build/torch$version
export PT2ONNX_REQUIREMENTS=$requirements
export PT2ONNX_SKIP_FUZZ=1  # fuzzing runs in CI's tier; every tier replays the fuzz regressions (ctest)
wheelhouse=${PT2ONNX_WHEELHOUSE:-$HOME/.cache/pt2onnx/wheels}
mkdir -p "$wheelhouse" "$ROOT/build"

# The exact pins of this tier, as constraints for every pip call of the set-up: torch and the domain
# libraries cannot move, and the machine's own cap (a constraints file in pip's config) is replaced.
constraints=$ROOT/build/torch$version-constraints.txt
grep -E '^(torch|torchvision|torchaudio)==' "$requirements" > "$constraints"
export PIP_CONSTRAINT=$constraints
export PIP_FIND_LINKS="${PIP_FIND_LINKS:-} $wheelhouse"
tier_packages=$(tr '\n' ' ' < "$constraints")
echo "[torch $version] pins: $tier_packages; wheelhouse $wheelhouse"
if [ "$version" != 2.13.0 ] && [ "$version" != 2.14.1 ]; then  # those two lie on this machine's disk
  start=$(date +%s)
  python3 -m pip download -q --progress-bar off -d "$wheelhouse" $tier_packages ||
    { echo "[torch $version] downloading $tier_packages failed" >&2; exit 1; }
  echo "[torch $version] wheels in the wheelhouse ($(( $(date +%s) - start )) s)"
fi

grep -q '^torchvision' "$requirements" || export PT2ONNX_WITHOUT_TORCHVISION=1
grep -q '^torchaudio' "$requirements" || export PT2ONNX_WITHOUT_TORCHAUDIO=1
start=$(date +%s)
bash "$ROOT/scripts/setup.sh" || exit 1
setup_seconds=$(( $(date +%s) - start ))
build_seconds=$(cat "$PT2ONNX_BUILD/.pt2onnx-build-seconds" 2>/dev/null || echo "?")

# A domain library that is pinned but does not import beside this torch is not tested, with the reason.
for lib in torchvision torchaudio; do
  grep -q "^$lib" "$requirements" || continue
  if ! why=$("$PT2ONNX_VENV/bin/python" -c "import torch, $lib" 2>&1 | tail -1); then
    echo "[torch $version] $lib does not import beside torch $version ($why): its tests are skipped" >&2
    [ $lib = torchvision ] && export PT2ONNX_WITHOUT_TORCHVISION=1 || export PT2ONNX_WITHOUT_TORCHAUDIO=1
  fi
done

log=$ROOT/build/torch$version-test.log  # kept when the tier's directories are removed
# pytest's temporary files of one run reach ~11 GB (exported models): the tier gives them a directory
# of its own, removed with the venv, instead of leaving them among pytest's last three runs.
pytest_tmp=${TMPDIR:-/tmp}/pt2onnx-torch$version-pytest
bash "$ROOT/scripts/test.sh" --basetemp="$pytest_tmp" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
ctest_line=$(grep -E "% tests passed" "$log" | tail -1)  # "100% tests passed out of 764" / "99% ..., 1 tests failed ..."
pytest_line=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed).* in " "$log" | tail -1)

# The zoo's default tier (the torchvision models, pt2onnx only, each run in ONNX Runtime against PyTorch):
# a benchmark, so it does not change the tier's exit status; its count goes into the summary line.
zoo_result="not run"
if [ $zoo = 1 ]; then
  if [ -n "${PT2ONNX_WITHOUT_TORCHVISION:-}" ]; then
    zoo_result="n/a (no torchvision)"
  else
    zoo_md=$ROOT/build/torch$version-zoo.md
    "$PT2ONNX_VENV/bin/python" "$ROOT/bench/zoo.py" --skip-torch-onnx --output-json "$ROOT/build/torch$version-zoo.json" \
      --markdown "$zoo_md" 2>&1 | tee "$ROOT/build/torch$version-zoo.log"
    zoo_result=$(grep -oE "pt2onnx: [0-9]+ of [0-9]+ pass" "$zoo_md" 2>/dev/null || echo "did not finish (build/torch$version-zoo.log)")
  fi
fi
summary="torch $version | $("$PT2ONNX_VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null) | ctest: ${ctest_line:-none} | pytest: ${pytest_line:-none} | build ${build_seconds} s, set-up ${setup_seconds} s | zoo: ${zoo_result} | exit $status | $(date -u +%F) $(git -C "$ROOT" rev-parse --short HEAD)"
echo "[torch $version] $summary"
echo "$summary" >> "$ROOT/build/torch-tiers.log"
if [ $keep = 0 ]; then
  echo "[torch $version] removing $PT2ONNX_VENV, $PT2ONNX_BUILD and $pytest_tmp (--keep keeps them)"
  rm -rf "$PT2ONNX_VENV" "$PT2ONNX_BUILD" "$pytest_tmp"
fi
exit $status
