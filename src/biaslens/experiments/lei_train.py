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
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from biaslens.data import lei, sources
from biaslens.data.squad import read_squad
from biaslens.errors import BiaslensError
from biaslens.experiments.lei_eval import LeiEvalSettings, build_rows, lei_table, qa_utility
from biaslens.experiments.qa_scoring import qa_mode_for, score_examples
from biaslens.experiments.settings import validated
from biaslens.metrics.qa import squad_scores
from biaslens.models.base import LM
from biaslens.models.hf import BackendConfig, HFBackend, load_hf
from biaslens.models.registry import load_model, resolve_name
from biaslens.progress import NoProgress, Progress
from biaslens.store import atomic
from biaslens.store.cache import CachedLM
from biaslens.store.run import RunStore, json_records
from biaslens.train.lei import LeiTrainConfig, LeiTrainer, LossWeights
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


class LeiTrainSettings(BaseModel):
    """Settings that decide a fine-tuning run's results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "default"
    mode: Literal["auto", "extractive", "generative"] = "auto"
    train_sizes: tuple[int, ...] = TRAIN_SIZES
    learning_rates: tuple[float, ...] = (5e-6, 1e-5, 2e-5, 3e-5)
    epochs: tuple[int, ...] = (3, 5, 7, 9)
    batch_size: int = Field(default=8, ge=1)
    qa_ratio: float = Field(default=1 / 3, ge=0)
    weights: LossWeights = LossWeights()
    schedule: Literal["linear", "constant"] = "linear"
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    reference: Literal["model", "file"] = "model"
    train_types: tuple[str, ...] = lei.INTERVENTION_TYPES
    seed: int = 0
    top_k: int = Field(default=5, ge=1)
    dev: str = "religion/noniid_dev"
    dev_limit: int | None = Field(default=None, ge=1)
    tests: tuple[str, ...] = TESTS
    test_limit: int | None = Field(default=None, ge=1)
    qa_sha256: str = ""
    qa_limit: int | None = Field(default=None, ge=1)

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


def make_lei_train_settings(qa_file: Path | None = None, **values) -> LeiTrainSettings:
    if qa_file is not None:
        if not Path(qa_file).is_file():
            raise BiaslensError(f"{qa_file}: file not found")
        values["qa_sha256"] = sources.sha256_file(Path(qa_file))
    return validated(LeiTrainSettings, values)


def cell_name(size: int, learning_rate: float, epochs: int) -> str:
    return f"n{size}-lr{learning_rate:g}-ep{epochs}"


def lei_criterion(table: pd.DataFrame) -> float:
    """Σ over ethical, adversarial, irrelevant of |μ − desired μ| (from :func:`lei_table`)."""
    gaps = table.set_index("set")["gap"]
    missing = [t for t in CRITERION_TYPES if t not in gaps]
    if missing:
        raise BiaslensError(f"the dev evaluation lacks the set(s) {missing}")
    return float(sum(gaps[t] for t in CRITERION_TYPES))


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


@dataclass
class LeiTrainResult:
    run_dir: Path
    grid: pd.DataFrame
    selected: pd.DataFrame
    results: pd.DataFrame
    summary: dict


def read_table(path: Path) -> pd.DataFrame:
    """A CSV table of the run, or an empty one before its first row."""
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def upsert_rows(path: Path, rows: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Add ``rows`` to a CSV table (replacing rows with the same key), written atomically, so an
    interruption leaves either the old or the new table."""
    table = pd.concat([read_table(path), rows], ignore_index=True)
    table = table.drop_duplicates(key, keep="last")
    atomic.write_bytes(path, table.to_csv(index=False).encode())
    return table


class _Run:
    """One lei-train run directory: evaluation, training and bookkeeping helpers."""

    def __init__(
        self,
        settings: LeiTrainSettings,
        store: RunStore,
        base: HFBackend,
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
        cached = CachedLM(lm, self.store.cache)
        scores = score_examples(cached, self._rows[split], self.progress, self.mode)
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
        answered = qa_utility(CachedLM(lm, self.store.cache), self.qa, self.progress)
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
        stored = self.store.path(f"references/train_{size}.parquet")
        if stored.exists():
            return ZeroShotReference.load(stored)
        reference = model_reference(CachedLM(self.base, self.store.cache), split, self.progress)
        reference.save(stored)
        return reference

    def checkpoint_dir(self, cell: str) -> Path:
        return self.store.path(f"checkpoints/{cell}")

    def finished(self, cell: str) -> bool:
        return (self.checkpoint_dir(cell) / DONE).exists()

    def train_cells(self, size: int, learning_rate: float, epochs: list[int], data, qa_rows):
        """Train the missing checkpoints of one (train size, learning rate) group.

        Linear schedule: one run per epoch count (the schedule depends on the total). Constant
        schedule: one run to the largest count, saving a checkpoint at each requested count.
        """
        runs = [[e] for e in epochs] if self.settings.schedule == "linear" else [epochs]
        for saves in runs:
            model = copy.deepcopy(self.base.model)
            backend = HFBackend(model, self.base.tokenizer, self.base.identity, self.base.config)
            config = LeiTrainConfig(
                learning_rate=learning_rate,
                epochs=max(saves),
                batch_size=self.settings.batch_size,
                qa_ratio=self.settings.qa_ratio,
                weights=self.settings.weights,
                schedule=self.settings.schedule,
                warmup_ratio=self.settings.warmup_ratio,
                weight_decay=self.settings.weight_decay,
                seed=self.settings.seed,
            )
            trainer = LeiTrainer(backend, config, self.mode)

            def save(epoch: int, saves=saves, model=model) -> None:
                if epoch in saves:
                    self._save_checkpoint(cell_name(size, learning_rate, epoch), model)

            log = trainer.train(data, qa_rows, self.progress, on_epoch_end=save)
            for epoch in saves:
                folder = self.checkpoint_dir(cell_name(size, learning_rate, epoch))
                atomic.write_bytes(
                    folder / "train_log.csv",
                    log[log["epoch"] <= epoch].to_csv(index=False).encode(),
                )
                atomic.write_bytes(folder / DONE, b"")
            del model, backend, trainer

    def _save_checkpoint(self, cell: str, model) -> None:
        folder = self.checkpoint_dir(cell)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(partial)
        self.base.tokenizer.save_pretrained(partial)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)

    def load_checkpoint(self, cell: str) -> HFBackend:
        return load_hf(str(self.checkpoint_dir(cell)), self.base.config, display_name=cell)


def run_lei_train(
    settings: LeiTrainSettings,
    output: Path | str,
    backend: BackendConfig | None = None,
    progress: Progress | None = None,
    data_dir: Path | None = None,
    qa_file: Path | None = None,
    keep_checkpoints: bool = False,
) -> LeiTrainResult:
    """Train, evaluate and select; write (or resume) the run directory."""
    progress = progress or NoProgress()
    lei_dir = sources.locate("lei", data_dir)
    train_paths = {n: lei.split_path(f"religion/train_{n}", lei_dir) for n in settings.train_sizes}
    splits = {n: lei.read_split(p) for n, p in train_paths.items()}
    qa = read_squad(qa_file) if qa_file is not None else None
    if qa is not None and settings.qa_limit is not None:
        qa = qa.head(settings.qa_limit)
    base = load_model(settings.model, backend or BackendConfig())
    if not isinstance(base, HFBackend):
        raise BiaslensError(f"model {settings.model!r} is not a transformers model; cannot train")
    mode = qa_mode_for(base) if settings.mode == "auto" else settings.mode
    qa_rows = qa_rows_for_training(qa, qa_file, mode == "extractive") if qa is not None else None
    resolved = settings.model_copy(update={"model": resolve_name(settings.model), "mode": mode})
    store = RunStore(output, METHOD, resolved.model_dump(mode="json"), {})
    run = _Run(settings, store, base, mode, lei_dir, qa, progress)
    try:
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
                        "criterion": lei_criterion(table),
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
        results = summarize_selected(
            evaluations[evaluations["evaluation"] != settings.dev], selected
        )
        store.write_table("results", results)
        qa_results = None
        if qa is not None:
            qa_results = summarize_selected(
                read_table(store.path("qa_utility.csv")).assign(evaluation="qa", set="qa"), selected
            )
            store.write_table("qa_results", qa_results)
        _write_plots(store, results, settings, base.identity.name)
        if not keep_checkpoints:
            for cell in set(grid["checkpoint"]) - set(selected["checkpoint"]):
                shutil.rmtree(run.checkpoint_dir(cell), ignore_errors=True)
        summary = store.write_summary(
            {
                "selected": selected.to_dict(orient="records"),
                "results": json_records(results),
                "training_examples": {str(n): d.counts() for n, d in data.items()},
                "qa_rows": 0 if qa_rows is None else len(qa_rows),
                "qa_utility": None if qa_results is None else json_records(qa_results),
            },
            model=base.identity.describe(),
            train_files={str(n): sources.sha256_file(p) for n, p in train_paths.items()},
        )
        return LeiTrainResult(store.root, grid, selected, results, summary)
    finally:
        store.close()


def _all_cells(settings: LeiTrainSettings) -> set[str]:
    return {
        cell_name(n, lr, e)
        for n in settings.train_sizes
        for lr in settings.learning_rates
        for e in settings.epochs
    }


def _write_plots(store: RunStore, results: pd.DataFrame, settings, model_name: str) -> None:
    import matplotlib.pyplot as plt

    from biaslens.report.lei_plots import training_size_figure

    for evaluation in settings.tests:
        part = results[results["evaluation"] == evaluation]
        if not len(part):
            continue
        figure = training_size_figure(part, f"{model_name}: {evaluation} (top {settings.top_k})")
        store.write_plot(f"train_size_{evaluation.replace('/', '-')}", figure)
        plt.close(figure)
