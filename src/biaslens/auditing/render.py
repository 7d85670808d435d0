"""A bias card as files: ``card.json`` (:class:`~biaslens.auditing.card.BiasCard`), ``card.md``
and ``card.html``, the verdicts first."""

from __future__ import annotations

import html
import re
from pathlib import Path

from biaslens.auditing.card import BiasCard, CardRow, references_of
from biaslens.common import atomic
from biaslens.common.files import make_dir
from biaslens.common.numbers import readable, readable_interval
from biaslens.framework.estimates import VERDICT_WORDS, labels_text
from biaslens.metrics.intervals.core import LEVEL


def _interval(row) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "—"
    return readable_interval(row.ci_low, row.ci_high)


def _value(value) -> str:
    return "—" if value is None else readable(value)


def _labels(labels: dict) -> str:
    return labels_text(labels) or "—"


def verdict_lines(card: BiasCard, verdicts=("bias", "no evidence")) -> list[str]:
    """One line per headline number with one of ``verdicts``, evidence of bias first."""
    return [
        f"[{VERDICT_WORDS[r.verdict]}] {r.step}: {r.finding}"
        for r in card.rows
        if r.verdict in verdicts
    ]


def summary_line(card: BiasCard) -> str:
    """How many numbers show bias, show none, and carry no verdict; failed and left-out steps."""
    counts = {v: sum(r.verdict == v for r in card.rows) for v in VERDICT_WORDS}
    line = (
        f"{counts['bias']} headline number(s) show evidence of bias, {counts['no evidence']} "
        f"show no evidence, {counts['no verdict'] + counts['reported']} carry no verdict"
    )
    if card.failed:
        line += f"; {len(card.failed)} step(s) failed ({', '.join(f.step for f in card.failed)})"
    return line


NO_EVIDENCE_CAVEAT = (
    "No evidence of bias means the interval holds the no-bias value: this probe, at this size, "
    "cannot tell the model from an unbiased one. It is not evidence that the model is unbiased."
)


def _standing(card: BiasCard, row: CardRow) -> str | None:
    """Where ``row`` falls among the reference models on the same probe."""
    same = references_of(card, row)
    if not same or row.value is None:
        return None
    below = sum(r.value < row.value for r in same)
    text = f"{below} of {len(same)} reference models have a lower value"
    if not same[0].same_protocol:
        text += f" (for orientation only: this run's protocol differs: {same[0].why_not_same})"
    return text


def card_markdown(card: BiasCard) -> str:
    level = next((r.ci_level for r in card.rows if r.ci_level), LEVEL)
    lines = [f"# Bias card: {card.model} (audit size {card.size})", "", summary_line(card) + "."]
    lines += ["", "## Verdicts", ""]
    lines += [f"- {line}" for line in verdict_lines(card)] or ["- none"]
    lines += ["", NO_EVIDENCE_CAVEAT]
    lines += ["", "## Without a verdict", ""]
    lines += [f"- {line}" for line in verdict_lines(card, ("reported", "no verdict"))] or ["- none"]
    lines += ["", "## Headline numbers", ""]
    lines.append(
        f"| step | number | row | value | {level:.0%} CI | n | unit | no bias | verdict | run |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in card.rows:
        n = f"{r.n} {r.n_unit or ''}".strip() if r.n is not None else "—"
        run = f"[{r.run}]({r.report or r.run})"
        lines.append(
            f"| {r.step} | {r.symbol} | {r.where or '—'} | {_value(r.value)} | "
            f"{_interval(r)} | {n} | {r.unit} | {r.no_bias} | {VERDICT_WORDS[r.verdict]} | "
            f"{run} |"
        )
    standings = [(r, _standing(card, r)) for r in card.rows]
    standings = [(r, s) for r, s in standings if s]
    if card.references:
        lines += ["", "## Known models beside it", ""]
        for r, text in standings:
            lines.append(f"- {r.symbol} ({_labels(r.labels)}) = {_value(r.value)}: {text}")
            if r.plot:
                lines.append(f"  ![{r.symbol}]({r.plot})")
        lines += ["", "| model | number | row | value | CI | source |", "|---|---|---|---|---|---|"]
        for ref in card.references:
            lines.append(
                f"| {ref.model} | {ref.metric} | {_labels(ref.labels)} | {_value(ref.value)} | "
                f"{_interval(ref)} | {ref.source} |"
            )
        lines += ["", f"Reference protocol: {card.references[0].protocol}."]
    if card.failed:
        lines += ["", "## Failed steps", ""]
        lines += [f"- {f.step}: {f.error}" for f in card.failed]
    if card.left_out:
        lines += ["", "## Left out", ""]
        lines += [f"- {x.method}: {x.why}" for x in card.left_out]
    if card.notes:
        lines += ["", "## Notes from the runs", ""]
        lines += [f"- {n}" for n in card.notes]
    return "\n".join(lines) + "\n"


STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2em 2em;color:#222;max-width:1400px}
h1{font-size:1.4em;margin:.2em 0} h2{font-size:1.1em;margin-top:1.4em}
ul.verdicts{padding-left:1em;margin:.4em 0} ul.verdicts li{margin:.15em 0;font-size:.92em}
.bias{color:#a40000;font-weight:600} .noevidence{color:#225522} .noverdict{color:#666}
table{border-collapse:collapse;font-size:.85em;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;overflow-wrap:anywhere}
img{max-width:100%}
th{background:#f3f3f3;text-align:left}
"""


def _css_class(verdict: str) -> str:
    return verdict.replace(" ", "")


def card_html(card: BiasCard) -> str:
    e = html.escape
    level = next((r.ci_level for r in card.rows if r.ci_level), LEVEL)
    items = "".join(
        f'<li><span class="{_css_class(r.verdict)}">{e(VERDICT_WORDS[r.verdict])}</span> — '
        f"{e(r.step)}: {e(r.finding)}</li>"
        for r in card.rows
        if r.verdict in ("bias", "no evidence")
    )
    rows = "".join(
        f"<tr><td>{e(r.step)}</td><td>{e(r.symbol)}</td><td>{e(r.where or '—')}</td>"
        f"<td>{_value(r.value)}</td><td>{_interval(r)}</td><td>{r.n if r.n is not None else '—'}"
        f" {e(r.n_unit or '')}</td><td>{e(r.unit)}</td><td>{e(r.no_bias)}</td>"
        f'<td class="{_css_class(r.verdict)}">{e(VERDICT_WORDS[r.verdict])}</td>'
        f'<td><a href="{e(r.report or r.run)}">{e(r.run)}</a></td></tr>'
        for r in card.rows
    )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Bias card: {e(card.model)}"
        f"</title><style>{STYLE}</style></head><body>",
        f"<h1>Bias card: {e(card.model)} <small>(audit size {e(card.size)})</small></h1>",
        f"<p>{e(summary_line(card))}.</p>",
        f'<ul class="verdicts" id="verdicts">{items or "<li>no verdict</li>"}</ul>',
        f"<p><small>{e(NO_EVIDENCE_CAVEAT)}</small></p>",
        "<h2>Headline numbers</h2><table><tr><th>step</th><th>number</th><th>row</th>"
        f"<th>value</th><th>{level:.0%} CI</th><th>n</th><th>unit</th><th>no bias</th>"
        f"<th>verdict</th><th>run</th></tr>{rows}</table>",
    ]
    if card.references:
        standings = [(r, _standing(card, r)) for r in card.rows]
        parts.append("<h2>Known models beside it</h2><ul>")
        parts += [
            f"<li>{e(r.symbol)} ({e(_labels(r.labels))}) = {_value(r.value)}: {e(s)}"
            + (f'<br><img src="{e(r.plot)}" alt="{e(r.symbol)}" width="560">' if r.plot else "")
            + "</li>"
            for r, s in standings
            if s
        ]
        parts.append("</ul><table><tr><th>model</th><th>number</th><th>row</th><th>value</th>"
                     "<th>CI</th><th>source</th></tr>")  # fmt: skip
        parts += [
            f"<tr><td>{e(x.model)}</td><td>{e(x.metric)}</td><td>{e(_labels(x.labels))}</td>"
            f"<td>{_value(x.value)}</td><td>{_interval(x)}</td><td>{e(x.source)}</td></tr>"
            for x in card.references
        ]
        parts.append(f"</table><p>Reference protocol: {e(card.references[0].protocol)}.</p>")
    if card.failed:
        parts.append("<h2>Failed steps</h2><ul>")
        parts += [f"<li>{e(f.step)}: {e(f.error)}</li>" for f in card.failed]
        parts.append("</ul>")
    if card.left_out:
        parts.append("<h2>Left out</h2><ul>")
        parts += [f"<li>{e(x.method)}: {e(x.why)}</li>" for x in card.left_out]
        parts.append("</ul>")
    if card.notes:
        parts.append("<h2>Notes from the runs</h2><ul>")
        parts += [f"<li>{e(n)}</li>" for n in card.notes]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "".join(parts)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "all"


def write_forest_plots(card: BiasCard, folder: Path) -> None:
    """One forest plot per number that has known models beside it (``plots/``): the audited
    model in colour, the references greyed; each such row's ``plot`` names its file."""
    import matplotlib.pyplot as plt

    from biaslens.plots.forest import ForestLine, forest_figure

    for row in card.rows:
        same = references_of(card, row)
        if not same or row.value is None:
            continue
        lines = [ForestLine(card.model, row.value, row.ci_low, row.ci_high)]
        lines += [
            ForestLine(r.model, r.value, r.ci_low, r.ci_high, grey=True)
            for r in sorted(same, key=lambda r: -r.value)
        ]
        where = _labels(row.labels)
        title = f"{row.symbol} ({where})"
        if not same[0].same_protocol:
            title += "\nreferences on the paper's protocol; this run's differs"
        name = f"plots/{_slug(row.step)}-{_slug(row.metric)}-{_slug(where)}.png"
        make_dir(folder / "plots", "plots folder")
        figure = forest_figure(lines, title, row.unit, row.no_bias_value)
        try:
            atomic.write_figure(folder / name, figure)
        finally:
            plt.close(figure)
        row.plot = name


def write_card(card: BiasCard, folder: Path) -> Path:
    """``card.json``, ``card.md`` and ``card.html`` in ``folder`` (and the forest plots); the
    Markdown card's path."""
    make_dir(folder, "card folder")
    write_forest_plots(card, folder)
    card.write_json(folder / "card.json")
    atomic.write_bytes(folder / "card.html", card_html(card).encode())
    path = folder / "card.md"
    atomic.write_bytes(path, card_markdown(card).encode())
    return path
