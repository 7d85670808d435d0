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

import copy
import shutil
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from biaslens.common import atomic
from biaslens.common.atomic import json_records
from biaslens.data import lei, sources
from biaslens.data.squad import read_squad
from biaslens.data.unqover import load_question_set
from biaslens.errors import BiaslensError
from biaslens.experiments.lei_eval import LeiEvalSettings, build_rows, lei_table, qa_utility
from biaslens.experiments.registry import (
    UNSET,
    ByModel,
    Headline,
    MethodOutput,
    MethodSpec,
    RunContext,
    register,
    safe_name,
)
from biaslens.experiments.settings import MethodSettings, file_sha256, validated
from biaslens.metrics.qa import squad_scores
from biaslens.models.base import LM, ModelKind
from biaslens.progress import Progress
from biaslens.scoring.qa import qa_mode_for, score_examples
from biaslens.store.cache import CachedLM
from biaslens.store.run import RunStore, inside_run
from biaslens.train.config import LossWeights
from biaslens.train.lei_data import (
    ZeroShotReference,
    file_reference,
    model_reference,
    qa_rows_for_training,
    training_set,
)

METHOD = "lei-train"
TRAIN_SIZES = (64, 256, 1024, 4096)
TESTS = ("religion/noniid_test", "ethnicity/noniid_test", "gender/noniid_test")
CRITERION_TYPES = ("ethical", "adversarial", "irrelevant")
DONE = "DONE"
"""Marker file written last into a finished checkpoint folder."""


class LeiTrainSettings(MethodSettings):
    """Settings that decide a fine-tuning run's results (``qa_file`` is recorded by its sha256;
    ``keep_checkpoints`` only decides what is kept on disk)."""

    model: str = "default"
    mode: Literal["auto", "extractive", "generative"] = "auto"
    train_sizes: tuple[int, ...] = TRAIN_SIZES
    learning_rates: tuple[float, ...] = (5e-6, 1e-5, 2e-5, 3e-5)
    epochs: tuple[int, ...] = (3, 5, 7, 9)
    train_batch_size: int = Field(default=8, ge=1, description="intervention examples per step")
    qa_ratio: float = Field(default=1 / 3, ge=0)
    weights: LossWeights = LossWeights()
    schedule: Literal["linear", "constant"] = "linear"
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    reference: Literal["model", "file"] = "model"
    loss_reduction: Literal["mean", "reference"] = Field(
        default="mean",
        description="mean: each group loss averaged over its rows; reference: summed over rows "
        "and the total halved (LEI's mutils.py)",
    )
    selection: Literal["gap", "theta4"] = Field(
        default="gap",
        description="gap: Σ over types |μ − desired μ|; theta4: (1 − adversarial θ4) + "
        "ethical θ4 (LEI's model_select.py)",
    )
    qa_order: Literal["question-first", "context-first"] = "question-first"
    span_adjustment: Literal["none", "articles", "reference"] = "none"
    train_types: tuple[str, ...] = lei.INTERVENTION_TYPES
    seed: int = Field(default=0, ge=0)
    top_k: int = Field(default=5, ge=1)
    dev: str = "religion/noniid_dev"
    dev_limit: int | None = Field(default=None, ge=1)
    tests: tuple[str, ...] = TESTS
    test_limit: int | None = Field(default=None, ge=1)
    qa_sha256: str = ""
    qa_limit: int | None = Field(default=None, ge=1)
    qa_file: Path | None = Field(default=None, exclude=True)
    keep_checkpoints: bool = Field(default=False, exclude=True)
    parallel_cells: int = Field(default=1, ge=1, exclude=True)
    """Grid groups trained at once as Ray tasks (1: here, one after the other)."""

    @field_validator("learning_rates")
    @classmethod
    def _positive_rates(cls, rates: tuple[float, ...]) -> tuple[float, ...]:
        if not rates or any(not rate > 0 for rate in rates):
            raise ValueError("every learning rate must be > 0")
        return rates

    @field_validator("epochs")
    @classmethod
    def _positive_epochs(cls, epochs: tuple[int, ...]) -> tuple[int, ...]:
        if not epochs or any(e < 1 for e in epochs):
            raise ValueError("every epoch count must be >= 1")
        return epochs

    @field_validator("train_sizes")
    @classmethod
    def _official_sizes(cls, sizes: tuple[int, ...]) -> tuple[int, ...]:
        unknown = [s for s in sizes if s not in TRAIN_SIZES]
        if not sizes or unknown:
            raise ValueError(f"official religion train sizes are {TRAIN_SIZES}")
        return sizes

    @field_validator("train_types")
    @classmethod
    def _known_types(cls, types: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(types) - set(lei.INTERVENTION_TYPES))
        if not types or unknown:
            raise ValueError(f"intervention types are {', '.join(lei.INTERVENTION_TYPES)}")
        return types

    @field_validator("dev", "tests")
    @classmethod
    def _known_splits(cls, value):
        for name in (value,) if isinstance(value, str) else value:
            if name not in lei.SPLITS or "/train_" in name:
                evaluable = [s for s in lei.SPLITS if "/train_" not in s]
                raise ValueError(f"unknown evaluation split {name!r}; use {', '.join(evaluable)}")
        return value


def make_settings(qa_file: Path | None = None, **values) -> LeiTrainSettings:
    if qa_file is not None:
        values["qa_sha256"] = file_sha256(qa_file, "QA file")
        values["qa_file"] = Path(qa_file)
    return validated(LeiTrainSettings, values)


def cell_name(size: int, learning_rate: float, epochs: int) -> str:
    return f"n{size}-lr{learning_rate:g}-ep{epochs}"


def lei_criterion(table: pd.DataFrame, selection: str = "gap") -> float:
    """The dev criterion, lower is better (from :func:`lei_table`).

    ``gap``: Σ over ethical, adversarial, irrelevant of |μ − desired μ|. ``theta4``: the
    reference's ``model_select.py``, (1 − adversarial θ4) + ethical θ4 (irrelevant left out)."""
    by_set = table.set_index("set")
    needed = CRITERION_TYPES if selection == "gap" else ("ethical", "adversarial")
    missing = [t for t in needed if t not in by_set.index]
    if missing:
        raise BiaslensError(f"the dev evaluation lacks the set(s) {missing}")
    if selection == "theta4":
        return float((1 - by_set.loc["adversarial", "theta4"]) + by_set.loc["ethical", "theta4"])
    return float(sum(by_set.loc[t, "gap"] for t in CRITERION_TYPES))


def select_top(grid: pd.DataFrame, k: int) -> pd.DataFrame:
    """The ``k`` cells with the lowest criterion per train size (ties: smaller learning rate,
    then fewer epochs)."""
    ordered = grid.sort_values(["train_size", "criterion", "learning_rate", "epochs"])
    return ordered.groupby("train_size", sort=True).head(k).reset_index(drop=True)


def summarize_selected(evaluations: pd.DataFrame, selected: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std (over the selected checkpoints) of μ and the gap per train size, evaluation
    split and set; the zero-shot model as train size 0."""
    chosen = evaluations.merge(selected[["checkpoint", "train_size"]], on="checkpoint")
    zero = evaluations[evaluations["checkpoint"] == "zero-shot"].assign(train_size=0)
    table = pd.concat([zero, chosen], ignore_index=True)
    metrics = [c for c in ("mu", "gap", "specified_win_rate", "exact_match", "f1") if c in table]
    if "desired_mu" not in table:
        table = table.assign(desired_mu=np.nan)
    grouped = table.groupby(["train_size", "evaluation", "set"], sort=True)[metrics]
    out = grouped.agg(["mean", "std"])
    out.columns = [f"{m}_{s}" for m, s in out.columns]
    out["models"] = grouped.size()
    desired = table.groupby(["train_size", "evaluation", "set"])["desired_mu"].mean()
    return out.join(desired.rename("desired_mu_mean")).reset_index()


def read_table(path: Path) -> pd.DataFrame:
    """A CSV table of the run, or an empty one before its first row (a damaged one is a
    one-line error naming it)."""
    from biaslens.common.files import read_table as read_checked

    return read_checked(path, "run table") if path.exists() else pd.DataFrame()


def upsert_rows(path: Path, rows: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Add ``rows`` to a CSV table (replacing rows with the same key), written atomically, so an
    interruption leaves either the old or the new table."""
    table = pd.concat([read_table(path), rows], ignore_index=True)
    table = table.drop_duplicates(key, keep="last")
    atomic.write_csv(path, table)
    return table


class _Run:
    """One lei-train run directory: evaluation, training and bookkeeping helpers."""

    def __init__(
        self,
        settings: LeiTrainSettings,
        store: RunStore,
        base,
        mode: str,
        lei_dir: Path,
        qa: pd.DataFrame | None,
        progress: Progress,
    ) -> None:
        self.settings, self.store, self.base, self.mode = settings, store, base, mode
        self.lei_dir, self.qa, self.progress = lei_dir, qa, progress
        self.evaluations_path = store.path("evaluations.csv")
        self.grid_path = store.path("grid.csv")
        self._rows: dict[str, pd.DataFrame] = {}  # evaluation split -> contexts to score

    # -------------------------------------------------------------- evaluation
    def evaluate(self, lm: LM, checkpoint: str, split: str, limit: int | None):
        """μ per set of ``lm`` on an LEI split (cached per checkpoint and split)."""
        done = read_table(self.evaluations_path)
        if len(done):
            previous = done[(done["checkpoint"] == checkpoint) & (done["evaluation"] == split)]
            if len(previous):
                return previous
        if split not in self._rows:  # the same contexts for every checkpoint
            domain, name = split.split("/")
            eval_settings = LeiEvalSettings(
                domain=domain, split=name, limit=limit, seed=self.settings.seed
            )
            self._rows[split] = build_rows(eval_settings, self.lei_dir)[0]
        cached = CachedLM(lm, lambda: self.store.cache)
        scores = score_examples(
            cached, self._rows[split], self.progress, self.mode,
            self.settings.span_adjustment, self.settings.qa_order,
        )  # fmt: skip
        atomic.write_parquet(
            self.store.path(f"scores/{checkpoint}__{split.replace('/', '-')}.parquet"), scores
        )
        table = lei_table(scores).assign(checkpoint=checkpoint, evaluation=split)
        upsert_rows(self.evaluations_path, table, ["checkpoint", "evaluation", "set"])
        return table

    def evaluate_qa(self, lm: LM, checkpoint: str) -> None:
        """EM/F1 of ``lm`` on the QA file (``qa_utility.csv``), once per checkpoint."""
        path = self.store.path("qa_utility.csv")
        done = read_table(path)
        if self.qa is None or (len(done) and (done["checkpoint"] == checkpoint).any()):
            return
        answered = qa_utility(
            CachedLM(lm, lambda: self.store.cache), self.qa, self.progress,
            self.settings.qa_order == "context-first",
        )  # fmt: skip
        utility = squad_scores(list(answered["prediction"]), list(answered["answers"]))
        upsert_rows(path, pd.DataFrame([{"checkpoint": checkpoint, **utility}]), ["checkpoint"])

    # -------------------------------------------------------------- training
    def reference(self, size: int, split: pd.DataFrame, path: Path) -> ZeroShotReference:
        if self.settings.reference == "file":
            if self.mode != "extractive":
                raise BiaslensError(
                    "the split files' stored probabilities are an extractive model's start/end "
                    "probabilities; generative training needs --reference model"
                )
            return file_reference(split, path)
        # dominant subjects over every template of the domain (earlier versions stored
        # references/train_N.parquet from the training file's templates only: not reused)
        stored = self.store.path(f"references/train_{size}_all_templates.parquet")
        if stored.exists():
            return ZeroShotReference.load(stored)
        questions = load_question_set("religion", self.lei_dir / "word_lists")
        reference = model_reference(
            CachedLM(self.base, lambda: self.store.cache), split, questions, self.progress,
            qa_order=self.settings.qa_order, path=path,
        )  # fmt: skip
        reference.save(stored)
        return reference

    def checkpoint_dir(self, cell: str) -> Path:
        return self.store.path(f"checkpoints/{cell}")

    def finished(self, cell: str) -> bool:
        return (self.checkpoint_dir(cell) / DONE).exists()

    def train_cells(self, size: int, learning_rate: float, epochs: list[int], data, qa_rows):
        """Train the missing checkpoints of one (train size, learning rate) group here."""
        train_cell_group(
            self.base, self.store.root, self.settings, self.mode, size, learning_rate, epochs,
            data, qa_rows, self.progress,
        )  # fmt: skip

    def load_checkpoint(self, cell: str):
        from biaslens.models.hf import load_hf

        return load_hf(str(self.checkpoint_dir(cell)), self.base.config, display_name=cell)


def train_cell_group(
    base, root: Path, settings, mode: str, size: int, learning_rate: float, epochs: list[int],
    data, qa_rows, progress,
) -> None:  # fmt: skip
    """Train the checkpoints of one (train size, learning rate) group into ``root/checkpoints``.

    Linear schedule: one run per epoch count (the schedule depends on the total). Constant
    schedule: one run to the largest count, saving a checkpoint at each requested count. The
    trained copy keeps float32 master weights whatever the evaluation dtype (AdamW updates to
    bf16 weights would mostly round away); the forward pass runs in the backend's dtype under
    autocast. Each finished checkpoint gets its ``train_log.csv`` and then a ``DONE`` marker.
    """
    import torch

    from biaslens.models.hf import HFBackend
    from biaslens.train.lei import LeiTrainConfig, LeiTrainer

    runs = [[e] for e in epochs] if settings.schedule == "linear" else [epochs]
    compute_dtype = next(base.model.parameters()).dtype
    for saves in runs:
        model = copy.deepcopy(base.model).float()
        backend = HFBackend(model, base.tokenizer, base.identity, base.config)
        config = LeiTrainConfig(
            learning_rate=learning_rate,
            epochs=max(saves),
            batch_size=settings.train_batch_size,
            qa_ratio=settings.qa_ratio,
            weights=settings.weights,
            schedule=settings.schedule,
            warmup_ratio=settings.warmup_ratio,
            weight_decay=settings.weight_decay,
            seed=settings.seed,
            loss_reduction=settings.loss_reduction,
            context_first=settings.qa_order == "context-first",
        )
        autocast = None if compute_dtype == torch.float32 else compute_dtype
        trainer = LeiTrainer(backend, config, mode, autocast=autocast)

        def save(epoch: int, saves=saves, model=model) -> None:
            if epoch in saves:
                _save_checkpoint(root, cell_name(size, learning_rate, epoch), model, base.tokenizer)

        log = trainer.train(data, qa_rows, progress, on_epoch_end=save)
        for epoch in saves:
            folder = inside_run(root, f"checkpoints/{cell_name(size, learning_rate, epoch)}")
            atomic.write_csv(folder / "train_log.csv", log[log["epoch"] <= epoch])
            atomic.write_bytes(folder / DONE, b"")
        del model, backend, trainer


def _save_checkpoint(root: Path, cell: str, model, tokenizer) -> None:
    folder = inside_run(root, f"checkpoints/{cell}")
    partial = inside_run(root, f"checkpoints/{cell}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def prepare(settings: LeiTrainSettings, lm: LM) -> LeiTrainSettings:
    """Only an in-process transformers model can be fine-tuned; record its QA mode."""
    from biaslens.models.hf import HFBackend

    if not isinstance(lm, HFBackend):
        raise BiaslensError(
            f"model {settings.model!r} is on the {lm.identity.backend} backend; fine-tuning needs "
            "the transformers backend (--backend hf)"
        )
    mode = qa_mode_for(lm) if settings.mode == "auto" else settings.mode
    if mode == "extractive":
        return settings.model_copy(update={"mode": mode})
    from biaslens.experiments.lei_eval import generative_layout

    return settings.model_copy(update={"mode": mode, **generative_layout(settings)})


def run(ctx: RunContext, settings: LeiTrainSettings) -> MethodOutput:
    """Train, evaluate and select; resumes from the run folder's checkpoints and cache."""
    base, store, mode = ctx.backend, ctx.store, settings.mode
    lei_dir = sources.locate("lei", ctx.data_dir)
    train_paths = {n: lei.split_path(f"religion/train_{n}", lei_dir) for n in settings.train_sizes}
    splits = {n: lei.read_split(p) for n, p in train_paths.items()}
    qa = read_squad(settings.qa_file) if settings.qa_file is not None else None
    if qa is not None and settings.qa_limit is not None:
        qa = qa.head(settings.qa_limit)
    qa_rows = (
        qa_rows_for_training(qa, settings.qa_file, mode == "extractive") if qa is not None else None
    )
    run = _Run(settings, store, base, mode, lei_dir, qa, ctx.progress)
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
        from biaslens.experiments.lei_cells import train_groups

        evaluated = set(grid["checkpoint"]) if len(grid) else set()
        train_groups(
            _untrained_groups(settings, run, evaluated), settings, mode, ctx.backend_config,
            store.open().root, data, qa_rows, settings.parallel_cells, ctx.progress,
        )  # fmt: skip
    for size in settings.train_sizes:
        for learning_rate in settings.learning_rates:
            cells = {e: cell_name(size, learning_rate, e) for e in settings.epochs}
            evaluated = set(grid["checkpoint"]) if len(grid) else set()
            untrained = [e for e, c in cells.items() if not run.finished(c)]
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
                grid = upsert_rows(run.grid_path, pd.DataFrame([row]), ["checkpoint"])
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
            "train_files": {str(n): sources.sha256_file(p) for n, p in train_paths.items()}
        },
        notes=notes,
    )


def _untrained_groups(settings, run: _Run, evaluated: set[str]) -> list:
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
    from biaslens.plots.lei import training_size_figure

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
        name=METHOD,
        title="LEI few-shot fine-tuning: grid per train size, top-k on dev by the LEI "
        "criterion, test μ mean ± std in and out of domain (Figs. 5–6)",
        settings=LeiTrainSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        run_name=lambda s: safe_name(s.model),
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
