#!/usr/bin/env bash
# The whole OpInfo corpus (tests/opinfo/README.md), traced and scripted, checked against
# tests/opinfo/expectations.txt: about 10 minutes on 2 cores. Opt-in (.ci/run runs the fast subset).
# Extra arguments go to run.py (e.g. --update to rewrite the expectations, then review the diff).
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
status=0
"$PYTHON" tests/opinfo/run.py --subset all --progress "$@" || status=1
"$PYTHON" tests/opinfo/run.py --subset scripted --progress "$@" || status=1
exit $status
