"""Where a run goes: its default folder, and the refusal of a folder that holds another
method's run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.store.paths import ANOTHER_OUTPUT
from biaslens.store.run import RunStore, read_config


def default_output(spec, settings, model: dict[str, Any] | None) -> tuple[Path, str | None]:
    """The run folder when none is given, and why it has a hash (None when it has none).

    ``runs/METHOD/NAME`` is kept for the run of the full set (``--limit`` at its default):
    whatever ran before, the full run lands there. A limited run (a first look) goes to a
    sibling named with a short hash of its settings and model, as does a run whose plain folder
    holds a run of other settings, another commit of the model or the model read another way
    (``--chat``, another dtype), so that a default run never collides with an earlier one (an
    explicit ``--output`` keeps the refusal)."""
    folder = spec.default_output(settings)
    limit = type(settings).model_fields.get("limit")
    if limit is not None and getattr(settings, "limit", None) != limit.default:
        why = f"--limit {settings.limit}: {folder} is kept for the full set"
        return _sibling(folder, settings, model), why
    try:
        RunStore.ensure_compatible(folder, spec.name, settings.recorded(), model)
        return folder, None
    except ConfigMismatchError as mismatch:
        return _sibling(folder, settings, model), f"{folder} holds another run ({mismatch.reason})"


def _sibling(folder: Path, settings, model: dict[str, Any] | None) -> Path:
    commit = (model or {}).get("commit_sha")
    numerics = (model or {}).get("numerics")
    text = json.dumps([settings.recorded(), commit, numerics], sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return folder.with_name(f"{folder.name}-{digest}")


def check_output_method(output: Path, method: str) -> None:
    """Refuse, before the model loads, an output folder that holds another method's run."""
    if (output / "config.yaml").is_file():
        existing = read_config(output)["method"]
        if existing != method:
            raise BiaslensError(
                f"output directory {output} holds a {existing} run, not {method}; {ANOTHER_OUTPUT}"
            )
