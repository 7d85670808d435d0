#!/usr/bin/env bash
# Install into the project virtualenv, lint, and run the whole test suite (slow real-model
# tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PY=${VIRTUAL_ENV:-.venv}/bin/python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$PY" -m ruff check src tests benchmarks scripts
"$PY" -m pytest -q "$@"
