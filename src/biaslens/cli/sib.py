"""SIB commands besides ``biaslens run``: ``metrics sib-detect``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from biaslens.cli.options import (
    DataDir,
    add_command,
    finite,
)
from biaslens.cli.render import (
    console,
    print_table,
    print_warning,
)
from biaslens.errors import BiaslensError


def metrics_sib_detect(
    outputs: Annotated[
        Path,
        typer.Argument(
            help="A sib-detect run folder, or a folder of the SIB paper's released outputs "
            "(biaslens datasets download sib-outputs)."
        ),
    ],
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold",
            min=0,
            callback=finite("--threshold"),
            help="Unspecified when metric > this.",
        ),
    ] = 0.5,
    earliest: Annotated[
        int | None, typer.Option("--earliest", help="Earliest date (default: the first stored).")
    ] = None,
    latest: Annotated[
        int | None, typer.Option("--latest", help="Latest date (default: the last stored).")
    ] = None,
    include_tests: Annotated[
        bool, typer.Option("--include-tests", help="Keep the reference's testTrue subsets.")
    ] = False,
    data_dir: DataDir = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write rates.csv, sentences.csv and plots here."),
    ] = None,
) -> None:
    """SIB Method 2 (Table 3, Fig. 5) from stored per-sentence, per-date pronoun shares: the
    metric per sentence, and TPR / TNR / balanced accuracy per model, prompt and set."""
    from biaslens.common import atomic
    from biaslens.data.sib_outputs import read_outputs
    from biaslens.metrics.sib import method2_from_shares

    table = read_outputs(outputs)
    if not include_tests:
        table = table[~table["test"].astype(bool)]
    sentences, rates = method2_from_shares(table, threshold, earliest, latest)
    print_table(
        f"Method 2 from stored outputs — {outputs.name}",
        rates.rename(columns={"tpr": "TPR", "tnr": "TNR", "balanced_accuracy": "BA"}),
        ["model", "prompt", "set", "TPR", "TNR", "BA", "n_unspecified", "n_well_specified"],
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


def register(run_app: typer.Typer, metrics_app: typer.Typer) -> None:
    add_command(metrics_app, "sib-detect", metrics_sib_detect)
