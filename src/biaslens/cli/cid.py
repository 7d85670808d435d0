"""CID commands besides ``biaslens run``: ``cid`` (one pair of inputs) and ``cid-ratings``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from biaslens.cli.options import (
    Model,
    add_command,
    backend_options,
    finite,
    numbers,
)
from biaslens.cli.render import console
from biaslens.common.seeds import MAX_SEED
from biaslens.errors import BiaslensError

Lambdas = Annotated[
    list[str] | None,
    typer.Option("--lam", help="λ values, e.g. --lam 0 5 50 (0 is plain greedy decoding)."),
]
TopKTokens = Annotated[
    int | None,
    typer.Option(
        "--top-k-tokens", "--top-k", help="Restrict to the top-K tokens of p(·|x) (paper: 50)."
    ),
]
MaxNewTokens = Annotated[int | None, typer.Option("--max-new-tokens", help="At most N new tokens.")]


@backend_options
def cid(
    *,
    backend,
    x: Annotated[str, typer.Option("--x", help="The input x.")],
    x_prime: Annotated[str, typer.Option("--x-prime", help="The contrastive input x'.")],
    lam: Lambdas = None,
    model: Model = None,
    top_k_tokens: TopKTokens = None,
    max_new_tokens: MaxNewTokens = None,
    stop: Annotated[list[str] | None, typer.Option("--stop", help="Stop strings.")] = None,
    one_way: Annotated[
        bool, typer.Option("--one-way", help="Only CID(x; x'), not CID(x'; x).")
    ] = False,
    sample: Annotated[
        bool, typer.Option("--sample", help="Sample from p̃ instead of greedy.")
    ] = False,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            min=1e-6,
            callback=finite("--temperature"),
            help="Sampling temperature.",
        ),
    ] = 1.0,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Sampling seed.")] = 0,
) -> None:
    """Contrastive Input Decoding: continuations likely given x but not given x', per λ.

    All (direction, λ) combinations run in one batch.
    """
    from biaslens.models.registry import load_model
    from biaslens.models.requests import ContrastiveGenerateRequest

    if not x.strip() or not x_prime.strip():
        raise BiaslensError("--x and --x-prime must be non-empty")
    from biaslens.scoring.cid import DecodingSettings

    defaults = DecodingSettings()  # the defaults of cid-audit and cid-sensitivity
    lams = numbers(lam, float, "--lam") or list(defaults.lams)
    lm = load_model(model or "default", backend)
    lm.require("contrastive_generate")
    directions = [("x", x, x_prime)] + ([] if one_way else [("x'", x_prime, x)])
    requests = [
        ContrastiveGenerateRequest(
            x=a,
            x_prime=b,
            lam=v,
            max_new_tokens=defaults.max_new_tokens if max_new_tokens is None else max_new_tokens,
            top_k=defaults.top_k if top_k_tokens is None else top_k_tokens,
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
    console.print(f"x:  {x}")
    console.print(f"x': {x_prime}")
    console.print(table)
    lm.close()


def cid_ratings(
    run_dir: Annotated[Path, typer.Argument(help="A cid-audit run directory.")],
    ratings: Annotated[Path, typer.Argument(help="The rated copy of ratings_to_fill.csv.")],
    ci_level: Annotated[
        float, typer.Option("--ci-level", min=0.51, max=0.999, help="Confidence level.")
    ] = 0.95,
    bootstrap: Annotated[
        int,
        typer.Option("--bootstrap", min=0, help="Replicates over name pairs (0: no interval)."),
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Bootstrap seed.")] = 0,
) -> None:
    """Fraction of biased continuations per group and λ from human ratings (paper Fig. 2)."""
    from biaslens.experiments.cid_audit import import_ratings
    from biaslens.runner import write_run_report

    result = import_ratings(run_dir, ratings, ci_level, bootstrap, seed)
    report = write_run_report([run_dir])
    table = Table(title="fraction of biased continuations")
    shown = int(round(ci_level * 100))
    for column in ("group", "λ", "biased", "continuations", "fraction", f"{shown}% CI", "pairs"):
        table.add_column(column)
    for row in result.fractions.itertuples():
        interval = f"[{row.fraction_ci_low:.2f}, {row.fraction_ci_high:.2f}]" if bootstrap else "-"
        table.add_row(
            row.group,
            f"{row.lam:g}",
            f"{row.biased:g}",
            str(row.continuations),
            f"{row.fraction_biased:.2f}",
            interval,
            str(row.pairs) if bootstrap else "-",
        )
    console.print(table)
    console.print(f"table: {result.table_path}")
    console.print(f"plot: {result.plot_path}")
    console.print(f"report: {report}")


def register(app: typer.Typer, run_app: typer.Typer) -> None:
    add_command(app, "cid", cid)
    add_command(app, "cid-ratings", cid_ratings)
