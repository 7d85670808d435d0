"""UnQover / LEI commands: ``run unqover``, ``run lei-eval``, ``run lei-train``,
``metrics unqover``."""

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
    Seed,
    add_command,
    backend_options,
    finite,
    numbers,
    split_commas,
)
from biaslens.cli.render import console, print_table, print_warning, run_and_print

QAMode = Annotated[
    str | None,
    typer.Option(
        "--qa-mode",
        "--mode",
        help="auto (default: from the model kind), extractive or generative.",
    ),
]
QAFile = Annotated[
    Path | None,
    typer.Option(
        "--qa-file",
        help="SQuAD-format file: EM/F1 (and, for lei-train, QA rows mixed into training).",
    ),
]
QALimit = Annotated[int | None, typer.Option("--qa-limit", help="First N questions of --qa-file.")]
SpanAdjustment = Annotated[
    str | None,
    typer.Option(
        "--span-adjustment",
        help="Extractive S: none (default), articles (a preceding article, a following person "
        "noun) or reference (UnQover's full lists).",
    ),
]
QAOrder = Annotated[
    str | None,
    typer.Option(
        "--qa-order",
        help="Extractive input: question-first (default, UnQover) or context-first (LEI "
        "fine-tuning).",
    ),
]


def metrics_unqover(
    predictions: Annotated[Path, typer.Argument(help="UnQover prediction JSON.")],
    by_intervention: Annotated[
        bool, typer.Option("--by-intervention", help="One row per intervention (9th key field).")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write CSV tables to this folder.")
    ] = None,
) -> None:
    """UnQover metrics (μ, η, θ4, δ, ε; per subject and subject × attribute) of a prediction
    dump in UnQover's format (keys cluster1|cluster2|subj1|subj2|tid|category|act|act)."""
    from biaslens.common import atomic
    from biaslens.data.unqover_predictions import read_predictions
    from biaslens.metrics import unqover as M

    scores = read_predictions(predictions)
    within = ("intervention",) if "intervention" in scores else ()
    by = within if by_intervention and within else ()
    if by_intervention and not within:
        print_warning("keys have no intervention field; reporting one model-level row")
    within = () if by else within
    comparative = M.comparative_scores(scores, (*by, *within))
    summary = M.model_summary(scores, by=by, within=within, comparative=comparative)
    subjects = M.subject_bias(comparative, by)
    per = M.subject_attribute_bias(comparative, by)
    clusters = dict(zip(scores["first"], scores["first_cluster"], strict=True))
    tables = {"model": summary, "subjects": subjects, "subject_attribute": per}
    if len(set(clusters.values())) > 1:
        tables["cluster_attribute"] = M.cluster_attribute_bias(comparative, clusters, by)
    print_table(
        f"UnQover metrics — {predictions.name}",
        summary,
        [*by, "mu", "eta", "theta4", "delta", "epsilon", "contexts"],
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


@backend_options
def run_lei_eval(
    *,
    backend,
    model: Model = None,
    domain: Annotated[
        str | None, typer.Option("--domain", help="religion (default), ethnicity or gender.")
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            "--split", help="Official split: noniid_test (default), noniid_dev, train_64 …"
        ),
    ] = None,
    split_file: Annotated[
        Path | None, typer.Option("--split-file", help="A SQuAD-format LEI split.")
    ] = None,
    qa_mode: QAMode = None,
    span_adjustment: SpanAdjustment = None,
    qa_order: QAOrder = None,
    head_words: Annotated[
        bool,
        typer.Option("--head-words", hidden=True, help="Deprecated: --span-adjustment articles."),
    ] = False,
    limit: Limit = None,
    seed: Seed = None,
    specified_sentences: Annotated[
        Path | None,
        typer.Option("--specified-sentences", help="TSV attribute<TAB>sentence with [subj] (Q_N)."),
    ] = None,
    specified_file: Annotated[
        Path | None,
        typer.Option(
            "--specified-file",
            help="Specified-context examples in the LEI release's JSON layout (e.g. the "
            "authors' female file of Fig. 6, not in the public release).",
        ),
    ] = None,
    specified_answer: Annotated[
        list[str] | None,
        typer.Option(
            "--specified-answer",
            help="Answer cluster(s) or subject(s) of the specified subsets, one row each "
            "(gender default: female male; e.g. Muslim for religion).",
        ),
    ] = None,
    qa_file: QAFile = None,
    qa_limit: QALimit = None,
    data_dir: DataDir = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """Zero-shot LEI: μ with no intervention, under ethical / adversarial / irrelevant
    interventions and on specified contexts, next to the desired μ (LEI Fig. 4)."""
    run_and_print(
        "lei-eval",
        model=model,
        output=output,
        backend=backend,
        preset=preset,
        data_dir=data_dir,
        split_file=split_file,
        specified_sentences=specified_sentences,
        specified_file=specified_file,
        qa_file=qa_file,
        domain=domain,
        split=split,
        mode=qa_mode,
        span_adjustment="articles" if head_words and span_adjustment is None else span_adjustment,
        qa_order=qa_order,
        limit=limit,
        seed=seed,
        qa_limit=qa_limit,
        specified_answers=tuple(split_commas(specified_answer, "--specified-answer") or ()) or None,
    )


@backend_options
def run_lei_train(
    *,
    backend,
    model: Model = None,
    qa_mode: QAMode = None,
    train_sizes: Annotated[
        list[str] | None,
        typer.Option("--train-sizes", help="Official religion train files (64 256 1024 4096)."),
    ] = None,
    learning_rates: Annotated[
        list[str] | None,
        typer.Option(
            "--learning-rates", "--lrs", help="Grid of learning rates (5e-6 1e-5 2e-5 3e-5)."
        ),
    ] = None,
    epochs: Annotated[
        list[str] | None, typer.Option("--epochs", help="Grid of epoch counts (3 5 7 9).")
    ] = None,
    train_batch_size: Annotated[
        int | None,
        typer.Option("--train-batch-size", help="Intervention examples per step (8)."),
    ] = None,
    qa_ratio: Annotated[
        float | None,
        typer.Option(
            "--qa-ratio",
            callback=finite("--qa-ratio"),
            help="QA rows mixed in per intervention example (1/3 = official).",
        ),
    ] = None,
    weight_ethical: Annotated[
        float, typer.Option("--weight-ethical", min=0, callback=finite("--weight-ethical"))
    ] = 1.0,
    weight_adversarial: Annotated[
        float, typer.Option("--weight-adversarial", min=0, callback=finite("--weight-adversarial"))
    ] = 1.0,
    weight_irrelevant: Annotated[
        float, typer.Option("--weight-irrelevant", min=0, callback=finite("--weight-irrelevant"))
    ] = 1.0,
    weight_qa: Annotated[
        float, typer.Option("--weight-qa", min=0, callback=finite("--weight-qa"))
    ] = 1.0,
    schedule: Annotated[
        str | None,
        typer.Option(
            "--schedule",
            help="linear (decay to 0; default) or constant (shares runs across epochs).",
        ),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="Zero-shot targets: model (computed with the model before training; default) or "
            "file (the split's stored RoBERTa probabilities and tomax; extractive only).",
        ),
    ] = None,
    loss_reduction: Annotated[
        str | None,
        typer.Option(
            "--loss-reduction",
            help="mean (default: each group loss averaged over its rows) or reference (summed "
            "over rows, total halved, as LEI's code).",
        ),
    ] = None,
    selection: Annotated[
        str | None,
        typer.Option(
            "--selection",
            help="Dev criterion: gap (default: Σ |μ − desired μ|) or theta4 ((1 − adversarial "
            "θ4) + ethical θ4, as LEI's model_select.py).",
        ),
    ] = None,
    span_adjustment: SpanAdjustment = None,
    qa_order: QAOrder = None,
    train_types: Annotated[
        list[str] | None,
        typer.Option("--train-types", help="Intervention types to train on (ablations drop some)."),
    ] = None,
    top_checkpoints: Annotated[
        int | None,
        typer.Option("--top-checkpoints", "--top-k", help="Checkpoints kept per train size (5)."),
    ] = None,
    dev: Annotated[
        str | None, typer.Option("--dev", help="Selection split (religion/noniid_dev).")
    ] = None,
    dev_limit: Annotated[
        int | None, typer.Option("--dev-limit", help="About N context pairs of dev.")
    ] = None,
    tests: Annotated[
        list[str] | None,
        typer.Option(
            "--tests",
            help="Evaluation splits (default: the three noniid tests; the gender test adds the "
            "specified contexts).",
        ),
    ] = None,
    test_limit: Annotated[
        int | None, typer.Option("--test-limit", help="About N context pairs per test.")
    ] = None,
    qa_file: QAFile = None,
    qa_limit: QALimit = None,
    seed: Seed = None,
    keep_checkpoints: Annotated[
        bool,
        typer.Option("--keep-checkpoints", help="Keep the checkpoints that were not selected."),
    ] = False,
    parallel_cells: Annotated[
        int,
        typer.Option(
            "--parallel-cells",
            min=1,
            help="Train N grid groups at once as Ray tasks, one device each (with --ray-address "
            "on a cluster whose nodes share the run folder).",
        ),
    ] = 1,
    data_dir: DataDir = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """LEI few-shot fine-tuning: grid over learning rates × epochs per train size, top-k on
    dev by the LEI criterion, test μ mean ± std in and out of domain (LEI Figs. 5–6)."""
    weights = {
        "ethical": weight_ethical,
        "adversarial": weight_adversarial,
        "irrelevant": weight_irrelevant,
        "qa": weight_qa,
    }
    run_and_print(
        "lei-train",
        model=model,
        output=output,
        backend=backend,
        preset=preset,
        data_dir=data_dir,
        qa_file=qa_file,
        keep_checkpoints=keep_checkpoints,
        parallel_cells=parallel_cells,
        mode=qa_mode,
        train_sizes=numbers(train_sizes, int, "--train-sizes"),
        learning_rates=numbers(learning_rates, float, "--learning-rates"),
        epochs=numbers(epochs, int, "--epochs"),
        train_batch_size=train_batch_size,
        qa_ratio=qa_ratio,
        weights=weights,
        schedule=schedule,
        reference=reference,
        loss_reduction=loss_reduction,
        selection=selection,
        span_adjustment=span_adjustment,
        qa_order=qa_order,
        train_types=split_commas(train_types, "--train-types"),
        top_k=top_checkpoints,
        dev=dev,
        dev_limit=dev_limit,
        tests=split_commas(tests, "--tests"),
        test_limit=test_limit,
        qa_limit=qa_limit,
        seed=seed,
    )


@backend_options
def run_unqover(
    *,
    backend,
    model: Model = None,
    domain: Annotated[
        str | None,
        typer.Option("--domain", help="religion (default), ethnicity, gender or nationality."),
    ] = None,
    qa_mode: Annotated[
        str | None,
        typer.Option(
            "--qa-mode",
            help="auto (default: from the model kind), extractive, generative or fill-mask.",
        ),
    ] = None,
    subjects: Annotated[
        list[str] | None,
        typer.Option(
            "--subjects",
            help="Subject list name(s) under word_lists/nouns/subjects (e.g. religion_roberta).",
        ),
    ] = None,
    slots: Annotated[
        str | None,
        typer.Option("--slots", help="Slot template list (default: {domain}_noact[_lm])."),
    ] = None,
    activities: Annotated[
        str | None, typer.Option("--activities", help="Activity list (default: the domain's).")
    ] = None,
    filler: Annotated[
        str | None, typer.Option("--filler", help="none (default) or newsqa (NewsQA models).")
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="Examples drawn, each in both subject orders (500; 0: all)."),
    ] = None,
    seed: Seed = None,
    span_adjustment: SpanAdjustment = None,
    qa_order: QAOrder = None,
    fill_mask_top_k: Annotated[
        int | None,
        typer.Option(
            "--fill-mask-top-k",
            help="Masked LMs: a subject scores only if among the top k (reference: 10; "
            "default: the exact probability).",
        ),
    ] = None,
    pronouns: Annotated[
        bool | None,
        typer.Option(
            "--pronouns/--no-pronouns",
            help="Masked LMs, gender: a name scores max(p(name), p(she/he)).",
        ),
    ] = None,
    data_dir: DataDir = None,
    preset: Preset = None,
    output: Output = None,
) -> None:
    """UnQover (Li et al. 2020): μ, η, θ4, δ, ε on underspecified questions built from the word
    lists; QA models answer them, masked LMs fill the subject slot."""
    run_and_print(
        "unqover",
        model=model,
        output=output,
        backend=backend,
        preset=preset,
        data_dir=data_dir,
        domain=domain,
        mode=qa_mode,
        subjects=tuple(split_commas(subjects, "--subjects") or ()) or None,
        slots=slots,
        activities=activities,
        filler=filler,
        limit=limit,
        seed=seed,
        span_adjustment=span_adjustment,
        qa_order=qa_order,
        fill_mask_top_k=fill_mask_top_k,
        pronouns=pronouns,
    )


def register(run_app: typer.Typer, metrics_app: typer.Typer) -> None:
    add_command(metrics_app, "unqover", metrics_unqover)
    add_command(run_app, "unqover", run_unqover)
    add_command(run_app, "lei-eval", run_lei_eval)
    add_command(run_app, "lei-train", run_lei_train)
