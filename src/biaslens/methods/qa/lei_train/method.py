"""LEI few-shot fine-tuning experiment (Zhao et al. 2021, Section 3, Figs. 5–6, Appendix B.3).

For each religion train file (64 / 256 / 1024 / 4096 examples): fine-tune the model once per
grid cell (learning rate × epochs), evaluate every checkpoint on the dev split, keep the top
``top_k`` by the LEI criterion and report their test results as mean ± std, in-domain
(religion) and out of domain (ethnicity, gender; the gender test also holds the specified
contexts of Fig. 6). QA utility (EM/F1 on a SQuAD-format file) before and after.

LEI criterion (lower is better): the sum over intervention types of |μ − desired μ| on dev,
i.e. low μ under ethical, high μ under adversarial, and μ under irrelevant interventions equal
to the same model's μ without intervention.

The run directory holds ``checkpoints/<cell>/`` (model, tokenizer, ``train_log.csv``),
``references/`` (zero-shot targets, computed once before training), ``grid.csv`` (one row per
evaluated cell, rewritten atomically after each), ``evaluations.csv`` (μ per set for every
evaluated checkpoint and evaluation split), ``results.csv`` (mean ± std of the selected),
``scores/`` (per-sample scores) and plots. An interrupted run resumes at the next untrained cell:
a cell with a finished checkpoint is evaluated, not retrained; evaluations come from the
request cache.
"""

from __future__ import annotations

import shutil

import pandas as pd

from biaslens.common.atomic import json_records
from biaslens.data import sources
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole
from biaslens.framework.presets import UNSET, ByModel
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.data.squad import read_squad
from biaslens.methods.qa.lei_eval.method import generative_layout
from biaslens.methods.qa.lei_train.bookkeeping import TrainingRun, read_table
from biaslens.methods.qa.lei_train.cells import DONE, cell_name, train_cell_group
from biaslens.methods.qa.lei_train.outputs import LEI_TRAIN as QA_FILES_LEI_TRAIN
from biaslens.methods.qa.lei_train.selection import lei_criterion, select_top, summarize_selected
from biaslens.methods.qa.lei_train.settings import (
    TESTS,
    TRAIN_SIZES,
    LeiTrainSettings,
    make_settings,
)
from biaslens.methods.qa.plots import training_size_figure
from biaslens.methods.qa.scoring.qa import qa_mode_for
from biaslens.methods.qa.train.lei_data import (
    qa_rows_for_training,
    training_set,
)
from biaslens.models.base import LM, ModelKind
from biaslens.models.trainable import require_trainable

METHOD = "lei-train"
__all__ = [
    "DONE",
    "TESTS",
    "TRAIN_SIZES",
    "LeiTrainSettings",
    "cell_name",
    "lei_criterion",
    "make_settings",
    "select_top",
    "summarize_selected",
    "train_cell_group",
]


def prepare(settings: LeiTrainSettings, lm: LM) -> LeiTrainSettings:
    """Only an in-process transformers model can be fine-tuned; record its QA mode."""
    require_trainable(lm)
    mode = qa_mode_for(lm) if settings.mode == "auto" else settings.mode
    if mode == "extractive":
        return settings.model_copy(update={"mode": mode})

    return settings.model_copy(update={"mode": mode, **generative_layout(settings)})


def run(ctx: RunContext, settings: LeiTrainSettings) -> MethodOutput:
    """Train, evaluate and select; resumes from the run folder's checkpoints and cache."""
    base, store, mode = ctx.uncached_lm, ctx.store, settings.mode
    if ctx.backend_config.options.max_requests is not None:
        raise BiaslensError(
            "--max-requests bounds the requests a run sends a model; lei-train fine-tunes the "
            "model in process (its cost is training), so it does not take it"
        )
    lei_dir = sources.locate("lei", ctx.data_dir)
    train_paths = {n: lei.split_path(f"religion/train_{n}", lei_dir) for n in settings.train_sizes}
    splits = {n: lei.read_split(p) for n, p in train_paths.items()}
    qa = read_squad(settings.qa_file) if settings.qa_file is not None else None
    if qa is not None and settings.qa_limit is not None:
        qa = qa.head(settings.qa_limit)
    qa_rows = (
        qa_rows_for_training(qa, settings.qa_file, mode == "extractive") if qa is not None else None
    )
    run = TrainingRun(settings, store, base, mode, lei_dir, qa, ctx.progress, ctx.lm.stats)
    # Targets and training sets first: bad train files fail before any training.
    data = {}
    for size, split in splits.items():
        reference = run.reference(size, split, train_paths[size])
        data[size] = training_set(split, reference, train_paths[size], settings.train_types)
    run.evaluate(base, "zero-shot", settings.dev, settings.dev_limit)
    for test in settings.tests:
        run.evaluate(base, "zero-shot", test, settings.test_limit)
    run.evaluate_qa(base, "zero-shot")
    grid = read_table(run.grid_path)
    if settings.parallel_cells > 1:
        from biaslens.methods.qa.lei_train.cells import train_groups

        evaluated = set(grid["checkpoint"]) if len(grid) else set()
        train_groups(
            _untrained_groups(settings, run, evaluated),
            settings,
            mode,
            ctx.backend_config,
            store.open().root,
            data,
            qa_rows,
            settings.parallel_cells,
            ctx.progress,
        )
    for size in settings.train_sizes:
        for learning_rate in settings.learning_rates:
            cells = {e: cell_name(size, learning_rate, e) for e in settings.epochs}
            evaluated = set(grid["checkpoint"]) if len(grid) else set()
            untrained = [e for e, c in cells.items() if not run.finished(c)]
            run.resumed["checkpoints"] += len(cells) - len(untrained)
            if untrained and any(c not in evaluated for c in cells.values()):
                run.train_cells(size, learning_rate, untrained, data[size], qa_rows)
            for epochs, cell in cells.items():
                if cell in evaluated:
                    continue
                lm = run.load_checkpoint(cell)
                table = run.evaluate(lm, cell, settings.dev, settings.dev_limit)
                row = {
                    "checkpoint": cell,
                    "train_size": size,
                    "learning_rate": learning_rate,
                    "epochs": epochs,
                    "criterion": lei_criterion(table, settings.selection),
                    **{f"mu_{s}": m for s, m in zip(table["set"], table["mu"], strict=True)},
                }
                grid = run.upsert(run.grid_path, pd.DataFrame([row]), ["checkpoint"])
                del lm
    grid = grid[grid["checkpoint"].isin(_all_cells(settings))].reset_index(drop=True)
    selected = select_top(grid, settings.top_k)
    store.write_table("selected", selected)
    for cell in selected["checkpoint"]:
        lm = run.load_checkpoint(cell)
        for test in settings.tests:
            run.evaluate(lm, cell, test, settings.test_limit)
        run.evaluate_qa(lm, cell)
        del lm
    evaluations = read_table(run.evaluations_path)
    results = summarize_selected(evaluations[evaluations["evaluation"] != settings.dev], selected)
    tables = {"grid": grid, "selected": selected, "results": results}
    notes = []
    qa_results = None
    if qa is not None:
        qa_results = summarize_selected(
            read_table(store.path("qa_utility.csv")).assign(evaluation="qa", set="qa"), selected
        )
        tables["qa_results"] = qa_results
        notes = [
            f"QA utility, train size {row['train_size']}: EM {row['exact_match_mean']:.1f}, "
            f"F1 {row['f1_mean']:.1f}"
            for row in qa_results.to_dict(orient="records")
        ]
    resumed = {k: v for k, v in run.resumed.items() if v}
    if resumed:
        notes.insert(
            0,
            "resumed from the run folder: "
            + ", ".join(f"{v} {k} already done" for k, v in resumed.items())
            + " (not computed again)",
        )
    if not settings.keep_checkpoints:
        for cell in set(grid["checkpoint"]) - set(selected["checkpoint"]):
            shutil.rmtree(run.checkpoint_dir(cell), ignore_errors=True)
    return MethodOutput(
        metrics={
            "selected": selected.to_dict(orient="records"),
            "results": json_records(results),
            "training_examples": {str(n): d.counts() for n, d in data.items()},
            "qa_rows": 0 if qa_rows is None else len(qa_rows),
            "qa_utility": None if qa_results is None else json_records(qa_results),
        },
        tables=tables,
        figures=_figures(results, settings, base.identity.name),
        provenance={
            "dataset": {
                "name": "lei-train",
                "files": {str(n): sources.sha256_file(p) for n, p in train_paths.items()},
            }
        },
        notes=notes,
    )


def _untrained_groups(settings, run: TrainingRun, evaluated: set[str]) -> list:
    """(train size, learning rate, epoch counts) groups that still need training."""
    groups = []
    for size in settings.train_sizes:
        for learning_rate in settings.learning_rates:
            cells = {e: cell_name(size, learning_rate, e) for e in settings.epochs}
            untrained = [e for e, c in cells.items() if not run.finished(c)]
            if untrained and any(c not in evaluated for c in cells.values()):
                groups.append((size, learning_rate, untrained))
    return groups


def _all_cells(settings: LeiTrainSettings) -> set[str]:
    return {
        cell_name(n, lr, e)
        for n in settings.train_sizes
        for lr in settings.learning_rates
        for e in settings.epochs
    }


def _figures(results: pd.DataFrame, settings, model_name: str) -> dict:
    figures = {}
    for evaluation in settings.tests:
        part = results[results["evaluation"] == evaluation]
        if len(part):
            figures[f"train_size_{evaluation.replace('/', '-')}"] = training_size_figure(
                part, f"{model_name}: {evaluation} (top {settings.top_k})"
            )
    return figures


SPEC = register(
    MethodSpec(
        audit=AuditRole(skip="fine-tunes the model: a training experiment, not an audit step"),
        outputs=QA_FILES_LEI_TRAIN,
        name=METHOD,
        trains_model=True,
        title="LEI few-shot fine-tuning: grid per train size, top-k on dev by the LEI "
        "criterion, test μ mean ± std in and out of domain (Figs. 5–6)",
        settings=LeiTrainSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        reads_data=True,
        headlines=(
            Headline(
                "results",
                "Test μ, mean ± std over the selected checkpoints (train size 0 = zero-shot)",
                columns=(
                    "evaluation",
                    "train_size",
                    "set",
                    "mu_mean",
                    "mu_std",
                    "desired_mu_mean",
                    "models",
                ),
            ),
            Headline(
                "selected",
                "Selected checkpoints (dev, LEI criterion)",
                columns=(
                    "checkpoint",
                    "criterion",
                    "mu_none",
                    "mu_ethical",
                    "mu_adversarial",
                    "mu_irrelevant",
                ),
            ),
            Headline("grid", "Grid: dev μ per checkpoint", cli=False),
            Headline("qa_results", "QA utility (EM / F1) before and after", cli=False),
        ),
        presets={
            "paper": {
                "loss_reduction": "reference",
                "selection": "theta4",
                "dominant_from": "adversarial",
                # extractive rules of LEI's RoBERTa code (a generative model reads UnifiedQA)
                "qa_order": ByModel(
                    lambda kind, values: (
                        "context-first" if kind == ModelKind.EXTRACTIVE_QA else UNSET
                    )
                ),
                "span_adjustment": ByModel(
                    lambda kind, values: "reference" if kind == ModelKind.EXTRACTIVE_QA else UNSET
                ),
                "top_k": 5,
                "learning_rates": (5e-6, 1e-5, 2e-5, 3e-5),
                "epochs": (3, 5, 7, 9),
                "qa_ratio": 1 / 3,
            }
        },
    )
)
