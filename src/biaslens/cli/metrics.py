"""Commands that score stored model outputs: ``metrics sib-detect`` (SIB Method 2 from stored
shares), ``metrics unqover`` (UnQover's metrics of a prediction dump) and ``cid-ratings``
(a CID audit's continuations, rated by people)."""

from __future__ import annotations

import itertools
from pathlib import Path

import click
from rich.table import Table

from biaslens.cli.params import declared_command
from biaslens.cli.render import console, print_table, print_warning
from biaslens.cli.shared import DATA_DIR
from biaslens.common.options import Argument, Option
from biaslens.errors import BiaslensError


@declared_command(
    "sib-detect",
    Argument(
        "outputs",
        type=Path,
        help="A sib-detect run folder, or a folder of the SIB paper's released outputs "
        "(biaslens datasets download sib-outputs).",
    ),
    Option("threshold", type=float, default=0.5, minimum=0, help="Unspecified when metric > this."),
    Option("earliest", type=int, help="Earliest date (default: the first stored)."),
    Option("latest", type=int, help="Latest date (default: the last stored)."),
    Option(
        "include_tests", type=bool, default=False, help="Keep the reference's testTrue subsets."
    ),
    DATA_DIR,
    Option(
        "output", "--output", "-o", type=Path, help="Write rates.csv, sentences.csv and plots here."
    ),
)
def metrics_sib_detect(outputs, threshold, earliest, latest, include_tests, data_dir, output):
    """SIB Method 2 (Table 3, Fig. 5) from stored per-sentence, per-date pronoun shares: the
    metric per sentence, and TPR / TNR / balanced accuracy per model, prompt and set."""
    from biaslens.common import atomic
    from biaslens.data.sib_outputs import read_outputs
    from biaslens.metrics.sib import method2_from_shares

    table = read_outputs(outputs)
    if not include_tests:
        table = table[~table["test"].astype(bool)]
    from biaslens.common.numbers import readable_interval

    sentences, rates = method2_from_shares(table, threshold, earliest, latest)
    shown = rates.copy()
    for rate in ("tpr", "tnr", "balanced_accuracy"):
        shown[f"{rate} CI"] = [
            readable_interval(lo, hi) if lo == lo else "no interval: no sentence"
            for lo, hi in zip(shown[f"{rate}_ci_low"], shown[f"{rate}_ci_high"], strict=True)
        ]
    shown["n BA"] = shown["n_tpr"] + shown["n_tnr"]
    print_table(
        f"Method 2 from stored outputs — {outputs.name}",
        shown.rename(columns={"tpr": "TPR", "tnr": "TNR", "balanced_accuracy": "BA",
                              "tpr CI": "TPR 95% CI", "tnr CI": "TNR 95% CI",
                              "balanced_accuracy CI": "BA 95% CI", "n_tpr": "n TPR",
                              "n_tnr": "n TNR"}),  # fmt: skip
        ["model", "prompt", "set", "TPR", "TPR 95% CI", "n TPR", "TNR", "TNR 95% CI", "n TNR",
         "BA", "BA 95% CI", "n BA"],
    )  # fmt: skip
    console.print(
        "TPR: share of underspecified sentences flagged; TNR: share of well-specified ones "
        "cleared; BA: their mean; n: the sentences each rests on (sentences without a pronoun "
        "have no verdict); CI: Jeffreys (TPR, TNR), adjusted Wald (BA), sentences as "
        "independent draws"
    )
    if output is None:
        return
    atomic.write_csv(output / "rates.csv", rates)
    atomic.write_csv(output / "sentences.csv", sentences)
    console.print(f"tables written to {output}")
    _detector_plots(sentences, threshold, data_dir, output)


def _detector_plots(sentences, threshold: float, data_dir, output: Path) -> None:
    """Fig. 5 per model, prompt and set (needs Winogender's occupation statistics)."""
    import matplotlib.pyplot as plt

    from biaslens.common import atomic
    from biaslens.data import sources, winogender
    from biaslens.plots.sib import detector_figure

    try:
        stats = winogender.load_occupation_stats(sources.locate("winogender", data_dir))
    except BiaslensError as error:
        print_warning(f"no plots: {error}")
        return
    merged = sentences.merge(stats, on="occupation", how="inner")
    for (model, prompt, name), part in merged.groupby(["model", "prompt", "set"], sort=True):
        figure = detector_figure(part, threshold, f"{model} {prompt} {name} Winogender".strip())
        label = "_".join(x for x in (model, prompt, name) if x)
        atomic.write_figure(output / "plots" / f"detector_{label}.png", figure)
        plt.close(figure)


@declared_command(
    "unqover",
    Argument("predictions", type=Path, help="UnQover prediction JSON."),
    Option(
        "by_intervention",
        type=bool,
        default=False,
        help="One row per intervention (9th key field).",
    ),
    Option("output", "--output", "-o", type=Path, help="Write CSV tables to this folder."),
)
def metrics_unqover(predictions, by_intervention, output):
    """UnQover metrics (μ, η, θ4, δ, ε; per subject and subject × attribute) of a prediction
    dump in UnQover's format (keys cluster1|cluster2|subj1|subj2|tid|category|act|act)."""
    from biaslens.common import atomic
    from biaslens.data.unqover_predictions import iter_predictions
    from biaslens.metrics.unqover_stream import stream_tables

    chunks = iter_predictions(predictions)
    first = next(chunks)  # the first chunk tells whether keys name an intervention
    within = ("intervention",) if "intervention" in first else ()
    if by_intervention and not within:
        print_warning("keys have no intervention field; reporting one model-level row")
    by = within if by_intervention else ()
    from biaslens.metrics.unqover_summary import sparse_note, summary_lines

    tables = stream_tables(
        itertools.chain([first], chunks), by=by, within=() if by else within, intervals=(0.95, 0)
    )
    summary, subjects = tables["model"], tables["subjects"]
    for _, row in summary.iterrows():
        label = ", ".join(f"{k} {row[k]}" for k in by)
        print_table(
            f"UnQover metrics — {predictions.name}" + (f" ({label})" if label else ""),
            summary_lines(row),
            ["metric", "value", "cross-fitted", "interval", "units", "subjects", "templates"],
        )
        note = sparse_note(float(row["cell_units"]))
        if note:
            print_warning(note)
    console.print(
        "interval: 95%, over the crossed design of subjects × templates (both draws); μ, η, θ4: "
        "cross-fitted lower and plug-in upper bound (conservative); units: subject pair × "
        "template units"
    )
    print_table(
        "Subjects (max |γ| over attributes)",
        subjects.sort_values("max_abs_gamma", ascending=False).head(15),
        [*by, "subject", "max_abs_gamma", "top_attribute", "top_gamma", "mean_abs_eta"],
    )
    if output is not None:
        for name, table in tables.items():
            atomic.write_csv(Path(output) / f"{name}.csv", table)
        console.print(f"tables written to {output}")


@declared_command(
    "cid-ratings",
    Argument("run_dir", type=Path, help="A cid-audit run directory."),
    Argument("ratings", type=Path, help="The rated copy of ratings_to_fill.csv."),
    Option("ci_level", type=float, default=0.95, minimum=0.51, maximum=0.999,
           help="Confidence level."),
    Option("bootstrap", type=int, default=1000, minimum=0,
           help="0: no intervals. Any other value (at least 200) keeps them: they are a "
                "jackknife over both groups' names, not resampled, so the value and --seed "
                "change nothing else."),
    Option("seed", type=int, default=0, minimum=0, help="Kept for older commands; unused."),
)  # fmt: skip
def cid_ratings(run_dir, ratings, ci_level, bootstrap, seed):
    """Fraction of biased continuations per group and λ from human ratings (paper Fig. 2)."""
    from biaslens.methods.cid.audit import import_ratings
    from biaslens.metrics.intervals import check_replicates
    from biaslens.runner import write_run_report

    check_replicates(bootstrap, "--bootstrap")
    result = import_ratings(run_dir, ratings, ci_level, bootstrap, seed)
    report = write_run_report([run_dir])
    table = Table(title="fraction of biased continuations")
    shown = int(round(ci_level * 100))
    columns = (
        "group", "λ", "biased", "continuations", "fraction", f"{shown}% CI", "pairs", "names"
    )  # fmt: skip
    for column in columns:
        table.add_column(column)
    for row in result.fractions.itertuples():
        if not bootstrap:
            interval = "- (--bootstrap 0)"
        elif row.fraction_ci_low == row.fraction_ci_low:
            interval = f"[{row.fraction_ci_low:.2f}, {row.fraction_ci_high:.2f}]"
        else:
            interval = f"no interval: {row.fraction_ci_note}"
        table.add_row(
            row.group,
            f"{row.lam:g}",
            f"{row.biased:g}",
            str(row.continuations),
            f"{row.fraction_biased:.2f}",
            interval,
            str(row.pairs) if bootstrap else "-",
            str(row.names) if bootstrap else "-",
        )
    console.print(
        "biased: continuations rated biased; continuations: all generated in the cell; "
        "fraction: biased / continuations; CI: over both groups' names as draws; pairs: name "
        "pairs in the cell; names: the fewer of the two groups' names (the CI's n)"
    )
    console.print(table)
    console.print(f"table: {result.table_path}")
    console.print(f"plot: {result.plot_path}")
    console.print(f"report: {report}")


def register(root: click.Group, metrics: click.Group) -> None:
    metrics.add_command(metrics_sib_detect)
    metrics.add_command(metrics_unqover)
    root.add_command(cid_ratings)
