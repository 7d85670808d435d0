"""What a run folder holds: each file, what it is for, and the meaning and unit of each column.

Every method declares its files (:class:`OutputFile`, ``MethodSpec.outputs``) beside its code;
the files every run has are :data:`COMMON`; a column's meaning comes from the file's own
``meanings`` or, for names shared across methods, from :data:`GLOSSARY`; a headline metric's
from its measure (``MethodSpec.meaning``), never from either. From these,
:func:`reference` writes the results reference (``biaslens schema``, ``docs/results.md``) and
:func:`check_run` compares a finished run folder with it (the test suite checks every run it
writes). Probabilities are probabilities (0 to 1) wherever a column is named ``p_*``; a
percentage says so (``pct_*``, ``*_pct``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq


@dataclass(frozen=True)
class OutputFile:
    """One file of a run folder (``name`` may be a glob, e.g. ``plots/mgc_*.png``).

    ``columns``: those every such file has (tables only); ``optional``: those some settings
    add; ``meanings``: this file's own meaning of a column (else :data:`GLOSSARY`'s);
    ``when``: under which settings the file is written (empty: always); ``run_columns``:
    whether the table starts with :data:`RUN_COLUMNS` (every result CSV does)."""

    name: str
    what: str
    columns: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    meanings: Mapping[str, str] = field(default_factory=dict)
    when: str = ""
    run_columns: bool = True

    @property
    def is_table(self) -> bool:
        return self.name.endswith((".csv", ".parquet"))

    def meaning(self, column: str) -> str:
        return self.meanings.get(column) or GLOSSARY.get(column, "")


Meaning = Callable[[OutputFile, str], str]
"""``meaning(file, column)``: what a column of a file means (``MethodSpec.meaning``)."""

RUN_COLUMNS = ("model", "method")
"""The first columns of every CSV a run writes (:meth:`~.run.RunStore.labelled`)."""

COMMON = (
    OutputFile("config.yaml", "the run's method, settings, runtime options and model identity"),
    OutputFile(
        "summary.json",
        "schema version, method, model identity, dataset identity, settings, request counts, "
        "metrics, estimates (each headline value with its interval, n and meaning), notes, "
        "package versions and the outputs with their sizes and sha256",
    ),
    OutputFile(
        "report.html",
        "the run's self-contained HTML report",
        when="unless biaslens.run(..., report=False)",
    ),
    OutputFile(
        "requests.sqlite*",
        "the run's own request cache (with its SQLite journal files)",
        when="--no-cache",
    ),
    OutputFile(".lock", "held while a process writes the run"),
)

_CI = "lower / upper bound of the interval of {} at the run's --ci-level"
GLOSSARY: dict[str, str] = {
    "model": "the model's name (a hub id or a local folder's name)",
    "method": "the biaslens method that wrote the table",
    "row": "the example's place in the generated set (0-based)",
    "id": "the example's id in its set",
    "input": "the exact text the model read",
    "set": "the sentence set or LEI set (intervention type, or specified-*)",
    "prompt": "instruction prompt (A, B, C of SIB App. D.2; mask: a masked LM's slot)",
    "w_kind": "the injected W: dates or places",
    "w": "the injected W value (a year or a place)",
    "w_index": "W's position on its grid (0 = earliest date / first place)",
    "gender": "pronoun gender: female, male or neutral",
    "sentence": "the sentence before any injection",
    "p_female": "probability of the female pronouns at the slot (0 to 1)",
    "p_male": "probability of the male pronouns at the slot (0 to 1)",
    "p_neutral": "probability of the neutral pronouns at the slot (0 to 1)",
    "samples": "sampled scoring: the replies drawn per input (K) the numbers rest on",
    "top_tokens": "the most probable next tokens (what --scoring paper reads)",
    "top_probs": "their probabilities (0 to 1)",
    "generation": "the greedy continuation (--scoring paper of a causal/seq2seq model)",
    "first": "the subject mentioned first in the context",
    "second": "the subject mentioned second",
    "first_cluster": "the first subject's cluster (e.g. female / male for gender)",
    "second_cluster": "the second subject's cluster",
    "first_start": "character offset of the first subject in the context",
    "second_start": "character offset of the second subject in the context",
    "context": "the underspecified context the question is asked about",
    "category": "the attribute's category in the source lists",
    "template": "the template's id",
    "attribute": "the attribute the question asks about",
    "key": "the example's key (subjects, template, attribute), as in UnQover's files",
    "negated": "whether the question is the negated one",
    "question": "the question asked",
    "s_first": "S(first): the score of the first subject as the answer (0 to 1)",
    "s_second": "S(second): the score of the second subject as the answer (0 to 1)",
    "subject": "a subject (e.g. a religion or a name)",
    **{
        f"{m}_ci_{side}": _CI.format(m)
        for m in ("mu", "eta", "theta4", "delta", "epsilon")
        for side in ("low", "high")
    },
    **{
        f"{m}_ci_note": f"why {m} has no interval (empty: it has one)"
        for m in ("mu", "eta", "theta4", "delta", "epsilon", "gap", "specified_win_rate")
    },
    **{
        f"{m}_se": f"{m}'s standard error over the crossed design of subjects × templates"
        for m in ("mu", "eta", "theta4", "delta", "epsilon")
    },
    **{
        f"{m}_crossfit": f"{m} cross-fitted (chosen on one part of the data, read on another "
        "sharing neither templates nor partners): the lower side of its interval; far below "
        f"{m}, the plug-in is mostly noise"
        for m in ("mu", "eta", "theta4")
    },
    **{
        f"{m}_crossfit_se": f"the cross-fitted {m}'s standard error"
        for m in ("mu", "eta", "theta4")
    },
    "gap_ci_low": "lower bound of the gap's interval (from μ's; none for the irrelevant set)",
    "gap_ci_high": "upper bound of the gap's interval",
    "specified_win_rate_ci_low": "lower bound of the win rate's interval over subject pair × "
    "template units",
    "specified_win_rate_ci_high": "upper bound of the win rate's interval",
    "contexts": "contexts scored, each subject order counted (a context asked in both orders "
    "counts twice, as UnQover counts them)",
    "units": "subject pair × template units the intervals rest on",
    "subjects": "subjects the intervals rest on (a crossed factor)",
    "templates": "templates the intervals rest on (a crossed factor)",
    "df": "degrees of freedom of the t intervals: the fewer of subjects and templates, less one "
    "(fixed subjects: the templates less one)",
    "cell_units": "median subject pair × template units per (subject, attribute) cell",
    "subjects_are": "drawn (the intervals count subjects as a sample, as names are) or fixed "
    "(the subjects are the population asked about; only templates are draws)",
    "caution": "why μ, η and θ4's plug-in values are not to be read as they stand (empty: "
    "they are)",
    "gamma": "γ(x, a): mean comparative score of the subject for the attribute (−1 to 1)",
    "max_abs_gamma": "max over attributes of |γ(x, a)| (0 to 1)",
    "mean_abs_eta": "mean over attributes of |η(x, a)| (0 to 1)",
    "top_attribute": "the attribute of that max",
    "top_gamma": "γ at that attribute (signed)",
    "desired_mu": "the μ an ideal model reaches on the set (LEI Fig. 4: 0, 1, unchanged, 1)",
    "gap": "|μ − desired μ|",
    "specified_win_rate": "share of specified contexts where the specified subject scores "
    "higher (0 to 1)",
    "intervention": "the intervention sentence (empty: none)",
    "intervention_type": "ethical, adversarial, irrelevant, none or specified-*",
    "intervention_id": "the intervention sentence's id",
    "specified": "the subject the specified context names as the answer",
    "lam": "λ, the contrastive strength (0: plain greedy decoding)",
    "continuation": "the generated continuation",
    "count": "how many times it was generated",
    "group": "the name group of the prompt (e.g. us-male)",
    "pair": "the input pair's index",
    "n": "how many units the row rests on",
}
"""Meanings of the column names several files share (a file's ``meanings`` override them)."""


def _matches(files: Iterable[OutputFile], name: str) -> OutputFile | None:
    return next((f for f in files if fnmatch.fnmatchcase(name, f.name)), None)


def _columns(path: Path) -> list[str]:
    if path.suffix == ".csv":
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]

    return list(pq.ParquetFile(path).schema_arrow.names)


def check_run(
    root: Path | str, outputs: Iterable[OutputFile], meaning: Meaning | None = None
) -> list[str]:
    """What in the run folder ``root`` the reference does not describe: files it does not
    list, columns a file should have and lacks, columns it has and the reference does not
    name, columns without a meaning (``meaning(file, column)``: the method's,
    ``MethodSpec.meaning``; default the file's own). Empty when the folder matches."""
    root = Path(root)
    meaning = meaning or OutputFile.meaning
    files = (*outputs, *COMMON)
    problems = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        declared = _matches(files, name)
        if declared is None:
            problems.append(f"{name}: not in the reference")
            continue
        if not declared.is_table:
            continue
        present = _columns(path)
        expected = list(declared.columns)
        if name.endswith(".csv") and declared.run_columns:
            expected = [*RUN_COLUMNS, *expected]
        missing = [c for c in expected if c not in present]
        unknown = [c for c in present if c not in (*expected, *declared.optional)]
        if missing:
            problems.append(f"{name}: lacks {', '.join(missing)}")
        if unknown:
            problems.append(f"{name}: has {', '.join(unknown)}, not in the reference")
        unexplained = [c for c in (*expected, *declared.optional) if not meaning(declared, c)]
        if unexplained:
            problems.append(f"{name}: no meaning for {', '.join(unexplained)}")
    return problems


def reference(specs: Iterable) -> str:
    """The results reference in Markdown: per method, each file and each of its columns."""
    lines = [
        "# Results reference",
        "",
        "Generated by `biaslens schema --markdown` from the declarations beside each method's "
        "code; a test compares every run folder the test suite writes with it.",
        "",
        "Every CSV a run writes starts with `model` and `method`. Columns named `p_*` are "
        "probabilities (0 to 1); `pct_*` and `*_pct` are percentages.",
        "",
        "## Every run",
        "",
        *_file_lines(COMMON, OutputFile.meaning),
    ]
    for spec in specs:
        files = _file_lines(spec.outputs, spec.meaning)
        lines += ["", f"## {spec.name}", "", spec.title, "", *files]
    return "\n".join(lines).rstrip() + "\n"


def _file_lines(files: Iterable[OutputFile], meaning: Meaning) -> list[str]:
    lines = []
    for file in files:
        when = f" ({file.when})" if file.when else ""
        lines += [f"### `{file.name}`{when}", "", file.what, ""]
        if not file.is_table:
            continue
        lines += ["| column | meaning |", "|---|---|"]
        shown = [*RUN_COLUMNS] if file.name.endswith(".csv") and file.run_columns else []
        for column in (*shown, *file.columns):
            lines.append(f"| `{column}` | {meaning(file, column)} |")
        for column in file.optional:
            lines.append(f"| `{column}` | {meaning(file, column)} (some settings only) |")
        lines.append("")
    return lines
