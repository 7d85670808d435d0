"""The options several commands share, declared once: the runner's (where a run goes, the
preset, the request cache, the benchmark data, ``--dry-run``)."""

from __future__ import annotations

from pathlib import Path

from biaslens.common.options import Option

OUTPUT = Option(
    "output", "--output", "-o", type=Path, help="Run directory (default: runs/<method>/<name>)."
)
PRESET = Option(
    "preset",
    help="paper: the paper's protocol for every setting not given (see the departures table in "
    "docs/fidelity.md); default: biaslens's defaults.",
)
DATA_DIR = Option(
    "data_dir",
    type=Path,
    help="Folder holding the public datasets (else $BIASLENS_DATA_DIR or the download cache).",
)
CACHE_DIR = Option(
    "cache_dir",
    type=Path,
    help="Folder of the request cache shared by every run (else $BIASLENS_REQUEST_CACHE_DIR or "
    "~/.cache/biaslens/requests): answers any run computed are reused.",
)
NO_CACHE = Option(
    "no_cache",
    type=bool,
    default=False,
    help="Keep this run's answers in its own folder only (it still resumes): reuse nothing "
    "from, and add nothing to, the shared request cache.",
)
DRY_RUN = Option(
    "dry_run",
    type=bool,
    default=False,
    help="Count the requests and estimate the prompt and completion tokens the run would send, "
    "then stop: no model is loaded and no server is called (cost of a paid API).",
)
PRICE = Option(
    "price",
    help="With --dry-run: the price per million tokens, one number for all or PROMPT,COMPLETION "
    "(e.g. 0.15,0.60), to estimate the run's cost.",
)
MODELS_FILE = Option("models_file", type=Path, help="A file with one model per line.")
