#!/usr/bin/env bash
# The main job on a shipped sample: export -> run in ONNX Runtime -> compare with PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 samples/demo.py
