"""biaslens methods as lm-evaluation-harness tasks (``biaslens export lm-eval``).

A task folder holds the YAML, the rows (``data.jsonl``, the inputs a biaslens run of the same
settings asks about) and a ``utils.py`` that loads them, turns lm-eval's log-likelihoods into
the method's per-input values and aggregates them into its headline numbers. A method that
lm-eval's request types can express declares how (its ``MethodSpec.lm_eval``, see
:class:`~biaslens.framework.hooks.LmEvalTask`); this module asks the method registry which do,
and names none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from biaslens.common import atomic
from biaslens.common.options import Option
from biaslens.data.export_writer import check_destination
from biaslens.errors import BiaslensError
from biaslens.framework.registry import methods
from biaslens.framework.settings import Limit


class ExportSettings(BaseModel):
    """What every task reads besides its own options."""

    limit: Limit = Field(
        default=None,
        description="Inputs kept per W value or contexts, drawn as biaslens run's --limit draws "
        "them (0: all).",
    )


def exporters() -> dict[str, Any]:
    """The methods with an lm-eval task, by name: their :class:`LmEvalTask`."""
    return {name: spec.lm_eval for name, spec in methods().items() if spec.lm_eval is not None}


def task_options() -> tuple[Option, ...]:
    """The options the tasks read besides ``--limit`` and ``--data-dir`` (each once)."""
    found: dict[str, Option] = {}
    for task in exporters().values():
        for option in task.options:
            found.setdefault(option.keyword, option)
    return tuple(found.values())


def export_tasks(
    methods: tuple[str, ...],
    folder: Path | str,
    limit: int | None = None,
    overwrite: bool = False,
    data_dir: Path | None = None,
    **options: Any,
) -> list[Path]:
    """Write the lm-eval tasks of ``methods`` (default: every method that has one) under
    ``folder``, each reading the ``options`` it declares (the others' are left to them);
    returns the task folders."""
    tasks = exporters()
    methods = methods or tuple(tasks)
    unknown = [m for m in methods if m not in tasks]
    if unknown:
        raise BiaslensError(
            f"{unknown[0]} has no lm-evaluation-harness task (its requests are not lm-eval's "
            f"request types); tasks exist for: {', '.join(tasks)}"
        )
    extra = sorted(set(options) - {option.keyword for option in task_options()})
    if extra:
        raise BiaslensError(f"no lm-eval task takes {', '.join(extra)}")
    folder = Path(folder)
    check_destination(folder, overwrite)
    with atomic.staged_folder(folder) as staging:  # an old export stays until this one is whole
        names = []
        for method in methods:
            task = tasks[method]
            values = {o.keyword: options.get(o.keyword, o.default) for o in task.options}
            names.append(task.writer()(staging, limit, data_dir, **values).name)
    return [folder / name for name in names]
