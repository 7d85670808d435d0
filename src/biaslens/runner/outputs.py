"""Where a run goes: its default folder, and the refusal of a folder that holds another
method's run."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.store.paths import ANOTHER_OUTPUT
from biaslens.store.run import RunStore, read_config


def default_output(spec, settings, model: dict[str, Any] | None) -> Path:
    """The run folder when none is given: ``runs/METHOD/NAME``, or, when that folder holds a run
    of other settings (another ``--limit``), another commit of the model or the model read
    another way (``--chat``, another dtype), a sibling named with a short hash of these settings
    and model, so that a default run never collides with an earlier one (an explicit
    ``--output`` keeps the refusal)."""
    folder = spec.default_output(settings)
    try:
        RunStore.ensure_compatible(folder, spec.name, settings.recorded(), model)
        return folder
    except ConfigMismatchError as mismatch:
        commit = (model or {}).get("commit_sha")
        numerics = (model or {}).get("numerics")
        text = json.dumps([settings.recorded(), commit, numerics], sort_keys=True, default=str)
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        sibling = folder.with_name(f"{folder.name}-{digest}")
        warnings.warn(
            f"{folder} holds a run of other settings ({mismatch.reason}); this run is in {sibling}",
            stacklevel=4,
        )
        return sibling


def check_output_method(output: Path, method: str) -> None:
    """Refuse, before the model loads, an output folder that holds another method's run."""
    if (output / "config.yaml").is_file():
        existing = read_config(output)["method"]
        if existing != method:
            raise BiaslensError(
                f"output directory {output} holds a {existing} run, not {method}; {ANOTHER_OUTPUT}"
            )
