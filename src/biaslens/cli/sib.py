"""SIB commands: ``run sib-mgc``, ``run sib-detect``, ``run sib-toy``, ``metrics sib-detect``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from biaslens.cli.options import (
    DataDir,
    Limit,
    Model,
    Output,
    Preset,
    Scoring,
    Seed,
    add_command,
    backend_options,
    finite,
    split_commas,
)
from biaslens.cli.render import (
    console,
    print_run,
    print_table,
    print_warning,
    run_and_print,
    with_progress,
)
from biaslens.errors import BiaslensError


@backend_options
def run_sib_mgc(
    *,
    backend,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="Registered name (see `biaslens models list`), hub name or local model folder; "
            "several to compare models (Fig. 3(b)). Default: default.",
        ),
    ] = None,
    models_file: Annotated[
        Path | None, typer.Option("--models-file", help="A file with one model per line.")
    ] = None,
    prompt: Annotated[
        list[str] | None,
        typer.Option(
            "--prompt",
            "-p",
            help="Instruction prompt(s) A B C of App. D.2 for causal/seq2seq models. Default A. "
            "Not allowed with masked LMs.",
        ),
    ] = None,
    w: Annotated[
        list[str] | None,
        typer.Option("--w", help="Injected W values: dates places. Default: both."),
    ] = None,
    scoring: Scoring = None,
    date_grid: Annotated[
        str | None,
        typer.Option(
            "--date-grid",
            help="code: linspace(1801, 2016, 30) cut to whole years, as the reference code "
            "(default); rounded: the same points rounded; text: 1801-2001 as the paper's text.",
        ),
    ] = None,
    generation_tokens: Annotated[
        int | None,
        typer.Option(
            "--generation-tokens",
            help="Paper scoring: greedy steps of causal/seq2seq models (20; the reference code "
            "used 10 for Method 1: --preset paper).",
        ),
    ] = None,
    limit: Limit = None,
    seed: Seed = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """SIB Method 1 on the MGC set: gendered-pronoun probability vs injected dates/places.

    Writes samples.parquet, fits.csv (slope, 95% CI, r, r² per prompt, W kind and gender),
    slopes.csv (female−male slope difference, mean r²), summary.json and plots/mgc_*.png.
    Rerunning the same command resumes from the run's request cache.
    """
    from biaslens.experiments.sib_mgc_compare import read_models_file

    models = split_commas(model, "--model") or []
    if models_file is not None:
        models += read_models_file(models_file)
    models = models or ["default"]
    values = {
        "mode": scoring,
        "prompts": tuple(split_commas(prompt, "--prompt")) if prompt else None,
        "w_kinds": tuple(split_commas(w, "--w")) if w else None,
        "date_grid": date_grid,
        "generation_tokens": generation_tokens,
        "limit": limit,
        "seed": seed,
    }
    if len(models) == 1:
        run_and_print(
            "sib-mgc", model=models[0], output=output, backend=backend, preset=preset, **values
        )
        return
    from biaslens.experiments.registry import get_method
    from biaslens.runner import run_comparison

    comparison = with_progress(
        lambda progress: run_comparison(
            "sib-mgc",
            models,
            output=output,
            backend=backend,
            progress=progress,
            preset=preset,
            **values,
        )
    )
    spec = get_method("sib-mgc")
    for result in comparison.runs:
        print_run(result, spec)
    table = comparison.table.assign(
        parameters=comparison.table["num_parameters"].map("{:,}".format)
    )
    print_table(
        "MGC Method 1 across models (mean over prompts)",
        table.rename(
            columns={
                "w_kind": "W",
                "female_minus_male_slope": "female−male slope",
                "mean_r2": "mean r²",
            }
        ),
        ["model", "parameters", "W", "female−male slope", "mean r²"],
    )
    console.print(f"comparison: {comparison.root / 'comparison.csv'}")
    for plot in comparison.plots:
        console.print(f"plot: {plot}")
    if comparison.report is not None:
        console.print(f"report: {comparison.report}")


@backend_options
def run_sib_detect(
    *,
    backend,
    model: Model = None,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="extended simplified (default: both; App. H and H.1)."),
    ] = None,
    scoring: Scoring = None,
    earliest: Annotated[
        int | None, typer.Option("--earliest", help="Earliest date (1901).")
    ] = None,
    latest: Annotated[int | None, typer.Option("--latest", help="Latest date (2016).")] = None,
    average_n: Annotated[
        int | None,
        typer.Option(
            "--average-n", help="Average the first/last N dates of a grid instead of single dates."
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            callback=finite("--threshold"),
            help="Unspecified when metric > this (pp; 0.5).",
        ),
    ] = None,
    empty_mass: Annotated[
        str | None,
        typer.Option(
            "--empty-mass",
            help="Sentences with no pronoun mass at a date: exclude (no verdict, counted) or "
            "zero (the reference's share of 0).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Only the first N occupations (sorted).")
    ] = None,
    date_format: Annotated[
        str | None,
        typer.Option(
            "--date-format",
            help="comma: 'In 1901, the sentence' (default); colon: 'In 1901: The sentence' as the "
            "reference code.",
        ),
    ] = None,
    generation_tokens: Annotated[
        int | None,
        typer.Option("--generation-tokens", help="Paper scoring: greedy steps (20)."),
    ] = None,
    sweep: Annotated[
        list[str] | None,
        typer.Option(
            "--sweep",
            help="Sentence ids (e.g. doctor_man_1) also scored at every date of the grid (Fig. 4).",
        ),
    ] = None,
    show_occupation: Annotated[
        list[str] | None,
        typer.Option("--show-occupation", help="Print the per-sentence table (Table 2) for these."),
    ] = None,
    data_dir: DataDir = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """SIB Method 2: task-specification detector on extended Winogender and the Simplified set.

    Writes sentences.parquet (per sentence: female/male/neutral mass at each date, p_f,
    metric, verdict, ground truth), rates.csv (TPR, TNR, balanced accuracy), samples.parquet,
    summary.json and plots/detector_*.png (per occupation, ordered by BLS % female).
    """
    result = run_and_print(
        "sib-detect",
        model=model,
        output=output,
        backend=backend,
        preset=preset,
        data_dir=data_dir,
        sets=tuple(split_commas(sets, "--set")) if sets else None,
        mode=scoring,
        earliest=earliest,
        latest=latest,
        average_n=average_n,
        threshold=threshold,
        empty_mass=empty_mass,
        limit=limit,
        date_format=date_format,
        generation_tokens=generation_tokens,
        sweep=tuple(split_commas(sweep, "--sweep")) if sweep else None,
    )
    sentences = result["sentences"]
    for occupation in show_occupation or []:
        rows = sentences[sentences["occupation"] == occupation]
        if rows.empty:
            raise BiaslensError(f"--show-occupation: no sentences for {occupation!r}")
        print_table(
            f"{occupation}: specification metric per sentence (pp)",
            rows.assign(
                WS=rows["well_specified"],
                verdict=rows["predicted_unspecified"].map(
                    {True: "unspecified", False: "well-specified"}
                ),
            ),
            ["set", "sentence", "WS", "metric", "verdict"],
        )


def run_sib_toy(
    n: Annotated[int | None, typer.Option("--n", help="Samples per task (100000).")] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha", callback=finite("--alpha"), help="Noise amplification α of App. B (10)."
        ),
    ] = None,
    seed: Seed = None,
    output: Output = None,
    preset: Preset = None,
) -> None:
    """SIB toy structural causal model (App. B, Fig. 2(c)/(d)): how sample selection
    correlates W and G, and how that leaks into X vs Y only for the unspecified task."""
    run_and_print("sib-toy", output=output, preset=preset, n=n, alpha=alpha, seed=seed)


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
    add_command(run_app, "sib-mgc", run_sib_mgc)
    add_command(run_app, "sib-detect", run_sib_detect)
    add_command(run_app, "sib-toy", run_sib_toy)
