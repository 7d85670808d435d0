"""UnQover / LEI commands of the command line (registered on the app in ``biaslens.cli``)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from biaslens.cli_common import backend_config, print_cache_stats, write_run_report

console = Console()
metrics_app = typer.Typer(help="Score existing prediction files.", no_args_is_help=True)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _print_table(title: str, table, columns: list[str]) -> None:
    out = Table(title=title)
    for column in columns:
        out.add_column(column)
    for row in table.to_dict(orient="records"):
        out.add_row(*[_fmt(row.get(c)) for c in columns])
    console.print(out)


def _run_with_progress(run, settings, output, backend, **kwargs):
    """``run(settings, output, backend, progress, **kwargs)`` under a progress display; the
    warnings it raised are printed once each afterwards (not into the progress bars)."""
    from biaslens.progress import RichProgress

    with warnings.catch_warnings(record=True) as caught, RichProgress.open() as progress:
        warnings.simplefilter("always")
        result = run(settings, output, backend, progress, **kwargs)
    for message in dict.fromkeys(str(w.message) for w in caught):
        console.print(f"[yellow]warning:[/] {message}")
    return result


def metrics_unqover(
    predictions: Path = typer.Argument(..., help="UnQover prediction JSON."),
    by_intervention: bool = typer.Option(
        False, "--by-intervention", help="One row per intervention (9th key field)."
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Write CSV tables to this folder."),
) -> None:
    """UnQover metrics (μ, η, θ4, δ, ε; per subject and subject × attribute) of a prediction
    dump in UnQover's format (keys cluster1|cluster2|subj1|subj2|tid|category|act|act)."""
    from biaslens.data.unqover_predictions import read_predictions
    from biaslens.metrics import unqover as M
    from biaslens.store import atomic

    scores = read_predictions(predictions)
    within = ("intervention",) if "intervention" in scores else ()
    by = within if by_intervention and within else ()
    if by_intervention and not within:
        console.print("[yellow]keys have no intervention field; reporting one model-level row")
    within = () if by else within
    comparative = M.comparative_scores(scores, (*by, *within))
    summary = M.model_summary(scores, by=by, within=within, comparative=comparative)
    subjects = M.subject_bias(comparative, by)
    per = M.subject_attribute_bias(comparative, by)
    clusters = dict(zip(scores["first"], scores["first_cluster"], strict=True))
    tables = {"model": summary, "subjects": subjects, "subject_attribute": per}
    if len(set(clusters.values())) > 1:
        tables["cluster_attribute"] = M.cluster_attribute_bias(comparative, clusters, by)
    _print_table(
        f"UnQover metrics — {predictions.name}",
        summary,
        [*by, "mu", "eta", "theta4", "delta", "epsilon", "contexts"],
    )
    _print_table(
        "Subjects (max |γ| over attributes)",
        subjects.sort_values("max_abs_gamma", ascending=False).head(15),
        [*by, "subject", "max_abs_gamma", "top_attribute", "top_gamma", "mean_abs_eta"],
    )
    if output is not None:
        for name, table in tables.items():
            atomic.write_bytes(Path(output) / f"{name}.csv", table.to_csv(index=False).encode())
        console.print(f"tables written to {output}")


def run_lei_eval(
    model: str = typer.Option("default", "--model", "-m", help="Registered name or folder."),
    domain: str = typer.Option("religion", "--domain", help="religion, ethnicity or gender."),
    split: str = typer.Option(
        "noniid_test", "--split", help="Official split: noniid_test, noniid_dev, train_64 …"
    ),
    split_file: Path = typer.Option(None, "--split-file", help="A SQuAD-format LEI split."),
    mode: str = typer.Option("auto", "--mode", help="auto, extractive or generative."),
    head_words: bool = typer.Option(
        False, "--head-words", help="UnQover's article / head-word span adjustment."
    ),
    limit: int = typer.Option(
        None, "--limit", help="About N context pairs, stratified by type and category."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the --limit subsample."),
    specified_sentences: Path = typer.Option(
        None, "--specified-sentences", help="TSV attribute<TAB>sentence with [subj] (Q_N)."
    ),
    qa_file: Path = typer.Option(None, "--qa-file", help="SQuAD-format file for EM/F1."),
    qa_limit: int = typer.Option(None, "--qa-limit", help="First N questions of --qa-file."),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Folder holding lei/ (default: download cache)."
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Run directory."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
    batch_size: str = typer.Option("auto", "--batch-size", help="auto or N."),
) -> None:
    """Zero-shot LEI: μ with no intervention, under ethical / adversarial / irrelevant
    interventions and on specified contexts, next to the desired μ (LEI Fig. 4)."""
    from biaslens.experiments.lei_eval import make_lei_eval_settings
    from biaslens.experiments.lei_eval import run_lei_eval as run
    from biaslens.experiments.sib_mgc_compare import safe_name

    settings = make_lei_eval_settings(
        split_file=split_file,
        specified_sentences=specified_sentences,
        qa_file=qa_file,
        model=model,
        domain=domain,
        split=split,
        mode=mode,
        head_words=head_words,
        limit=limit,
        seed=seed,
        qa_limit=qa_limit,
    )
    output = output or Path("runs") / "lei-eval" / f"{safe_name(model)}-{domain}"
    result = _run_with_progress(
        run,
        settings,
        output,
        backend_config(device, dtype, batch_size),
        data_dir=data_dir,
        split_file=split_file,
        specified_sentences=specified_sentences,
        qa_file=qa_file,
    )
    _print_table(
        f"LEI μ — {result.summary['model']['name']}, {domain} {settings.split}",
        result.table,
        ["set", "mu", "desired_mu", "gap", "eta", "theta4", "delta", "epsilon", "contexts"]
        + (["specified_win_rate"] if "specified_win_rate" in result.table else []),
    )
    metrics = result.summary["metrics"]
    if metrics.get("specified_absent"):
        console.print(f"specified contexts: {metrics['specified_absent']}", markup=False)
    if metrics.get("qa_utility"):
        qa = metrics["qa_utility"]
        em, f1, n = qa["exact_match"], qa["f1"], qa["questions"]
        console.print(f"QA utility: EM {em:.1f}, F1 {f1:.1f} ({n} questions)")
    print_cache_stats(console, result.cache_stats)
    console.print(f"results in {result.run_dir} (plot {result.plot.name})")
    write_run_report(console, [result.run_dir])


def _numbers(text: str, kind: type, option: str) -> list:
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        from biaslens.errors import BiaslensError

        raise BiaslensError(f"{option}: expected comma-separated numbers, got {text!r}") from None


def run_lei_train(
    model: str = typer.Option("default", "--model", "-m", help="Registered name or folder."),
    mode: str = typer.Option("auto", "--mode", help="auto, extractive or generative."),
    train_sizes: str = typer.Option(
        "64,256,1024,4096", "--train-sizes", help="Official religion train files to use."
    ),
    learning_rates: str = typer.Option(
        "5e-6,1e-5,2e-5,3e-5", "--learning-rates", "--lrs", help="Grid of learning rates."
    ),
    epochs: str = typer.Option("3,5,7,9", "--epochs", help="Grid of epoch counts."),
    train_batch_size: int = typer.Option(
        8, "--train-batch-size", help="Intervention examples per optimizer step."
    ),
    qa_ratio: float = typer.Option(
        1 / 3, "--qa-ratio", help="QA rows mixed in per intervention example (1/3 = official)."
    ),
    weight_ethical: float = typer.Option(1.0, "--weight-ethical"),
    weight_adversarial: float = typer.Option(1.0, "--weight-adversarial"),
    weight_irrelevant: float = typer.Option(1.0, "--weight-irrelevant"),
    weight_qa: float = typer.Option(1.0, "--weight-qa"),
    schedule: str = typer.Option(
        "linear", "--schedule", help="linear (decay to 0) or constant (shares runs across epochs)."
    ),
    reference: str = typer.Option(
        "model",
        "--reference",
        help="Zero-shot targets: model (computed with the model before training) or file "
        "(the split's stored RoBERTa probabilities and tomax; extractive only).",
    ),
    train_types: str = typer.Option(
        "ethical,adversarial,irrelevant",
        "--train-types",
        help="Intervention types to train on (an ablation drops some).",
    ),
    top_k: int = typer.Option(5, "--top-k", help="Checkpoints kept per train size."),
    dev: str = typer.Option("religion/noniid_dev", "--dev", help="Selection split."),
    dev_limit: int = typer.Option(None, "--dev-limit", help="About N context pairs of dev."),
    tests: str = typer.Option(
        ",".join(("religion/noniid_test", "ethnicity/noniid_test", "gender/noniid_test")),
        "--tests",
        help="Evaluation splits (the gender test adds the specified contexts).",
    ),
    test_limit: int = typer.Option(None, "--test-limit", help="About N context pairs per test."),
    qa_file: Path = typer.Option(
        None, "--qa-file", help="SQuAD-format file: mixed-in QA rows and EM/F1 before/after."
    ),
    qa_limit: int = typer.Option(None, "--qa-limit", help="First N questions of --qa-file."),
    seed: int = typer.Option(0, "--seed"),
    keep_checkpoints: bool = typer.Option(
        False, "--keep-checkpoints", help="Keep the checkpoints that were not selected."
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Folder holding lei/ (default: download cache)."
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Run directory."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
    batch_size: str = typer.Option("auto", "--batch-size", help="Scoring batch size: auto or N."),
) -> None:
    """LEI few-shot fine-tuning: grid over learning rates × epochs per train size, top-k on
    dev by the LEI criterion, test μ mean ± std in and out of domain (LEI Figs. 5–6)."""
    from biaslens.experiments.lei_train import make_lei_train_settings
    from biaslens.experiments.lei_train import run_lei_train as run
    from biaslens.experiments.sib_mgc_compare import safe_name

    settings = make_lei_train_settings(
        qa_file=qa_file,
        model=model,
        mode=mode,
        train_sizes=_numbers(train_sizes, int, "--train-sizes"),
        learning_rates=_numbers(learning_rates, float, "--learning-rates"),
        epochs=_numbers(epochs, int, "--epochs"),
        batch_size=train_batch_size,
        qa_ratio=qa_ratio,
        weights={
            "ethical": weight_ethical,
            "adversarial": weight_adversarial,
            "irrelevant": weight_irrelevant,
            "qa": weight_qa,
        },
        schedule=schedule,
        reference=reference,
        train_types=[t.strip() for t in train_types.split(",") if t.strip()],
        top_k=top_k,
        dev=dev,
        dev_limit=dev_limit,
        tests=[t.strip() for t in tests.split(",") if t.strip()],
        test_limit=test_limit,
        qa_limit=qa_limit,
        seed=seed,
    )
    output = output or Path("runs") / "lei-train" / safe_name(model)
    result = _run_with_progress(
        run,
        settings,
        output,
        backend_config(device, dtype, batch_size),
        data_dir=data_dir,
        qa_file=qa_file,
        keep_checkpoints=keep_checkpoints,
    )
    _print_table(
        "Selected checkpoints (dev, LEI criterion: Σ |μ − desired|)",
        result.selected,
        ["checkpoint", "criterion", "mu_none", "mu_ethical", "mu_adversarial", "mu_irrelevant"],
    )
    _print_table(
        "Test μ (mean ± std over the selected; train size 0 = zero-shot)",
        result.results,
        ["evaluation", "train_size", "set", "mu_mean", "mu_std", "desired_mu_mean", "models"],
    )
    qa = result.summary["metrics"].get("qa_utility")
    for row in qa or []:
        console.print(
            f"QA utility, train size {row['train_size']}: EM {row['exact_match_mean']:.1f}, "
            f"F1 {row['f1_mean']:.1f}"
        )
    console.print(f"results in {result.run_dir}")
    write_run_report(console, [result.run_dir])


def register(app: typer.Typer, run_app: typer.Typer) -> None:
    app.add_typer(metrics_app, name="metrics")
    metrics_app.command("unqover")(metrics_unqover)
    run_app.command("lei-eval")(run_lei_eval)
    run_app.command("lei-train")(run_lei_train)
