#!/usr/bin/env bash
# The opt-in slow tier (not part of scripts/test.sh / CI): large real models: the scripted torchvision
# classifiers of samples/scripted_zoo.py, training graphs of zoo models, and the fleet mode on the
# whole torchvision zoo's archives (about 16 GB of temporary files). Expects scripts/setup.sh to have run.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
"$PYTHON" -m pytest -q -p no:cacheprovider tests/slow "$@"
