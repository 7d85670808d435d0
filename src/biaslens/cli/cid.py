"""CID commands: ``cid``, ``run cid-audit``, ``run cid-sensitivity``, ``cid-ratings``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from biaslens.cli.options import (
    Model,
    Output,
    Preset,
    Seed,
    add_command,
    backend_options,
    finite,
    numbers,
    split_commas,
)
from biaslens.cli.render import console, run_and_print
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
    seed: Annotated[int, typer.Option("--seed", min=0, help="Sampling seed.")] = 0,
) -> None:
    """Contrastive Input Decoding: continuations likely given x but not given x', per λ.

    All (direction, λ) combinations run in one batch.
    """
    from biaslens.models.registry import load_model
    from biaslens.models.requests import ContrastiveGenerateRequest

    if not x.strip() or not x_prime.strip():
        raise BiaslensError("--x and --x-prime must be non-empty")
    lams = numbers(lam, float, "--lam") or [0.0, 5.0, 50.0]
    lm = load_model(model or "default", backend)
    lm.require("contrastive_generate")
    directions = [("x", x, x_prime)] + ([] if one_way else [("x'", x_prime, x)])
    requests = [
        ContrastiveGenerateRequest(
            x=a,
            x_prime=b,
            lam=v,
            max_new_tokens=30 if max_new_tokens is None else max_new_tokens,
            top_k=50 if top_k_tokens is None else top_k_tokens,
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


@backend_options
def run_cid_audit(
    *,
    backend,
    model: Model = None,
    groups: Annotated[
        list[str] | None,
        typer.Option(
            "--groups",
            help="Two name groups (paper App. C): us-male, us-female, mexico-male, "
            "mexico-female, egypt-male, egypt-female (or those of --names-file). "
            "Default: us-male egypt-male.",
        ),
    ] = None,
    template: Annotated[
        str | None, typer.Option("--template", help="Template id (software-developer).")
    ] = None,
    templates_file: Annotated[
        Path | None,
        typer.Option("--templates-file", help="YAML {id: text with {name} and {he}/{his}/{him}}."),
    ] = None,
    names_file: Annotated[
        Path | None,
        typer.Option("--names-file", help="YAML {group: {gender, names}} (default: paper App. C)."),
    ] = None,
    lam: Lambdas = None,
    top_k_tokens: TopKTokens = None,
    max_new_tokens: MaxNewTokens = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """CID name-swap bias audit (paper Section 4): all name pairs of two groups, both
    directions, every λ; most common continuations per group and λ, and a CSV to rate.

    Writes samples.parquet, continuations.csv (counts), ratings_to_fill.csv (fill the `biased`
    column, then run `biaslens cid-ratings RUN_DIR FILE`), summary.json.
    """
    chosen = split_commas(groups, "--groups")
    if chosen is not None and len(chosen) != 2:
        raise BiaslensError(f"--groups takes two name groups, got {len(chosen)}: {chosen}")
    lams = numbers(lam, float, "--lam")
    run_and_print(
        "cid-audit",
        model=model,
        output=output,
        backend=backend,
        preset=preset,
        groups=tuple(chosen) if chosen else None,
        template_id=template,
        names_file=names_file,
        templates_file=templates_file,
        lams=tuple(lams) if lams else None,
        top_k=top_k_tokens,
        max_new_tokens=max_new_tokens,
    )


def cid_ratings(
    run_dir: Annotated[Path, typer.Argument(help="A cid-audit run directory.")],
    ratings: Annotated[Path, typer.Argument(help="The rated copy of ratings_to_fill.csv.")],
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


@backend_options
def run_cid_sensitivity(
    *,
    backend,
    model: Model = None,
    lam: Annotated[
        list[str] | None, typer.Option("--lam", help="The λ grid for λ* (0 1 5 10 50).")
    ] = None,
    tau: Annotated[
        float | None,
        typer.Option("--tau", callback=finite("--tau"), help="Similarity threshold τ (0.85)."),
    ] = None,
    variants: Annotated[
        int | None,
        typer.Option("--variants", help="Perturbed variants per sentence and rule family (2)."),
    ] = None,
    perturbation: Annotated[
        list[str] | None,
        typer.Option("--type", help="Perturbation type(s) to include (default: all seven)."),
    ] = None,
    sentences_file: Annotated[
        Path | None, typer.Option("--sentences", help="Source prompts, one a line.")
    ] = None,
    semantic_file: Annotated[
        Path | None,
        typer.Option("--semantic-pairs", help="TSV type/original/perturbed of semantic edits."),
    ] = None,
    encoder: Annotated[
        str | None, typer.Option("--encoder", help="Sentence encoder (all-minilm-l6-v2).")
    ] = None,
    top_k_tokens: TopKTokens = None,
    max_new_tokens: MaxNewTokens = None,
    seed: Seed = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """λ* per perturbation type (paper Section 5): the smallest λ at which the two
    contrastive texts' similarity drops below τ; box plot (Fig. 4) and similarity vs λ (Fig. 9).
    """
    lams = numbers(lam, float, "--lam")
    types = split_commas(perturbation, "--type")
    run_and_print(
        "cid-sensitivity",
        model=model,
        output=output,
        backend=backend,
        preset=preset,
        encoder=encoder,
        tau=tau,
        variants=variants,
        seed=seed,
        types=tuple(types) if types else None,
        sentences_file=sentences_file,
        semantic_file=semantic_file,
        lams=tuple(lams) if lams else None,
        top_k=top_k_tokens,
        max_new_tokens=max_new_tokens,
    )


def register(app: typer.Typer, run_app: typer.Typer) -> None:
    add_command(app, "cid", cid)
    add_command(app, "cid-ratings", cid_ratings)
    add_command(run_app, "cid-audit", run_cid_audit)
    add_command(run_app, "cid-sensitivity", run_cid_sensitivity)
