#!/usr/bin/env bash
# Regenerate the documentation pages written from the code (the results reference, one page per
# method and the method reference's nav in mkdocs.yml), then build the site:
# `bash scripts/docs.sh` (add `serve` to preview it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${VIRTUAL_ENV:-.venv}/bin/python
# The README's install leaves out the docs extra: add it the first time.
"$PY" -c "import mkdocs, material" 2>/dev/null || "$PY" -m pip install --quiet -c constraints.txt -e ".[docs]"
export NO_MKDOCS_2_WARNING=1  # Material's notice about MkDocs 2.0, not about these docs
"$PY" -m biaslens schema --markdown > docs/results.md
"$PY" -c "from pathlib import Path; from biaslens.report.method_pages import write_nav, write_pages; write_pages(Path('docs/methods'), Path('docs/fidelity.md')); write_nav(Path('mkdocs.yml'))"
"$PY" -m mkdocs "${1:-build}" --strict
