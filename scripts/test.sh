#!/usr/bin/env bash
# Install, lint, and run the whole test suite (slow real-model tests included):
#   1. the main environment (.venv): everything but the real-vLLM tests;
#   2. the vLLM environment (.venv-vllm, vLLM's CPU build): the `served` tests, which run the
#      vllm and openai backends against a real engine and a real `vllm serve`.
# BIASLENS_SKIP_VLLM=1 skips step 2 (and its install).
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests need the Ray extra too (the data-parallel replicas run on a local Ray runtime),
# `datasets` (exported sets are read back with it), the docs extra (`mkdocs build --strict`) and
# lm-evaluation-harness (the exported tasks run in it).
export BIASLENS_EXTRAS=${BIASLENS_EXTRAS:-dev,embeddings,ray,datasets,docs,bench}
bash scripts/install.sh
PY=${VIRTUAL_ENV:-.venv}/bin/python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [ "${BIASLENS_SKIP_VLLM:-0}" != "1" ]; then
    # The served tests run beside the main suite (most of which waits on Python rather than
    # on both cores): vLLM's engine installs (downloads, mostly), then biaslens from a wheel
    # built here first (so that nothing is built in the tree while the tests read it), then
    # the tests, with a temporary folder of their own. Their output follows the main suite's.
    rm -rf test-artifacts/wheel && mkdir -p test-artifacts
    "$PY" -m build --wheel --no-isolation --outdir test-artifacts/wheel . >/dev/null
    WHEEL=$(ls test-artifacts/wheel/biaslens-*.whl)
    SERVED_TMP=$(mktemp -d)
    (
        set -e
        bash scripts/install.sh --vllm "$WHEEL" >test-artifacts/vllm-install.log 2>&1 \
            || { cat test-artifacts/vllm-install.log; exit 1; }
        .venv-vllm/bin/python -m pytest -q -m served -p no:cacheprovider --basetemp "$SERVED_TMP" \
            tests/models/test_vllm.py
    ) >test-artifacts/served.log 2>&1 &
    SERVED=$!
    # a failed step leaves no install or test behind (the job and all it started)
    kill_tree() {
        local child
        for child in $(pgrep -P "$1"); do kill_tree "$child"; done
        kill "$1" 2>/dev/null || true
    }
    trap 'kill_tree "$SERVED"' EXIT
fi
"$PY" -m ruff check src tests benchmarks scripts
"$PY" -m ruff format --check src tests benchmarks scripts
# The documentation site builds with no warning (broken links, missing pages, API docstrings).
NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict --quiet
# One pytest-xdist worker per core (most tests wait on Python, not on arithmetic); each worker
# keeps its share of the cores for torch (tests/conftest.py). BIASLENS_TEST_WORKERS=0: one
# process.
"$PY" -m pytest -q -m "not served" -n "${BIASLENS_TEST_WORKERS:-auto}" --dist worksteal \
    --durations=15 "$@"
if [ "${BIASLENS_SKIP_VLLM:-0}" != "1" ]; then
    STATUS=0
    wait "$SERVED" || STATUS=$?
    cat test-artifacts/served.log
    rm -rf "$SERVED_TMP"
    exit "$STATUS"
fi
