"""The ``biaslens`` command line: a thin layer over the library functions.

Every user error is printed as one line (``error: ...``) with exit code 2; nothing is printed as
a traceback unless it is a bug.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from biaslens import __version__, cli_cid, cli_lei, cli_report
from biaslens.cli_common import backend_config, print_cache_stats, write_run_report
from biaslens.errors import BiaslensError

app = typer.Typer(
    help=(
        "biaslens: audit language models for social bias and spurious correlations by "
        "intervening on their inputs and measuring how their outputs move.\n\n"
        "Start with `biaslens run sib-mgc --model default` (SIB Method 1 on the MGC set with the "
        "offline SmolLM2-135M-Instruct)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
run_app = typer.Typer(help="Run a method and write a run directory.", no_args_is_help=True)
models_app = typer.Typer(help="Models biaslens knows by name.", no_args_is_help=True)
datasets_app = typer.Typer(help="Datasets biaslens can build or load.", no_args_is_help=True)
app.add_typer(run_app, name="run")
app.add_typer(models_app, name="models")
app.add_typer(datasets_app, name="datasets")

console = Console()
err_console = Console(stderr=True)


class Mode(str, Enum):
    exact = "exact"
    paper = "paper"


class WKind(str, Enum):
    dates = "dates"
    places = "places"


class Prompt(str, Enum):
    A = "A"
    B = "B"
    C = "C"


def _version(value: bool) -> None:
    if value:
        console.print(f"biaslens {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """biaslens command line."""


@run_app.command("sib-mgc")
def run_sib_mgc(
    model: list[str] = typer.Option(
        None,
        "--model",
        "-m",
        help="Registered name (see `biaslens models list`), hub name or local model folder; "
        "repeat to compare several models (Fig. 3(b)). Default: default.",
    ),
    models_file: Path = typer.Option(
        None, "--models-file", help="A file with one model per line (added to --model)."
    ),
    prompt: list[Prompt] = typer.Option(
        None,
        "--prompt",
        "-p",
        help="Instruction prompt(s) of App. D.2 for causal/seq2seq models; repeat for several. "
        "Default A. Not allowed with masked LMs.",
    ),
    w: list[WKind] = typer.Option(
        None, "--w", help="Injected W values: dates, places (repeat for both). Default: both."
    ),
    mode: Mode = typer.Option(
        Mode.exact,
        "--mode",
        help="exact: full-vocabulary pronoun probability (one forward per sentence). "
        "paper: top-5 sums, greedy decoding of 20 tokens for causal models (App. G).",
    ),
    date_grid: str = typer.Option(
        "code",
        "--date-grid",
        help="code: linspace(1801, 2016, 30) as the reference code; text: 1801-2001.",
    ),
    limit: int = typer.Option(
        None, "--limit", help="At most N sentences per W value (seeded sample), for quick runs."
    ),
    output: Path = typer.Option(
        None,
        "--output",
        "-o",
        help="Run directory (default runs/sib-mgc/<model>-<mode>; with several models, the "
        "comparison root runs/sib-mgc/compare-<mode> with one run folder per model).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for --limit sampling."),
    device: str = typer.Option(
        "auto", "--device", help="auto (cuda, mps, cpu), cpu, cuda, cuda:N, mps."
    ),
    dtype: str = typer.Option(
        "auto", "--dtype", help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16."
    ),
    batch_size: str = typer.Option(
        "auto", "--batch-size", help="auto (start high, halve on OOM) or N."
    ),
) -> None:
    """SIB Method 1 on the MGC set: gendered-pronoun probability vs injected dates/places.

    Writes samples.parquet, fits.csv (slope, 95% CI, r, r² per prompt, W kind and gender),
    slopes.csv (female−male slope difference, mean r²), summary.json and plots/mgc_*.png.
    Rerunning the same command resumes from the run's request cache.
    """
    from biaslens.experiments.sib_mgc import make_settings, run_mgc
    from biaslens.experiments.sib_mgc_compare import read_models_file, run_mgc_models, safe_name
    from biaslens.progress import RichProgress

    models = list(model or [])
    if models_file is not None:
        models += read_models_file(models_file)
    models = models or ["default"]
    settings = make_settings(
        model=models[0],
        mode=mode.value,
        prompts=tuple(p.value for p in prompt) if prompt else None,
        w_kinds=tuple(k.value for k in w) if w else ("dates", "places"),
        date_grid=date_grid,
        limit=limit,
        seed=seed,
        dtype=dtype,
    )
    backend = backend_config(device, dtype, batch_size)
    if len(models) > 1:
        output = output or Path("runs") / "sib-mgc" / f"compare-{mode.value}"
        with RichProgress.open() as progress:
            comparison = run_mgc_models(models, settings, output, backend, progress)
        for result in comparison.runs:
            _print_mgc(result, mode.value)
        table = Table(title="MGC Method 1 across models (mean over prompts)")
        for column in ("model", "parameters", "W", "female−male slope", "mean r²"):
            table.add_column(column)
        for row in comparison.table.itertuples():
            table.add_row(
                row.model,
                f"{row.num_parameters:,}",
                row.w_kind,
                f"{row.female_minus_male_slope:+.4f}",
                f"{row.mean_r2:.3f}",
            )
        console.print(table)
        console.print(f"comparison: {comparison.root / 'comparison.csv'}")
        for plot in comparison.plots:
            console.print(f"plot: {plot}")
        write_run_report(
            console, [r.run_dir for r in comparison.runs], comparison.root / "report.html"
        )
        return
    output = output or Path("runs") / "sib-mgc" / f"{safe_name(models[0])}-{mode.value}"
    with RichProgress.open() as progress:
        result = run_mgc(settings, output, backend, progress)
    _print_mgc(result, mode.value)


def _print_mgc(result, mode: str) -> None:
    table = Table(title=f"MGC Method 1 — {result.summary['model']['name']} ({mode})")
    for column in ("prompt", "W", "gender", "slope (pp/step)", "95% CI", "r", "r²"):
        table.add_column(column)
    for row in result.fits.itertuples():
        table.add_row(
            row.prompt,
            row.w_kind,
            row.gender,
            f"{row.slope:+.4f}",
            f"[{row.slope_ci_low:+.4f}, {row.slope_ci_high:+.4f}]",
            f"{row.r:+.3f}",
            f"{row.r2:.3f}",
        )
    console.print(table)
    for row in result.slopes.itertuples():
        console.print(
            f"prompt {row.prompt}, {row.w_kind}: female−male slope "
            f"{row.female_minus_male_slope:+.4f}"
            f" pp/step, mean r² {row.mean_r2:.3f}"
        )
    print_cache_stats(console, result.cache_stats)
    console.print(f"results: {result.run_dir}")
    for plot in result.plots:
        console.print(f"plot: {plot}")
    write_run_report(console, [result.run_dir])


@run_app.command("sib-detect")
def run_sib_detect(
    model: str = typer.Option(
        "default", "--model", "-m", help="Registered name, hub name or folder."
    ),
    mode: Mode = typer.Option(Mode.exact, "--mode", help="exact or paper pronoun scoring."),
    earliest: int = typer.Option(1901, "--earliest", help="Earliest injected date."),
    latest: int = typer.Option(2016, "--latest", help="Latest injected date."),
    average_n: int = typer.Option(
        1, "--average-n", help="Average the first/last N dates of a grid instead of single dates."
    ),
    threshold: float = typer.Option(
        0.5, "--threshold", help="Unspecified when metric > this (pp)."
    ),
    limit: int = typer.Option(None, "--limit", help="Only the first N occupations (sorted)."),
    data_dir: Path = typer.Option(
        None,
        "--data-dir",
        help="Folder holding winogender/ (else $BIASLENS_DATA_DIR or the cache).",
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Run directory."),
    show_occupation: list[str] = typer.Option(
        None, "--show-occupation", help="Print the per-sentence table (like Table 2) for these."
    ),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
    batch_size: str = typer.Option("auto", "--batch-size", help="auto or N."),
) -> None:
    """SIB Method 2: task-specification detector on extended Winogender and the Simplified set.

    Writes sentences.parquet (per sentence: female/male/neutral mass at each date, p_f,
    metric, verdict, ground truth), rates.csv (TPR, TNR, balanced accuracy), samples.parquet,
    summary.json and plots/detector_*.png (per occupation, ordered by BLS % female).
    """
    from biaslens.experiments.sib_detect import make_detect_settings, run_detect
    from biaslens.experiments.sib_mgc_compare import safe_name
    from biaslens.progress import RichProgress

    settings = make_detect_settings(
        model=model,
        mode=mode.value,
        earliest=earliest,
        latest=latest,
        average_n=average_n,
        threshold=threshold,
        limit=limit,
    )
    backend = backend_config(device, dtype, batch_size)
    if output is None:
        output = Path("runs") / "sib-detect" / f"{safe_name(model)}-{mode.value}"
    with RichProgress.open() as progress:
        result = run_detect(settings, output, backend, progress, data_dir=data_dir)
    for occupation in show_occupation or []:
        rows = result.sentences[result.sentences["occupation"] == occupation]
        if rows.empty:
            raise BiaslensError(f"--show-occupation: no sentences for {occupation!r}")
        per_sentence = Table(title=f"{occupation}: specification metric per sentence (pp)")
        for column in ("set", "sentence", "WS", "metric", "verdict"):
            per_sentence.add_column(column)
        for row in rows.itertuples():
            per_sentence.add_row(
                row.set,
                row.sentence,
                "yes" if row.well_specified else "no",
                f"{row.metric:.2f}",
                "unspecified" if row.predicted_unspecified else "well-specified",
            )
        console.print(per_sentence)
    table = Table(title=f"Method 2 detector — {result.summary['model']['name']}")
    for column in ("set", "TPR", "TNR", "BA", "unspecified", "well-specified"):
        table.add_column(column)
    for row in result.rates.itertuples():
        table.add_row(
            row.set,
            f"{row.tpr:.3f}",
            f"{row.tnr:.3f}",
            f"{row.balanced_accuracy:.3f}",
            str(row.n_unspecified),
            str(row.n_well_specified),
        )
    console.print(table)
    print_cache_stats(console, result.cache_stats)
    console.print(f"results: {result.run_dir}")
    for plot in result.plots:
        console.print(f"plot: {plot}")
    write_run_report(console, [result.run_dir])


@datasets_app.command("download")
def datasets_download(
    name: str = typer.Argument(..., help="Dataset name (see `biaslens datasets list`)."),
    data_dir: Path = typer.Option(None, "--data-dir", help="Where to store it (default: cache)."),
) -> None:
    """Fetch a dataset's files from their public repository pinned to a commit, check sha256."""
    from biaslens.data.sources import download

    folder = download(name, data_dir)
    console.print(f"{name}: stored in {folder}")


@run_app.command("sib-toy")
def run_sib_toy(
    n: int = typer.Option(100_000, "--n", help="Samples per task (well-specified, unspecified)."),
    alpha: float = typer.Option(10.0, "--alpha", help="Noise amplification α of App. B."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random generator."),
    output: Path = typer.Option(Path("runs/sib-toy"), "--output", "-o", help="Run directory."),
) -> None:
    """SIB toy structural causal model (App. B, Fig. 2(c)/(d)): how sample selection
    correlates W and G, and how that leaks into X vs Y only for the unspecified task."""
    from biaslens.experiments.sib_toy import make_toy_settings, run_toy

    result = run_toy(make_toy_settings(n=n, alpha=alpha, seed=seed), output)
    table = Table(title="toy SCM: Pearson r before and after selection")
    for column in ("task", "γ", "selected", "W–G all", "W–G sel.", "X–Y all", "X–Y sel."):
        table.add_column(column)
    for row in result.summary.itertuples():
        table.add_row(
            row.task,
            f"{row.gamma:g}",
            f"{row.selected_fraction:.2%}",
            f"{row.corr_WG_all:+.3f}",
            f"{row.corr_WG_selected:+.3f}",
            f"{row.corr_XY_all:+.3f}",
            f"{row.corr_XY_selected:+.3f}",
        )
    console.print(table)
    console.print(f"results: {result.run_dir}")
    console.print(f"plot: {result.plot}")
    write_run_report(console, [result.run_dir])


@models_app.command("list")
def models_list() -> None:
    """Registered model names (usable as --model); any hub name or local folder works too."""
    from biaslens.models.registry import ALIASES, REGISTRY

    table = Table(title="registered models")
    for column in ("name", "aliases", "kind", "description"):
        table.add_column(column)
    for name, entry in REGISTRY.items():
        aliases = ", ".join(a for a, target in ALIASES.items() if target == name)
        table.add_row(name, aliases, entry.kind, entry.description)
    console.print(table)


@datasets_app.command("list")
def datasets_list() -> None:
    """Datasets biaslens builds or loads, with their source."""
    from biaslens.data.registry import DATASETS

    table = Table(title="datasets")
    for column in ("name", "method", "size", "source", "available"):
        table.add_column(column)
    for info in DATASETS.values():
        table.add_row(info.name, info.method, info.size, info.source, info.available)
    console.print(table)


cli_cid.register(app, run_app)
cli_lei.register(app, run_app)
cli_report.register(app)


def main() -> None:
    """Entry point: run the app, printing ``BiaslensError`` as one line with exit code 2."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        app(args=cli_cid.expand_multi_value_options(sys.argv[1:]))
    except BiaslensError as error:
        err_console.print(f"[bold red]error:[/] {error}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print(
            "interrupted: finished requests are kept in the run's cache; rerun to resume"
        )
        sys.exit(130)


if __name__ == "__main__":
    main()
