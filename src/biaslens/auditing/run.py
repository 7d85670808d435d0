"""``biaslens audit``: every method that applies to each model, planned first, then run into one
folder, and a bias card per model.

The audit's folder holds ``audit.json`` (what was asked), one folder per model with a run
folder per step and the card (``card.json``, ``card.md``, ``card.html``), and, for several
models, the comparison across them. Rerunning the same audit reuses every finished run (read
back, not recomputed) and the request cache (a step that was interrupted resumes); one failing
step is recorded in the card and the others go on.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslens.auditing import rates
from biaslens.auditing.answers import answer_questions, primaries_of
from biaslens.auditing.card import BiasCard, Failed, LeftOut, ReferenceRow, ordered, rows_of
from biaslens.auditing.planning import PlannedStep, model_planner, plan_steps
from biaslens.auditing.render import write_card
from biaslens.auditing.steps import Step, audit_steps
from biaslens.common import atomic
from biaslens.common.files import make_dir
from biaslens.errors import BiaslensError
from biaslens.framework.registry import get_method
from biaslens.models.config import BackendConfig
from biaslens.models.loader import load_model
from biaslens.progress import NoProgress, Progress, note
from biaslens.runner import run_method
from biaslens.store.lock import LOCK_FILE, RunLock
from biaslens.store.paths import safe_name
from biaslens.store.result import RunResult

AUDIT_FILE = "audit.json"
AUDIT_FORMAT = 1


@dataclass
class ModelAudit:
    """One model's audit: its plan, the runs it finished and its card."""

    model: str
    folder: Path
    plan: list[PlannedStep] = field(default_factory=list)
    card: BiasCard | None = None
    computed: int = 0
    reused: int = 0
    primaries: list = field(default_factory=list)
    """The questions' primary estimates of its finished runs (:mod:`.answers`)."""
    unavailable: str | None = None
    """Why the model cannot be audited (not found, not loaded): it then has no card."""


@dataclass
class AuditResult:
    """What :func:`run_audit` returns: the folder and each model's audit."""

    folder: Path
    models: list[ModelAudit]
    comparison: Path | None = None


def default_folder(models: Sequence[str], size: str) -> Path:
    """``audits/<model>-<size>`` (one model) or ``audits/<first>-and-<k>-more-<size>``."""
    head = safe_name(models[0])
    more = f"-and-{len(models) - 1}-more" if len(models) > 1 else ""
    return Path("audits") / f"{head}{more}-{size}"


def _asked(models, size, methods, steps: list[Step], backend: BackendConfig) -> dict[str, Any]:
    """What ``audit.json`` records: a rerun with the same record resumes the audit."""
    return {
        "format_version": AUDIT_FORMAT,
        "models": list(models),
        "size": size,
        "methods": sorted(methods) if methods else None,
        "steps": [
            {"name": s.name, "method": s.method, "settings": dict(s.settings), "preset": s.preset}
            for s in steps
        ],
        "backend": backend.describe(),
    }


def _claim_folder(folder: Path, asked: dict[str, Any]) -> None:
    """Open ``folder`` for this audit: a new folder, or one holding the very same audit."""
    _check_folder(folder, asked)
    path = folder / AUDIT_FILE
    if not path.is_file():
        make_dir(folder, "audit folder")
        atomic.write_json(path, asked)


def _check_folder(folder: Path, asked: dict[str, Any]) -> None:
    """Refuse ``folder`` unless it is new, empty or holds the very same audit (checked before
    any planning, and by ``--dry-run`` too, which writes nothing)."""
    path = folder / AUDIT_FILE
    if path.is_file():
        try:
            held = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise BiaslensError(f"{path}: not an audit file ({error})") from None
        if held != asked:
            differ = sorted(k for k in asked if held.get(k) != asked[k])
            raise BiaslensError(
                f"{folder} holds an audit of other settings ({', '.join(differ)} differ): give "
                "another --output, or the same settings to resume it"
            )
        return
    if folder.is_dir() and any(p.name != LOCK_FILE for p in folder.iterdir()):
        raise BiaslensError(f"{folder} is not empty and holds no audit: give another --output")


def run_audit(
    models: Sequence[str],
    *,
    size: str = "quick",
    methods: Sequence[str] | None = None,
    output: str | Path | None = None,
    backend: BackendConfig | None = None,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress: Progress | None = None,
    dry_run: bool = False,
    on_plan=None,
) -> AuditResult:
    """Audit ``models`` (module docstring). ``on_plan(model_audit)`` is called with each
    model's plan before any model work (the CLI prints it); ``dry_run`` stops there."""
    backend = backend or BackendConfig()
    progress = progress or NoProgress()
    models = distinct_models(models, progress)
    steps, left_out = audit_steps(size, list(methods) if methods else None)
    folder = Path(output) if output is not None else default_folder(models, size)
    asked = atomic.json_safe(_asked(models, size, methods, steps, backend))
    _check_folder(folder, asked)  # a folder of another audit is refused before any work
    audits = []
    for model in models:
        audit = ModelAudit(model, folder / safe_name(model))
        planner, audit.unavailable = model_planner(model, backend)
        if audit.unavailable is None:
            audit.plan = plan_steps(
                model, steps, backend, data_dir, progress, audit.folder, planner
            )
        audits.append(audit)
        if on_plan is not None:
            on_plan(audit)
    if dry_run or all(a.unavailable for a in audits):  # nothing to audit: no folder either
        return AuditResult(folder, audits)
    _claim_folder(folder, asked)
    lock = RunLock(folder)  # a second audit of this folder at once stops in one line
    lock.acquire()
    try:
        for audit in audits:
            if audit.unavailable is None:
                _audit_model(audit, size, left_out, backend, data_dir, cache_dir, progress)
        comparison = None
        carded = [a for a in audits if a.card is not None]
        if len(carded) > 1:
            from biaslens.auditing.compare import write_comparison

            comparison = write_comparison(folder, carded)
    finally:
        lock.release()
    return AuditResult(folder, audits, comparison)


def distinct_models(models: Sequence[str], progress: Progress) -> list[str]:
    """The models to audit, each once (blank names dropped; a name given twice is audited
    once, with a note); two names whose folders would be the same are refused."""
    seen: dict[str, int] = {}
    for model in models:
        name = (model or "").strip()
        if name:
            seen[name] = seen.get(name, 0) + 1
    if not seen:
        raise BiaslensError("give at least one model (--model or --models-file)")
    for name, times in seen.items():
        if times > 1:
            note(progress, f"{name} is listed {times} times: audited once")
    folders: dict[str, str] = {}
    for name in seen:
        other = folders.setdefault(safe_name(name), name)
        if other != name:
            raise BiaslensError(
                f"{other!r} and {name!r} would share the audit folder {safe_name(name)}: list "
                "one of them, or audit them apart (--output)"
            )
    return list(seen)


def _audit_model(audit: ModelAudit, size, left_out, backend, data_dir, cache_dir, progress):
    card = BiasCard(
        model=audit.model,
        size=size,
        created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        left_out=[LeftOut(method=m, why=w) for m, w in left_out.items()],
    )
    runnable = []
    for planned in audit.plan:
        if planned.left_out is not None:
            card.left_out.append(LeftOut(method=planned.step.name, why=planned.left_out))
        else:
            runnable.append(planned)
    lm = None
    try:
        if runnable:
            note(progress, f"loading {audit.model}")
            try:
                lm = load_model(audit.model, backend)
            except BiaslensError as error:  # no card: the audit did not audit this model
                audit.unavailable = f"the model did not load: {error}"
                return
            else:
                card.model_identity = lm.identity.describe()
                card.model = lm.identity.name
                kept = []
                for planned in runnable:  # what the loaded model itself allows
                    planned.settings, why = prepared(planned.step, lm)
                    if why is None:
                        kept.append(planned)
                    else:
                        card.left_out.append(LeftOut(method=planned.step.name, why=why))
                runnable = kept
        audit.card = card  # the card of a model that could be audited (its steps write to it)
        for number, planned in enumerate(runnable, 1):
            note(
                progress,
                f"audit {audit.model}: {planned.step.name} ({number}/{len(runnable)})",
            )
            _run_step(audit, planned, lm, backend, data_dir, cache_dir, progress)
    finally:
        if lm is not None:
            lm.close()
    card.rows = ordered(card.rows)
    card.questions, card.family = answer_questions(audit.primaries)

    write_card(card, audit.folder)


def prepared(step: Step, lm) -> tuple[Any, str | None]:
    """The step's settings as the loaded model decides them, built and checked once
    (:meth:`~biaslens.framework.spec.MethodSpec.for_model`), or why the method refuses the
    step on this model."""
    spec = get_method(step.method)
    try:
        settings = spec.build_settings(step.preset, **step.settings)
        return spec.for_model(settings, lm, step.preset), None
    except BiaslensError as error:
        return None, str(error)


def _run_step(audit: ModelAudit, planned: PlannedStep, lm, backend, data_dir, cache_dir, progress):
    step, card = planned.step, audit.card
    run_dir = audit.folder / step.name
    result, reused = None, False
    if (run_dir / "summary.json").is_file():
        try:
            result, reused = RunResult.load(run_dir), True
        except BiaslensError:
            result = None  # an unfinished or damaged run: rerun it (the cache resumes it)
    if result is None:
        started = time.monotonic()
        try:
            result = run_method(
                step.method,
                planned.settings,  # as prepared for this model: not built or checked again
                output=run_dir,
                lm=lm,
                progress=progress,
                data_dir=data_dir,
                cache_dir=cache_dir,
            )
        except BiaslensError as error:
            card.failed.append(Failed(step=step.name, method=step.method, error=str(error)))
            return
        except Exception as error:  # a bug in one method: recorded, and the others go on
            card.failed.append(
                Failed(
                    step=step.name,
                    method=step.method,
                    error=f"{type(error).__name__}: {error} (a bug: please report it)",
                )
            )
            return
        computed = result.cache_stats.get("computed", 0)
        audit.computed += computed
        audit.reused += result.cache_stats.get("cached", 0)
        if planned.tokens and planned.requests and computed:
            share = computed / planned.requests
            rates.record(
                audit.model,
                backend.backend,
                step.method,
                planned.tokens * share,
                time.monotonic() - started,
            )
    summary = result.record  # the typed summary.json
    if reused:
        requests = summary.requests or {}
        audit.reused += requests.get("computed", 0) + requests.get("cached", 0)
    relative = step.name
    report = f"{step.name}/report.html" if (run_dir / "report.html").is_file() else None
    rows = rows_of(step.name, step.method, result.summary, relative, report)
    card.rows += rows
    card.notes += [f"{step.name}: {n}" for n in summary.notes or []]
    role = get_method(step.method).audit
    if role is not None and role.questions:
        audit.primaries += primaries_of(
            role.questions, step.name, step.method, result.summary, run_dir, report
        )
    if role is not None and role.references is not None:
        found = role.references(rows, summary)
        card.references += [ReferenceRow(**r) for r in found]
