"""The files of a lei-train run and their columns (the results reference, ``biaslens schema``
and the run's own checks read these declarations)."""

from __future__ import annotations

from biaslens.methods.qa.metrics.unqover import MEASURES
from biaslens.methods.qa.outputs import INTERVALS, LEI_EVAL, LEI_MEANINGS, METRICS
from biaslens.store.output_files import OutputFile

_CELL = ("checkpoint", "train_size", "learning_rate", "epochs")
_CELL_MEANINGS = {
    "checkpoint": "the checkpoint (zero-shot, or n<size>-lr<rate>-ep<epochs>)",
    "train_size": "intervention examples trained on (0: zero-shot)",
    "learning_rate": "the learning rate",
    "epochs": "epochs trained",
    "criterion": "the LEI selection criterion on dev (lower is better)",
    **{
        f"mu_{s}": f"dev μ on the {s} set" for s in ("none", "ethical", "adversarial", "irrelevant")
    },
    "evaluation": "the evaluated split (domain/split)",
}
_QA_MEANINGS = {
    **_CELL_MEANINGS,
    "exact_match": "SQuAD exact match (0 to 100)",
    "f1": "SQuAD F1 (0 to 100)",
    "questions": "questions answered",
}
LEI_TRAIN = (
    OutputFile(
        "grid.csv",
        "per checkpoint: dev μ per set and the selection criterion",
        (*_CELL, "criterion", "mu_none", "mu_ethical", "mu_adversarial", "mu_irrelevant"),
        meanings=_CELL_MEANINGS,
    ),
    OutputFile(
        "selected.csv",
        "the checkpoints the LEI criterion selects per train size",
        (*_CELL, "criterion", "mu_none", "mu_ethical", "mu_adversarial", "mu_irrelevant"),
        meanings=_CELL_MEANINGS,
    ),
    OutputFile(
        "results.csv",
        "test μ per train size and set: mean ± std over the selected checkpoints (Fig. 5)",
        (
            "train_size",
            "evaluation",
            "set",
            "mu_mean",
            "mu_std",
            "gap_mean",
            "gap_std",
            "models",
            "desired_mu_mean",
        ),
        optional=("specified_win_rate_mean", "specified_win_rate_std"),
        meanings={
            **_CELL_MEANINGS,
            "mu_mean": "mean μ over the selected checkpoints",
            "mu_std": "its standard deviation",
            "gap_mean": "mean |μ − desired μ|",
            "gap_std": "its standard deviation",
            "models": "selected checkpoints averaged",
            "desired_mu_mean": "the desired μ (mean over the checkpoints' own baselines)",
            "specified_win_rate_mean": "mean specified win rate",
            "specified_win_rate_std": "its standard deviation",
        },
    ),
    OutputFile(
        "evaluations.csv",
        "every evaluation made (checkpoint × split × set): lei-eval's table, kept to resume",
        ("set", *METRICS, "contexts", "desired_mu", "gap", "checkpoint", "evaluation"),
        optional=("specified_win_rate", *INTERVALS, "units"),
        # lei-eval's headline metrics, as lei-eval's measures define them
        meanings={**_CELL_MEANINGS, **{m.column: m.column_meaning() for m in MEASURES}},
    ),
    OutputFile(
        "qa_results.csv",
        "QA utility (EM / F1) before and after training",
        (),
        optional=("train_size", "checkpoint", "exact_match", "f1", "questions"),
        meanings=_QA_MEANINGS,
        when="--qa-file",
    ),
    OutputFile(
        "qa_utility.csv",
        "per checkpoint: EM / F1 on the QA file, kept to resume",
        (),
        optional=("checkpoint", "exact_match", "f1", "questions"),
        meanings=_QA_MEANINGS,
        when="--qa-file",
    ),
    OutputFile(
        "scores/*.parquet",
        "per checkpoint and split: the scores of every question (lei-eval's samples)",
        LEI_EVAL[0].columns,
        optional=LEI_EVAL[0].optional,
        meanings=LEI_EVAL[0].meanings,
    ),
    OutputFile(
        "references/*.parquet",
        "the zero-shot reference probabilities the intervention loss trains towards",
        ("probs", "dominant_q0", "dominant_q1", "k"),
        meanings={
            **LEI_MEANINGS,
            "probs": "the reference's answer-span probabilities",
            "k": "the example's index in the training set",
        },
    ),
    OutputFile(
        "checkpoints/*/train_log.csv",
        "a checkpoint's training log",
        run_columns=False,
        columns=(
            "epoch",
            "step",
            "loss",
            "lr",
            "loss_ethical",
            "loss_adversarial",
            "loss_irrelevant",
        ),
        meanings={
            "epoch": "epoch",
            "step": "optimizer step",
            "loss": "training loss",
            "lr": "learning rate at the step",
            **{
                f"loss_{t}": f"the loss on {t} interventions"
                for t in ("ethical", "adversarial", "irrelevant")
            },
        },
    ),
    OutputFile("checkpoints/*", "a fine-tuned checkpoint (model, tokenizer, DONE marker)"),
    OutputFile("plots/*.png", "μ per train size (Fig. 5)"),
)
