"""``--dry-run``: what a run would ask its model, counted without loading it."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.framework.registry import get_method
from biaslens.framework.spec import RunContext
from biaslens.models.config import BackendConfig
from biaslens.models.runtime.dry_run import planning_model
from biaslens.progress import NoProgress, Progress
from biaslens.store.run import RunStore

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.models.runtime.dry_run import PlanningLM


@dataclass
class RunPlan:
    """What a run would ask a model (``--dry-run``): requests and estimated tokens per request
    type, how the tokens were counted, and any note (a method that stopped on placeholders)."""

    model: str
    backend: str
    table: pd.DataFrame
    counted_by: str
    notes: list[str]


def plan_method(
    method: str,
    *,
    backend: BackendConfig | None = None,
    data_dir: Path | str | None = None,
    preset: str | None = None,
    progress: Progress | None = None,
    planner: PlanningLM | None = None,
    **values: Any,
) -> RunPlan:
    """Count what ``run_method`` with the same arguments would ask the model, without loading
    it or calling a server: the method runs on placeholder answers
    (:mod:`biaslens.models.runtime.dry_run`) in a scratch folder that is removed afterwards.
    ``planner``: the stand-in of the model, read already (it counts on a fresh copy of it)."""

    spec = get_method(method)
    if not spec.needs_model:
        raise BiaslensError(f"{method} asks no model anything: there is nothing to plan")
    if spec.trains_model:
        raise BiaslensError(
            f"{method} fine-tunes the model in process: it sends no requests to count"
        )
    for unused in ("output", "cache_dir", "no_cache"):  # nothing is written or asked
        values.pop(unused, None)
    backend = backend or BackendConfig()
    settings = spec.build_settings(preset, **values)
    planner = planner.fresh() if planner is not None else planning_model(settings.model, backend)
    settings = spec.for_model(settings, planner, preset)
    notes = []
    with tempfile.TemporaryDirectory(prefix="biaslens-dry-run-") as scratch:
        with RunStore(Path(scratch) / "run", spec.name, settings.recorded(), {}) as store:
            said = _Notes(progress or NoProgress())
            context = RunContext(
                store=store,
                lm=planner,
                backend_config=backend,
                progress=said,
                data_dir=Path(data_dir) if data_dir is not None else None,
            )
            try:
                spec.body(context, settings)
            except Exception as error:  # placeholders are not answers: later stages may balk
                if not planner.requests:  # refused before any request: the run's verdict too
                    raise
                notes.append(
                    "the method stopped on the placeholder answers after the requests above "
                    f"({type(error).__name__}: {str(error)[:100]}); any request it would send "
                    "after that point is not counted"
                )
    notes += said.lines
    if planner.requests.get("sample"):
        notes.append(
            "each sample request is one call asking its replies with n (10 by default, prompt "
            "tokens billed once); a server that returns fewer replies than n is asked again, one "
            "reply a call, so such a server takes up to 10 times the calls and prompt tokens; one "
            "more call checks that the endpoint samples"
        )
    rows = [
        {
            "request_type": name,
            "requests": count,
            "prompt_tokens": planner.prompt_tokens[name],
            "completion_tokens_at_most": planner.completion_tokens[name],
        }
        for name, count in planner.requests.items()
    ]
    table = pd.DataFrame(
        rows, columns=["request_type", "requests", "prompt_tokens", "completion_tokens_at_most"]
    )
    if len(table) > 1:
        total = table.drop(columns="request_type").sum()
        table.loc[len(table)] = {"request_type": "total", **total.to_dict()}
    return RunPlan(settings.model, backend.backend, table, planner.counted_by, notes)


class _Notes:
    """The method's progress, keeping the lines it notes (a plan shows them: an adaptive
    allocation's calls at alike per-input variances, which is what the placeholders reply)."""

    def __init__(self, progress: Progress) -> None:
        self.progress, self.lines = progress, []

    def task(self, description: str, total: int, unit: str = "req"):
        return self.progress.task(description, total, unit)

    def note(self, message: str) -> None:
        self.lines.append(message)


MAX_PRICE = 1e6
"""The largest price per million tokens ``--price`` takes (beyond it a cost is no longer a
number a reader can use, and 1e308 would overflow to ∞)."""


def parse_price(text: str) -> tuple[float, float]:
    """``--price``: per million tokens, ``P`` for prompt and completion alike or ``P,C``."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or not all(0 <= v <= MAX_PRICE for v in values):
        raise BiaslensError(
            f"--price takes the price per million tokens, one number (0.5) or prompt and "
            f"completion prices (0.15,0.60), each from 0 to {MAX_PRICE:g}; got {text!r}"
        )
    return values[0], values[-1]


def estimated_cost(table: pd.DataFrame, prompt_price: float, completion_price: float) -> str:
    """One line: the cost of a plan's tokens (the completion tokens are the most the run may
    generate, so the cost is an upper estimate)."""
    rows = table[table["request_type"] != "total"]
    prompt = float(rows["prompt_tokens"].sum())
    completion = float(rows["completion_tokens_at_most"].sum())
    cost = (prompt * prompt_price + completion * completion_price) / 1e6
    shown = f"{cost:,.2f}" if cost >= 0.01 or cost == 0 else f"{cost:.2g}"
    return (
        f"estimated cost: at most {shown} ({prompt:,.0f} prompt tokens × {prompt_price:g} + "
        f"{completion:,.0f} completion tokens × {completion_price:g} per million), in the "
        "price's currency"
    )
