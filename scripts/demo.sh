#!/usr/bin/env bash
# The main job on a shipped sample: export -> run in ONNX Runtime -> compare with PyTorch.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
"$PYTHON" samples/demo.py
