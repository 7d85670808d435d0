"""A lei-train run folder's bookkeeping: evaluations and QA utility per checkpoint (reused on
resume), zero-shot references, and where checkpoints live.

Tables are rewritten atomically after every row, so an interruption leaves the old or the new
table, never half of one.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from biaslens.common import atomic
from biaslens.common.files import read_table as read_checked
from biaslens.errors import BiaslensError
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.data.unqover import load_question_set
from biaslens.methods.qa.lei_eval.method import build_rows, lei_table, qa_utility
from biaslens.methods.qa.lei_eval.settings import LeiEvalSettings
from biaslens.methods.qa.lei_train.cells import DONE, train_cell_group
from biaslens.methods.qa.lei_train.settings import LeiTrainSettings
from biaslens.methods.qa.metrics.qa import squad_scores
from biaslens.methods.qa.scoring.qa import score_examples
from biaslens.methods.qa.train.lei_data import ZeroShotReference, file_reference, model_reference
from biaslens.models.base import LM
from biaslens.progress import Progress
from biaslens.store.cache import CachedLM
from biaslens.store.run import RunStore


def read_table(path: Path) -> pd.DataFrame:
    """A CSV table of the run, or an empty one before its first row (a damaged one is a
    one-line error naming it)."""
    return read_checked(path, "run table") if path.exists() else pd.DataFrame()


def upsert_rows(path: Path, rows: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Add ``rows`` to a CSV table (replacing rows with the same key), written atomically, so an
    interruption leaves either the old or the new table."""
    table = pd.concat([read_table(path), rows], ignore_index=True)
    table = table.drop_duplicates(key, keep="last")
    atomic.write_csv(path, table)
    return table


class TrainingRun:
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
        stats: dict[str, int] | None = None,
    ) -> None:
        self.settings, self.store, self.base, self.mode = settings, store, base, mode
        self.lei_dir, self.qa, self.progress = lei_dir, qa, progress
        self.evaluations_path = store.path("evaluations.csv")
        self.grid_path = store.path("grid.csv")
        self._rows: dict[str, pd.DataFrame] = {}  # evaluation split -> contexts to score
        self.stats = stats if stats is not None else {"cached": 0, "computed": 0}
        """Requests reused and computed by every model this run asks (the base and each
        checkpoint), in the counts the run reports."""
        self.resumed = {"evaluations": 0, "checkpoints": 0, "references": 0}
        """What a resumed run found already done in its folder."""

    def cached(self, lm: LM) -> CachedLM:
        """``lm`` answering through the run's request cache, counted in :attr:`stats`."""
        return CachedLM(lm, lambda: self.store.cache, stats=self.stats)

    def upsert(self, path: Path, rows: pd.DataFrame, key: list[str]) -> pd.DataFrame:
        """:func:`upsert_rows` of ``rows`` labelled with the run's model and method (every CSV
        of the run folder has them)."""
        return upsert_rows(path, self.store.labelled(rows), key)

    # -------------------------------------------------------------- evaluation
    def evaluate(self, lm: LM, checkpoint: str, split: str, limit: int | None):
        """μ per set of ``lm`` on an LEI split (cached per checkpoint and split)."""
        done = read_table(self.evaluations_path)
        if len(done):
            previous = done[(done["checkpoint"] == checkpoint) & (done["evaluation"] == split)]
            if len(previous):
                self.resumed["evaluations"] += 1
                return previous
        if split not in self._rows:  # the same contexts for every checkpoint
            domain, name = split.split("/")
            eval_settings = LeiEvalSettings(
                domain=domain, split=name, limit=limit, seed=self.settings.seed
            )
            self._rows[split] = build_rows(eval_settings, self.lei_dir)[0]
        cached = self.cached(lm)
        scores = score_examples(
            cached,
            self._rows[split],
            self.progress,
            self.mode,
            self.settings.span_adjustment,
            self.settings.qa_order,
        )
        atomic.write_parquet(
            self.store.path(f"scores/{checkpoint}__{split.replace('/', '-')}.parquet"), scores
        )
        table = lei_table(scores).assign(checkpoint=checkpoint, evaluation=split)
        self.upsert(self.evaluations_path, table, ["checkpoint", "evaluation", "set"])
        return table

    def evaluate_qa(self, lm: LM, checkpoint: str) -> None:
        """EM/F1 of ``lm`` on the QA file (``qa_utility.csv``), once per checkpoint."""
        path = self.store.path("qa_utility.csv")
        done = read_table(path)
        if self.qa is None or (len(done) and (done["checkpoint"] == checkpoint).any()):
            return
        answered = qa_utility(
            self.cached(lm),
            self.qa,
            self.progress,
            self.settings.qa_order == "context-first",
        )
        utility = squad_scores(list(answered["prediction"]), list(answered["answers"]))
        self.upsert(path, pd.DataFrame([{"checkpoint": checkpoint, **utility}]), ["checkpoint"])

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
        adversarial = self.settings.dominant_from == "adversarial"
        name = "adversarial_interventions" if adversarial else "all_templates"
        stored = self.store.path(f"references/train_{size}_{name}.parquet")
        if stored.exists():
            self.resumed["references"] += 1
            return ZeroShotReference.load(stored)
        questions = load_question_set("religion", self.lei_dir / "word_lists")
        interventions = self.lei_dir / "interventions" / "religion_interventions.json"
        reference = model_reference(
            self.cached(self.base),
            split,
            questions,
            self.progress,
            qa_order=self.settings.qa_order,
            path=path,
            adversarial=(lei.load_interventions(interventions), self.settings.span_adjustment)
            if adversarial
            else None,
        )
        reference.save(stored)
        return reference

    def checkpoint_dir(self, cell: str) -> Path:
        return self.store.path(f"checkpoints/{cell}")

    def finished(self, cell: str) -> bool:
        return (self.checkpoint_dir(cell) / DONE).exists()

    def train_cells(self, size: int, learning_rate: float, epochs: list[int], data, qa_rows):
        """Train the missing checkpoints of one (train size, learning rate) group here."""
        train_cell_group(
            self.base,
            self.store.root,
            self.settings,
            self.mode,
            size,
            learning_rate,
            epochs,
            data,
            qa_rows,
            self.progress,
        )

    def load_checkpoint(self, cell: str):
        return self.base.load_checkpoint(self.checkpoint_dir(cell), cell)
