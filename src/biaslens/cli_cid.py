"""CID commands of the command line (registered on the app in ``biaslens.cli``)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from biaslens.cli_common import backend_config, print_cache_stats, write_run_report
from biaslens.errors import BiaslensError

console = Console()
LAM_HELP = "λ values (e.g. --lam 0 5 50); 0 is plain greedy decoding."


def cid(
    x: str = typer.Option(..., "--x", help="The input x."),
    x_prime: str = typer.Option(..., "--x-prime", help="The contrastive input x'."),
    lam: list[float] = typer.Option([0.0, 5.0, 50.0], "--lam", help=LAM_HELP),
    model: str = typer.Option("default", "--model", "-m", help="Registered name or folder."),
    top_k: int = typer.Option(50, "--top-k", help="Restrict to the top-K tokens of p(·|x)."),
    max_new_tokens: int = typer.Option(30, "--max-new-tokens", help="At most N new tokens."),
    stop: list[str] = typer.Option(None, "--stop", help="Stop string (repeatable)."),
    one_way: bool = typer.Option(False, "--one-way", help="Only CID(x; x'), not CID(x'; x)."),
    sample: bool = typer.Option(False, "--sample", help="Sample from p̃ instead of greedy."),
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
) -> None:
    """Contrastive Input Decoding: continuations likely given x but not given x', per λ.

    All (direction, λ) combinations run in one batch.
    """
    from biaslens.decoding.cid import check_lambda
    from biaslens.models.registry import load_model
    from biaslens.models.requests import ContrastiveGenerateRequest

    if not x.strip() or not x_prime.strip():
        raise BiaslensError("--x and --x-prime must be non-empty")
    if top_k < 1:
        raise BiaslensError(f"--top-k must be >= 1, got {top_k}")
    lams = [check_lambda(v) for v in lam]
    lm = load_model(model, backend_config(device, dtype, "auto"))
    lm.require("contrastive_generate")
    directions = [("x", x, x_prime)] + ([] if one_way else [("x'", x_prime, x)])
    requests = [
        ContrastiveGenerateRequest(
            x=a,
            x_prime=b,
            lam=v,
            max_new_tokens=max_new_tokens,
            top_k=top_k,
            stop=tuple(stop or ()),
            do_sample=sample,
            temperature=temperature,
            seed=seed,
        )
        for v in lams
        for _, a, b in directions
    ]
    results = iter(lm.contrastive_generate(requests))
    table = Table(title=f"CID — {lm.identity.name}", show_lines=True)
    table.add_column("λ")
    for label, _, _ in directions:
        other = "x'" if label == "x" else "x"
        table.add_column(f"CID({label}; {other})")
    for v in lams:
        table.add_row(f"{v:g}", *[next(results).text for _ in directions])
    console.print(f"x:  {x}", markup=False, highlight=False)
    console.print(f"x': {x_prime}", markup=False, highlight=False)
    console.print(table)


def run_cid_audit(
    model: str = typer.Option("default", "--model", "-m", help="Registered name or folder."),
    groups: tuple[str, str] = typer.Option(
        ("us-male", "egypt-male"),
        "--groups",
        help="Two name groups (paper App. C): us-male, us-female, mexico-male, mexico-female, "
        "egypt-male, egypt-female (or those of --names-file).",
    ),
    template: str = typer.Option(
        "software-developer", "--template", help="Template id in the templates file."
    ),
    templates_file: Path = typer.Option(
        None, "--templates-file", help="YAML {id: text with {name} and {he}/{his}/{him}}."
    ),
    names_file: Path = typer.Option(
        None, "--names-file", help="YAML {group: {gender, names}} (default: paper App. C)."
    ),
    lam: list[float] = typer.Option([0.0, 5.0, 50.0], "--lam", help=LAM_HELP),
    top_k: int = typer.Option(50, "--top-k", help="Top-K restriction (paper: 50)."),
    max_new_tokens: int = typer.Option(20, "--max-new-tokens", help="At most N new tokens."),
    show: int = typer.Option(5, "--show", help="Print the N most common continuations."),
    output: Path = typer.Option(None, "--output", "-o", help="Run directory."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
    batch_size: str = typer.Option("auto", "--batch-size", help="auto or N (triples)."),
) -> None:
    """CID name-swap bias audit (paper Section 4): all name pairs of two groups, both
    directions, every λ; most common continuations per group and λ, and a CSV to rate.

    Writes samples.parquet, continuations.csv (counts), ratings_to_fill.csv (fill the `biased`
    column, then run `biaslens cid-ratings RUN_DIR FILE`), summary.json.
    """
    from biaslens.experiments.cid_audit import RATINGS_EXPORT, make_audit_settings, run_audit
    from biaslens.experiments.sib_mgc_compare import safe_name
    from biaslens.metrics.cid import top_continuations
    from biaslens.progress import RichProgress

    settings = make_audit_settings(
        model=model,
        groups=groups,
        template_id=template,
        names_file=names_file,
        templates_file=templates_file,
        lams=tuple(lam),
        top_k=top_k,
        max_new_tokens=max_new_tokens,
    )
    output = output or Path("runs") / "cid-audit" / f"{safe_name(model)}-{groups[0]}-{groups[1]}"
    with RichProgress.open() as progress:
        result = run_audit(settings, output, backend_config(device, dtype, batch_size), progress)
    top = top_continuations(result.samples, ["group", "lam"], n=show)
    table = Table(title=f"CID audit — {result.summary['model']['name']}", show_lines=True)
    for column in ("λ", groups[0], groups[1]):
        table.add_column(column)
    for lam_value in settings.decoding.lams:
        cells = []
        for group in groups:
            part = top[(top["group"] == group) & (top["lam"] == lam_value)]
            cells.append("; ".join(f"{r.continuation} ({r.count})" for r in part.itertuples()))
        table.add_row(f"{lam_value:g}", *cells)
    console.print(table)
    print_cache_stats(console, result.cache_stats)
    console.print(f"results: {result.run_dir}")
    console.print(f"to rate: {result.run_dir / RATINGS_EXPORT}")
    write_run_report(console, [result.run_dir])


def cid_ratings(
    run_dir: Path = typer.Argument(..., help="A cid-audit run directory."),
    ratings: Path = typer.Argument(..., help="The rated copy of ratings_to_fill.csv."),
) -> None:
    """Fraction of biased continuations per group and λ from human ratings (paper Fig. 2)."""
    from biaslens.experiments.cid_audit import import_ratings

    result = import_ratings(run_dir, ratings)
    table = Table(title="fraction of biased continuations")
    for column in ("group", "λ", "biased", "continuations", "fraction"):
        table.add_column(column)
    for row in result.fractions.itertuples():
        table.add_row(
            row.group,
            f"{row.lam:g}",
            f"{row.biased:g}",
            str(row.continuations),
            f"{row.fraction_biased:.2f}",
        )
    console.print(table)
    console.print(f"table: {result.table_path}")
    console.print(f"plot: {result.plot_path}")


def run_cid_sensitivity(
    model: str = typer.Option("default", "--model", "-m", help="Registered name or folder."),
    lam: list[float] = typer.Option(
        [0.0, 1.0, 5.0, 10.0, 50.0], "--lam", help="The λ grid for λ*."
    ),
    tau: float = typer.Option(0.85, "--tau", help="Similarity threshold τ."),
    variants: int = typer.Option(
        2, "--variants", help="Perturbed variants per sentence and rule-based family."
    ),
    perturbation: list[str] = typer.Option(
        None, "--type", help="Perturbation type(s) to include (default: all seven)."
    ),
    sentences_file: Path = typer.Option(None, "--sentences", help="Source prompts, one a line."),
    semantic_file: Path = typer.Option(
        None, "--semantic-pairs", help="TSV type/original/perturbed of semantic edits."
    ),
    encoder: str = typer.Option("all-minilm-l6-v2", "--encoder", help="Sentence encoder."),
    top_k: int = typer.Option(50, "--top-k", help="Top-K restriction (paper: 50)."),
    max_new_tokens: int = typer.Option(20, "--max-new-tokens", help="At most N new tokens."),
    seed: int = typer.Option(0, "--seed", help="Seed of the perturbations."),
    output: Path = typer.Option(None, "--output", "-o", help="Run directory."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
    batch_size: str = typer.Option("auto", "--batch-size", help="auto or N (triples)."),
) -> None:
    """λ* per perturbation type (paper Section 5): the smallest λ at which the two
    contrastive texts' similarity drops below τ; box plot (Fig. 4) and similarity vs λ (Fig. 9).
    """
    from biaslens.experiments.cid_sensitivity import make_sensitivity_settings, run_sensitivity
    from biaslens.experiments.sib_mgc_compare import safe_name
    from biaslens.progress import RichProgress

    settings = make_sensitivity_settings(
        model=model,
        encoder=encoder,
        tau=tau,
        variants=variants,
        seed=seed,
        types=tuple(perturbation) if perturbation else None,
        sentences_file=sentences_file,
        semantic_file=semantic_file,
        lams=tuple(lam),
        top_k=top_k,
        max_new_tokens=max_new_tokens,
    )
    output = output or Path("runs") / "cid-sensitivity" / safe_name(model)
    with RichProgress.open() as progress:
        result = run_sensitivity(
            settings,
            output,
            backend_config(device, dtype, batch_size),
            progress,
            sentences_file=sentences_file,
            semantic_file=semantic_file,
        )
    table = Table(title=f"λ* (τ = {tau:g}) — {result.summary['model']['name']}")
    for column in ("type", "pairs", "median λ*", "q25", "q75", "never < τ"):
        table.add_column(column)
    for row in result.summary_table.itertuples():
        table.add_row(
            row.type, str(row.n), f"{row.median:g}", f"{row.q25:g}", f"{row.q75:g}",
            str(row.n_never),
        )  # fmt: skip
    console.print(table)
    curve = ", ".join(f"λ={r.lam:g}: {r.mean:.3f}" for r in result.curve.itertuples())
    console.print(f"mean similarity: {curve}")
    check = result.monotonicity
    verdict = "non-increasing" if check["non_increasing"] else f"rises at {check['violations']}"
    console.print(f"monotonicity: {verdict} (Spearman ρ = {check['spearman_rho']:+.2f})")
    print_cache_stats(console, result.cache_stats)
    console.print(f"results: {result.run_dir}")
    for plot in result.plots:
        console.print(f"plot: {plot}")
    write_run_report(console, [result.run_dir])


MULTI_VALUE_OPTIONS = {"--lam"}


def expand_multi_value_options(argv: list[str]) -> list[str]:
    """Let ``--lam 0 5 50`` mean ``--lam 0 --lam 5 --lam 50`` (click options take one value
    each): numbers that follow a multi-value option's first value are given to it too."""
    expanded: list[str] = []
    option, taken = None, 0
    for arg in argv:
        if option is not None and _is_number(arg):
            if taken:
                expanded.append(option)
            expanded.append(arg)
            taken += 1
            continue
        option, taken = (arg if arg in MULTI_VALUE_OPTIONS else None), 0
        expanded.append(arg)
    return expanded


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def register(app: typer.Typer, run_app: typer.Typer) -> None:
    app.command("cid")(cid)
    app.command("cid-ratings")(cid_ratings)
    run_app.command("cid-audit")(run_cid_audit)
    run_app.command("cid-sensitivity")(run_cid_sensitivity)
