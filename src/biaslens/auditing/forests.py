"""Forest plots of an audit: on a card, each number with known models beside it (the audited
model in colour, the references greyed); in the comparison, each question with every audited
model's answer at its card's family-wise level and the known models beside them."""

from __future__ import annotations

import re
from pathlib import Path

from biaslens.auditing.card import BiasCard, references_of
from biaslens.common import atomic
from biaslens.common.files import make_dir
from biaslens.framework.estimates import labels_text


def slug(text: str) -> str:
    """A file-name part: lower-case letters and digits joined by hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "all"


def _write(folder: Path, name: str, lines: list, title: str, unit: str, no_bias) -> None:
    import matplotlib.pyplot as plt

    from biaslens.plots.forest import forest_figure

    make_dir(folder / "plots", "plots folder")
    figure = forest_figure(lines, title, unit, no_bias)
    try:
        atomic.write_figure(folder / name, figure)
    finally:
        plt.close(figure)


def write_forest_plots(card: BiasCard, folder: Path) -> None:
    """One forest plot per number that has known models beside it (``plots/``); each such
    row's ``plot`` names its file."""
    from biaslens.plots.forest import ForestLine

    for row in card.rows:
        same = references_of(card, row)
        if not same or row.value is None:
            continue
        lines = [ForestLine(card.model, row.value, row.ci_low, row.ci_high)]
        lines += [
            ForestLine(r.model, r.value, r.ci_low, r.ci_high, grey=True)
            for r in sorted(same, key=lambda r: -r.value)
        ]
        where = labels_text(row.labels) or "—"
        title = f"{row.symbol} ({where})"
        if not same[0].same_protocol:
            title += "\nreferences on the paper's protocol; this run's differs"
        name = f"plots/{slug(row.step)}-{slug(row.metric)}-{slug(where)}.png"
        _write(folder, name, lines, title, row.unit or "", row.no_bias_value)
        row.plot = name


def question_forest(folder: Path, by_model: dict, cards: dict) -> str | None:
    """The forest plot of one question across models (``plots/question-….png`` in the audit's
    folder): each audited model's primary at its card's family-wise level, in colour, and the
    known models of that number greyed, at their own level; the file's name (None: no model
    has a value)."""
    from biaslens.plots.forest import ForestLine

    answered = {m: a for m, a in by_model.items() if a.value is not None}
    if not answered:
        return None
    first = next(iter(answered.values()))
    lines = [ForestLine(m, a.value, a.ci_low, a.ci_high) for m, a in answered.items()]
    known = {}
    for model in answered:
        for ref in references_of(cards[model], answered[model]) if cards.get(model) else ():
            known.setdefault(ref.model, ref)
    lines += [
        ForestLine(r.model, r.value, r.ci_low, r.ci_high, grey=True)
        for r in sorted(known.values(), key=lambda r: -r.value)
    ]
    where = labels_text(first.labels) or "all"
    name = f"plots/question-{slug(first.step)}-{slug(first.key)}-{slug(where)}.png"
    title = f"{first.step}: {first.symbol} ({where}); audited models at their family-wise level"
    _write(folder, name, lines, title, first.unit or "", first.target)
    return name
