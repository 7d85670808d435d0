"""An audit's plan, before any model work: whether each model can be audited at all (one line
when it cannot), and each step's requests, tokens and estimated time, or why it does not
apply."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biaslens.auditing import rates
from biaslens.auditing.steps import Step
from biaslens.errors import BiaslensError
from biaslens.models.config import BackendConfig
from biaslens.models.registry import get_backend
from biaslens.models.runtime.dry_run import planning_model
from biaslens.progress import Progress, note

if TYPE_CHECKING:
    from biaslens.models.runtime.dry_run import PlanningLM


@dataclass
class PlannedStep:
    """A step as planned for one model: its requests and tokens, or why it does not apply."""

    step: Step
    requests: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    left_out: str | None = None
    not_counted: str | None = None
    seconds: float | None = None
    settings: Any = None
    """The step's settings as the loaded model decides them (built and checked once, then
    run as they are); None until the model is loaded."""
    finished: bool = False
    """The step's run is already in the audit's folder: it is read back, not run again."""

    @property
    def tokens(self) -> int | None:
        """Prompt tokens and the most completion tokens the step may generate."""
        if self.prompt_tokens is None:
            return None
        return self.prompt_tokens + (self.completion_tokens or 0)


def model_planner(model: str, backend: BackendConfig) -> tuple[PlanningLM | None, str | None]:
    """The stand-in that counts every step for ``model``, read once, and why the model cannot be
    audited (a name that is no model, a folder that holds none, the hub out of reach), in one
    line, found before any step is planned. A served model is known by name only (its endpoint
    decides): no stand-in and no problem, each step reads its own."""
    if not get_backend(backend.backend).local:
        return None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return planning_model(model, backend), None
    except BiaslensError as error:
        return None, str(error)


def plan_steps(
    model: str,
    steps: list[Step],
    backend: BackendConfig,
    data_dir,
    progress: Progress,
    folder: Path | None = None,
    planner: PlanningLM | None = None,
) -> list[PlannedStep]:
    """Each step counted without loading the model (:func:`biaslens.runner.plan_method`); a
    step the method refuses for this model (its class, missing data) is left out with the
    method's own reason. A served model's planner knows the model only by its name (not
    whether its endpoint returns log-probabilities): its refusals leave the step uncounted, and
    the loaded model decides (:func:`refusal`). A step whose run is already finished in the
    model's audit ``folder`` is planned as finished (it is read back, not counted again).
    ``planner``: the model's stand-in (:func:`model_planner`), read once for every step."""
    from biaslens.runner import plan_method

    local = get_backend(backend.backend).local
    plannable = local or get_backend(backend.backend).plan()
    planned = []
    for step in steps:
        if folder is not None and (folder / step.name / "summary.json").is_file():
            planned.append(PlannedStep(step, seconds=0.0, finished=True))
            continue
        if not plannable:
            planned.append(PlannedStep(step, not_counted="the backend has no planner"))
            continue
        note(progress, f"planning {step.name} for {model}")
        try:
            with warnings.catch_warnings():  # about the placeholder answers, not the model
                warnings.simplefilter("ignore")
                plan = plan_method(
                    step.method,
                    backend=backend,
                    data_dir=data_dir,
                    preset=step.preset,
                    planner=planner,
                    model=model,
                    **step.settings,
                )
        except BiaslensError as error:
            kept = {"left_out": str(error)} if local else {"not_counted": str(error)}
            planned.append(PlannedStep(step, **kept))
            continue
        total = plan.table.iloc[-1]
        entry = PlannedStep(
            step,
            int(total["requests"]),
            int(total["prompt_tokens"]),
            int(total["completion_tokens_at_most"]),
        )
        entry.seconds = rates.estimate(model, backend.backend, step.method, entry.tokens)
        planned.append(entry)
    return planned
