#!/usr/bin/env bash
# The opt-in slow tier (not part of scripts/test.sh / CI): large real models, e.g. every scripted
# torchvision classifier of samples/scripted_zoo.py. Expects scripts/setup.sh to have run.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
"$PYTHON" -m pytest -q -p no:cacheprovider tests/slow "$@"
