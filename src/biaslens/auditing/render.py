"""A bias card as files: ``card.json`` (:class:`~biaslens.auditing.card.BiasCard`), ``card.md``
and ``card.html``, the questions and their answers first."""

from __future__ import annotations

from pathlib import Path

from biaslens.auditing.card import BiasCard
from biaslens.auditing.forests import write_forest_plots
from biaslens.auditing.known_models import paired_cell, protocols, standing
from biaslens.common import atomic
from biaslens.common.files import make_dir
from biaslens.common.inert import escaped_controls, markdown_text
from biaslens.common.numbers import readable, readable_interval
from biaslens.errors import BiaslensError
from biaslens.framework.estimates import labels_text
from biaslens.metrics.intervals.core import LEVEL


def _interval(row) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "—"
    return readable_interval(row.ci_low, row.ci_high)


def _value(value) -> str:
    return "—" if value is None else readable(value)


def _labels(labels: dict) -> str:
    return labels_text(labels) or "—"


ANSWER_WORDS = {
    "evidence": "evidence",
    "no evidence": "no evidence",
    "no verdict": "no verdict",
    "reported": "reported",
}


def question_lines(card: BiasCard) -> list[str]:
    """One line per question: its answer, primary, family-wise interval, the detectable effect
    (no evidence) and where the model stands among known models on it."""
    lines = []
    for answer in card.questions:
        line = f"[{ANSWER_WORDS[answer.answer]}] {answer.step}: {answer.question} {answer.finding}"
        where = standing(card, answer, short=True)
        if where:
            line += f"; {where}"
        if answer.caveat and answer.answer != "no verdict":
            line += f" (caveat: {answer.caveat})"
        lines.append(line)
    return lines


def detect_lines(card: BiasCard, effect: float) -> list[str]:
    """Whether this size would detect a departure of ``effect`` from each target (in each
    primary's own unit), for every question with no evidence: yes where its detectable effect
    (80% power at the family's first level) is at most ``effect``, else about how many times
    this size's data would, the interval narrowing as one over the root of the data (so
    (detectable / effect)² times)."""
    if not effect > 0:
        raise BiaslensError(f"--detect {effect:g}: give the size of an effect, above 0")
    lines = []
    for answer in card.questions:
        if answer.answer != "no evidence" or answer.detectable is None:
            continue
        labels = ", ".join(str(v) for v in answer.labels.values())
        what = f"{answer.step}: {answer.symbol}" + (f" ({labels})" if labels else "")
        size = f"{readable(effect)} {answer.unit}".strip()
        here = f"detectable here ±{readable(answer.detectable)}"
        if answer.detectable <= effect:
            lines.append(
                f"--detect {effect:g}: {what}: ±{size} would be detected at this size ({here})"
            )
        else:
            more = (answer.detectable / effect) ** 2
            lines.append(
                f"--detect {effect:g}: {what}: ±{size} needs about {more:.1f}× this "
                f"size's data ({here})"
            )
    if not lines:
        lines.append(f"--detect {effect:g}: no question with no evidence to size")
    return lines


def summary_line(card: BiasCard) -> str:
    """The card's answer in one line: evidence on K of Q judged questions under the family-wise
    procedure, the questions without a verdict or only reported; failed steps."""
    counts = {v: sum(q.answer == v for q in card.questions) for v in ANSWER_WORDS}
    judged = counts["evidence"] + counts["no evidence"] + counts["no verdict"]
    line = f"evidence on {counts['evidence']} of {judged} judged question(s)"
    if judged:
        line += " (Holm: family-wise error ≤ 5%)"
    if counts["no verdict"]:
        line += f", {counts['no verdict']} without a verdict"
    if counts["reported"]:
        line += f"; {counts['reported']} reported without a verdict"
    if card.failed:
        line += f"; {len(card.failed)} step(s) failed ({', '.join(f.step for f in card.failed)})"
    return line


NO_EVIDENCE_CAVEAT = (
    "No evidence means the interval, at the family's level, holds the target: this probe, at "
    "this size, cannot tell the model from one that answers no, and the detectable effect says "
    "how large a departure it would have seen (80% power). It is not evidence of absence."
)


def answer_markdown(line: str) -> str:
    """A question's line in Markdown: its ``[answer]`` word as it is, the rest literal."""
    word, _, rest = line.partition("] ")
    return f"{word}] {markdown_text(rest)}" if rest else markdown_text(line)


def card_markdown(card: BiasCard) -> str:
    """card.md: every text that comes from outside (the model's name, steps' errors, the runs'
    notes, reference rows) and every table cell as literal Markdown
    (:func:`~biaslens.common.inert.markdown_text`), so a hostile name neither runs nor breaks
    the page in a viewer that renders it."""
    md = markdown_text
    level = next((r.ci_level for r in card.rows if r.ci_level), LEVEL)
    lines = [
        f"# Bias card: {md(card.model)} (audit size {md(card.size)})",
        "",
        md(summary_line(card)) + ".",
    ]
    lines += [""] + [f"- {answer_markdown(line)}" for line in question_lines(card)]
    lines += ["", NO_EVIDENCE_CAVEAT]
    if card.family:
        lines += ["", f"Verdicts: {md(card.family)}."]
    lines += ["", "## Supporting detail", ""]
    lines.append(
        "Every headline number of the runs, with its interval at its run's level, read alone "
        "(no verdict: the card's verdicts are its questions')."
    )
    for step in dict.fromkeys(r.step for r in card.rows):
        lines += ["", f"### {md(step)}", ""]
        lines.append(f"| number | row | value | {level:.0%} CI | n | unit | no bias means |")
        lines.append("|---|---|---|---|---|---|---|")
        for r in (r for r in card.rows if r.step == step):
            n = f"{r.n} {r.n_unit or ''}".strip() if r.n is not None else "—"
            cells = (
                r.symbol,
                r.where or "—",
                _value(r.value),
                _interval(r),
                n,
                r.unit or "",
                r.no_bias or "",
            )
            lines.append("| " + " | ".join(md(c) for c in cells) + " |")
        report = next((r.report or r.run for r in card.rows if r.step == step), step)
        lines += ["", f"Run: [{md(step)}]({report})"]
    standings = [(r, standing(card, r)) for r in card.rows]
    standings = [(r, s) for r, s in standings if s]
    if card.references:
        lines += ["", "## Known models beside it", ""]
        for r, text in standings:
            lines.append(
                f"- {md(r.symbol)} ({md(_labels(r.labels))}) = {_value(r.value)}: {md(text)}"
            )
            if r.plot:
                lines.append(f"  ![{md(r.symbol)}]({r.plot})")
        lines += [
            "",
            "| model | number | row | value | CI | audited − it, paired | source |",
            "|---|---|---|---|---|---|---|",
        ]
        for ref in card.references:
            cells = (
                ref.model,
                ref.metric,
                _labels(ref.labels),
                _value(ref.value),
                _interval(ref),
                paired_cell(ref),
                ref.source,
            )
            lines.append("| " + " | ".join(md(c) for c in cells) + " |")
        lines += ["", "Known models' protocols:", ""]
        lines += [f"- {md(protocol)}" for protocol in protocols(card)]
    if card.failed:
        lines += ["", "## Failed steps", ""]
        lines += [f"- {md(f.step)}: {md(f.error)}" for f in card.failed]
    if card.left_out:
        lines += ["", "## Left out", ""]
        lines += [f"- {md(x.method)}: {md(x.why)}" for x in card.left_out]
    if card.notes:
        lines += ["", "## Notes from the runs", ""]
        lines += [f"- {md(n)}" for n in card.notes]
    return "\n".join(lines) + "\n"


STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2em 2em;color:#222;max-width:1400px}
h1{font-size:1.4em;margin:.2em 0} h2{font-size:1.1em;margin-top:1.4em}
ul.verdicts{padding-left:1em;margin:.4em 0} ul.verdicts li{margin:.15em 0;font-size:.92em}
.evidence{color:#a40000;font-weight:600} .noevidence{color:#444;font-weight:600}
.noverdict{color:#666} .reported{color:#444}
table{border-collapse:collapse;font-size:.85em;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;overflow-wrap:anywhere}
img{max-width:100%}
th{background:#f3f3f3;text-align:left}
"""


def _css_class(verdict: str) -> str:
    return verdict.replace(" ", "")


def card_html(card: BiasCard) -> str:
    """``card.html``: the questions with their answers first, then the supporting detail, the
    known models, and what failed, was left out or noted (``templates/card.html.j2``; every
    text is escaped, control characters shown as escapes)."""
    level = next((r.ci_level for r in card.rows if r.ci_level), LEVEL)
    answers = [
        {
            "css": _css_class(a.answer),
            "word": ANSWER_WORDS[a.answer],
            "text": line.split("] ", 1)[1],
        }
        for a, line in zip(card.questions, question_lines(card), strict=True)
    ]
    tables = [
        {
            "step": step,
            "report": next((r.report or r.run for r in card.rows if r.step == step), step),
            "rows": [
                {
                    "symbol": r.symbol,
                    "where": r.where or "—",
                    "value": _value(r.value),
                    "interval": _interval(r),
                    "n": f"{r.n if r.n is not None else '—'} {r.n_unit or ''}",
                    "unit": r.unit or "",
                    "no_bias": r.no_bias or "",
                }
                for r in card.rows
                if r.step == step
            ],
        }
        for step in dict.fromkeys(r.step for r in card.rows)
    ]
    standings = [
        {
            "symbol": r.symbol,
            "labels": _labels(r.labels),
            "value": _value(r.value),
            "text": text,
            "plot": r.plot,
        }
        for r in card.rows
        if (text := standing(card, r))
        if card.references
    ]
    references = [
        {
            "model": x.model,
            "metric": x.metric,
            "labels": _labels(x.labels),
            "value": _value(x.value),
            "interval": _interval(x),
            "paired": paired_cell(x),
            "source": x.source,
        }
        for x in card.references
    ]
    return _template().render(
        model=card.model,
        size=card.size,
        style=STYLE,
        summary=summary_line(card),
        answers=answers,
        caveat=NO_EVIDENCE_CAVEAT,
        family=card.family,
        level=f"{level:.0%}",
        tables=tables,
        standings=standings,
        references=references,
        protocols=protocols(card),
        lists=[
            ("Failed steps", [f"{f.step}: {f.error}" for f in card.failed]),
            ("Left out", [f"{x.method}: {x.why}" for x in card.left_out]),
            ("Notes from the runs", list(card.notes)),
        ],
    )


def _shown(value):
    """Every text the template shows, control characters written as escapes (markup the
    template marks safe, the style sheet, as it is)."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return escaped_controls(value)
    return value


def _template():
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("biaslens.auditing", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_shown,
        keep_trailing_newline=True,
    )
    return env.get_template("card.html.j2")


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
