"""Several models in one audit: one table per headline number, models side by side, and where
the method declares one (:class:`~biaslens.framework.hooks.AuditRole`'s ``paired``) the paired
difference of two models over the same probe units, with its interval (sharper than two
overlapping intervals, since the probe's own effects cancel), and each model's rank interval.
Other numbers are shown side by side, and the comparison says that no paired interval was
computed for them.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.auditing.card import references_of
from biaslens.auditing.forests import question_forest
from biaslens.auditing.known_models import paired_cell
from biaslens.common import atomic
from biaslens.common.inert import markdown_text as md
from biaslens.common.numbers import readable, readable_interval
from biaslens.framework.registry import get_method
from biaslens.metrics.intervals import LEVEL


def _key(row) -> tuple:
    return (row.step, row.metric, tuple(sorted((k, str(v)) for k, v in row.labels.items())))


def rank_intervals(
    values: dict[str, float], pairs: dict[tuple[str, str], tuple[float, float]]
) -> dict[str, tuple[int, int]]:
    """Each model's rank (1: the largest value) as an interval: 1 + the models it is
    distinguishably below, to K − the models it is distinguishably above, from paired
    intervals of A − B. With every pair's interval at level 1 − α/(K − 1) (Bonferroni over a
    model's K − 1 comparisons), a model's rank interval holds its true rank with probability
    at least 1 − α (conservative)."""
    models = list(values)
    found = {}
    for model in models:
        above = below = 0
        for other in models:
            if other == model:
                continue
            low, high = (
                pairs[(model, other)]
                if (model, other) in pairs
                else tuple(-x for x in reversed(pairs[(other, model)]))
            )
            if low > 0:
                above += 1
            elif high < 0:
                below += 1
        found[model] = (1 + below, len(models) - above)
    return found


def rank_heading(row) -> str:
    """What rank 1 means for a number, read in the direction of bias (``row.better``): the
    largest value is the most biased where lower is less biased, the best where higher is
    better; a signed number's rank is by value, which is not an order of bias."""
    better = (row.better or "").lower()
    if better.startswith("lower"):
        return "Rank (1: the largest value, the most biased)"
    if better.startswith("higher"):
        return "Rank (1: the largest value, the best)"
    return (
        "Rank by signed value (1: the largest; not an order of bias, which is the distance "
        f"from {row.no_bias or 'the no-bias value'} whichever its sign)"
    )


def pair_level(models: int, level: float = LEVEL) -> float:
    """The level of each pairwise interval behind :func:`rank_intervals`."""
    return 1 - (1 - level) / max(models - 1, 1)


NO_PAIRED = (
    "No paired interval for this number: read the intervals above side by side (overlapping "
    "intervals do not show that two models are alike)."
)


def _paired_lines(paired, step, metric, labels, by_model, folders, records) -> list[str]:
    """The paired differences (at the run's level) and rank intervals of one number; the
    method's ``paired`` returns None for a number it has no paired interval for."""
    models = list(by_model)
    level = next((r.ci_level for r in by_model.values() if r.ci_level), LEVEL)
    lines = ["", f"Paired differences ({level:.0%}; over the same probe units):", ""]
    for model_a, model_b in combinations(models, 2):
        found = paired(
            folders[model_a] / step, folders[model_b] / step, dict(labels), metric, level
        )
        if found is None:
            return ["", NO_PAIRED]
        low, high = found["ci_low"], found["ci_high"]
        # a bound may be ±∞ (λ* beyond the grid), never NaN where there is an interval
        missing = bool(np.isnan(low) or np.isnan(high))
        apart = not missing and not low <= 0 <= high
        verdict = "distinguishable" if apart else "a tie: not distinguishable at this level"
        if missing:
            verdict = f"no interval: {found.get('note') or 'undefined'}"
        lines.append(
            f"- {md(model_a)} − {md(model_b)}: {readable(found['difference'])}, "
            f"{readable_interval(low, high)} (n = {found['n']} {found['units']}): {md(verdict)}"
        )
        records.append(
            {
                "step": step,
                "metric": f"{metric} (paired difference)",
                "labels": dict(labels),
                "model": f"{model_a} − {model_b}",
                "value": found["difference"],
                "ci_low": low,
                "ci_high": high,
                "ci_level": level,
                "n": found["n"],
            }
        )
    if len(models) > 2:
        at = pair_level(len(models), level)
        pairs = {}
        for model_a, model_b in combinations(models, 2):
            found = paired(
                folders[model_a] / step, folders[model_b] / step, dict(labels), metric, at
            )
            pairs[(model_a, model_b)] = (found["ci_low"], found["ci_high"])
        ranks = rank_intervals({m: by_model[m].value for m in models}, pairs)
        lines += [
            "",
            f"{rank_heading(next(iter(by_model.values())))}, {level:.0%} intervals (Bonferroni):",
            "",
        ]
        lines += [
            f"- {md(m)}: {low}–{high}" if low != high else f"- {md(m)}: {low}"
            for m, (low, high) in ranks.items()
        ]
    return lines


def _paired_of(method: str):
    role = get_method(method).audit
    return role.paired if role is not None else None


def question_lines(audits, folder: Path | None = None) -> list[str]:
    """The cards' questions across models: one table per question, each model's answer under
    its own card's family-wise procedure, its primary and interval at that family's level, and
    the detectable effect where there is no evidence; with ``folder``, a forest plot of each
    question beside its table (the known models of that number greyed)."""
    answers: dict[tuple, dict[str, object]] = {}
    for audit in audits:
        for answer in audit.card.questions if audit.card else []:
            key = (answer.step, answer.key, tuple(sorted(answer.labels.items())))
            answers.setdefault(key, {})[audit.model] = answer
    lines = ["## Questions", ""] if answers else []
    cards = {audit.model: audit.card for audit in audits}
    for by_model in answers.values():
        first = next(iter(by_model.values()))
        lines += [f"### {first.step}: {first.question}", ""]
        lines += [
            "| model | answer | value | CI (family-wise) | would detect |",
            "|---|---|---|---|---|",
        ]
        for model, a in by_model.items():
            ci = (
                f"{a.ci_level:.2%} {readable_interval(a.ci_low, a.ci_high)}"
                if a.ci_low is not None and a.ci_level is not None
                else "—"
            )
            value = readable(a.value) if a.value is not None else "—"
            detect = f"±{readable(a.detectable)}" if a.detectable is not None else "—"
            lines.append(f"| {md(model)} | {a.answer} | {value} | {ci} | {detect} |")
        plot = question_forest(folder, by_model, cards) if folder is not None else None
        lines += ["", f"![{md(first.question)}]({plot})"] if plot else []
        lines.append("")
    if answers:
        lines += ["Each model's answers hold as a family on its own card (Holm).", ""]
    return lines


def _known_lines(audits, row) -> list[str]:
    """The known models beside one number, once (from the first card that has them): their
    value and interval, and each audited model − it where its card paired them."""
    found = {}
    for audit in audits:
        card = audit.card
        mine = next((r for r in card.rows if _key(r) == _key(row)), None) if card else None
        for ref in references_of(card, mine) if mine is not None else ():
            found.setdefault(ref.model, {"ref": ref, "paired": {}})
            if ref.difference is not None:
                found[ref.model]["paired"][audit.model] = paired_cell(ref)
    if not found:
        return []
    header = "| known model | value | CI | each audited model − it, paired | same protocol |"
    lines = ["", "Known models on this number:", "", header, "|---|---|---|---|---|"]
    for model, entry in found.items():
        ref = entry["ref"]
        paired = "; ".join(f"{md(m)}: {md(text)}" for m, text in entry["paired"].items()) or "—"
        ci = readable_interval(ref.ci_low, ref.ci_high) if ref.ci_low is not None else "—"
        same = "yes" if ref.same_protocol else f"no: {md(ref.why_not_same or '')}"
        lines.append(f"| {md(model)} | {readable(ref.value)} | {ci} | {paired} | {same} |")
    return lines


def write_comparison(folder: Path, audits) -> Path:
    """``comparison.md`` and ``comparison.csv`` in the audit's folder; the Markdown's path."""
    values: dict[tuple, dict[str, object]] = {}
    folders = {audit.model: audit.folder for audit in audits}
    for audit in audits:
        for row in audit.card.rows if audit.card else []:
            values.setdefault(_key(row), {})[audit.model] = row
    records, lines = [], ["# Across models", ""] + question_lines(audits, folder)
    lines += ["# Supporting detail", ""]
    for key, by_model in values.items():
        step, metric, labels = key
        first = next(iter(by_model.values()))
        lines += [f"## {step}: {first.symbol} ({first.where or 'all'})", ""]
        lines += ["| model | value | CI | n |", "|---|---|---|---|"]
        for model, row in by_model.items():
            ci = readable_interval(row.ci_low, row.ci_high) if row.ci_low is not None else "—"
            value = readable(row.value) if row.value is not None else "—"
            lines.append(f"| {md(model)} | {value} | {ci} | {row.n} |")
            records.append(
                {
                    "step": step,
                    "metric": metric,
                    "labels": dict(labels),
                    "model": model,
                    "value": row.value,
                    "ci_low": row.ci_low,
                    "ci_high": row.ci_high,
                    "ci_level": row.ci_level,
                    "n": row.n,
                }
            )
        lines += _known_lines(audits, first)
        paired = _paired_of(first.method)
        if paired is not None and len(by_model) > 1:
            lines += _paired_lines(paired, step, metric, labels, by_model, folders, records)
        elif len(by_model) > 1:
            lines += ["", NO_PAIRED]
        lines.append("")
    atomic.write_csv(folder / "comparison.csv", pd.DataFrame(records))
    path = folder / "comparison.md"
    atomic.write_bytes(path, "\n".join(lines).encode())
    return path
