"""UnQover bias probe (Li et al., 2020): μ, η, θ4, δ, ε of a model on underspecified questions.

Questions are built from the UnQover word lists (:mod:`biaslens.data.unqover`) for one domain
and scored by the model's kind:

* extractive-QA and generative models answer the QA templates (``{domain}_noact``) as in
  :func:`biaslens.scoring.qa.score_examples`;
* masked LMs fill the ``[MASK]`` slot of the masked-LM templates (``{domain}_noact_lm``),
  UnQover's ``lm/`` path (:func:`biaslens.scoring.qa.fill_mask_scores`). Subjects that are not
  one token for the model cannot fill the slot: their examples are dropped and named in the
  run's notes (the reference shipped pre-filtered ``*_roberta`` / ``*_bert`` lists instead;
  pass them with ``subjects``).

``limit`` draws that many (template, unordered subject pair, attribute) examples, each in both
subject orders and with its negated question (0: every example, as the paper).
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import Field

from biaslens.common.atomic import json_records
from biaslens.data import sources
from biaslens.data.unqover import DOMAINS, load_question_set
from biaslens.errors import BiaslensError
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
from biaslens.experiments.settings import MethodSettings
from biaslens.metrics.unqover import (
    cluster_attribute_bias,
    comparative_scores,
    model_summary,
    subject_attribute_bias,
    subject_bias,
)
from biaslens.models.base import LM, ModelKind
from biaslens.scoring.qa import fill_mask_scores, qa_mode_for, score_examples
from biaslens.store.run import dataset_hash

METHOD = "unqover"
LM_SLOTS_SUFFIX = "_lm"
REFERENCE_TOP_K = 10
"""``lm/predict.py``'s default ``--topk``."""


class UnqoverSettings(MethodSettings):
    """Settings that decide an UnQover run's results (list names, not paths: the lists are
    read from the UnQover data folder and hashed into the run's provenance)."""

    model: str = "default"
    domain: Literal["gender", "ethnicity", "religion", "nationality"] = "religion"
    mode: Literal["auto", "extractive", "generative", "fill-mask"] = "auto"
    subjects: tuple[str, ...] | None = Field(
        default=None, description="subject list names (default: the domain's)"
    )
    slots: str | None = Field(default=None, description="slot template list name")
    activities: str | None = Field(default=None, description="activity list name")
    filler: Literal["none", "newsqa"] = "none"
    limit: int = Field(default=500, ge=0, description="examples drawn, both orders (0: all)")
    seed: int = Field(default=0, ge=0)
    span_adjustment: Literal["none", "articles", "reference"] = "none"
    qa_order: Literal["question-first", "context-first"] = "question-first"
    fill_mask_top_k: int | None = Field(
        default=None, ge=1, le=1000, description="masked LMs: reference top-k rule (None: exact)"
    )
    pronouns: bool = Field(default=False, description="masked LMs, gender: max with he/she")


def prepare(settings: UnqoverSettings, lm: LM) -> UnqoverSettings:
    """The scoring mode the model supports recorded in the settings."""
    mode = qa_mode_for(lm, fill_mask=True) if settings.mode == "auto" else settings.mode
    lm.require(
        {"extractive": "span_scores", "generative": "choice_logprobs"}.get(
            mode, "token_distribution"
        )
    )
    update: dict = {"mode": mode}
    if mode == "generative":
        from biaslens.experiments.lei_eval import generative_layout

        update.update(generative_layout(settings))
    return settings.model_copy(update=update)


def build_examples(settings: UnqoverSettings, data_dir) -> pd.DataFrame:
    """The drawn examples of the settings' domain and lists."""
    root = sources.locate("unqover", data_dir) / "word_lists"
    domain = DOMAINS[settings.domain]
    slots = settings.slots or (
        domain.slots + LM_SLOTS_SUFFIX if settings.mode == "fill-mask" else domain.slots
    )
    filler = None
    if settings.filler != "none":
        path = root / "fillers" / settings.filler
        if not path.is_file():
            raise BiaslensError(f"{path}: no such filler list in the UnQover data")
        filler = path.read_text(encoding="utf-8").strip()
    questions = load_question_set(
        settings.domain, root, settings.subjects, slots, settings.activities, filler
    )
    return questions.sample(settings.limit or None, settings.seed)


def drop_unfillable(scores: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Contexts where a subject got no score (not one token for a masked LM), dropped with
    both subject orders so positional error stays defined; returns the subjects concerned."""
    missing = scores["s_first"].isna() | scores["s_second"].isna()
    if not missing.any():
        return scores, []
    subjects = set(scores.loc[scores["s_first"].isna(), "first"]) | set(
        scores.loc[scores["s_second"].isna(), "second"]
    )
    bad = scores["first"].isin(subjects) | scores["second"].isin(subjects)
    return scores[~bad].reset_index(drop=True), sorted(subjects)


def run(ctx: RunContext, settings: UnqoverSettings) -> MethodOutput:
    """Score every drawn example, then UnQover's metrics per model, subject and attribute."""
    from biaslens.plots.lei import subject_bias_figure

    rows = build_examples(settings, ctx.data_dir)
    if settings.mode == "fill-mask":
        scores = fill_mask_scores(
            ctx.lm, rows, ctx.progress, settings.fill_mask_top_k, settings.pronouns
        )
    else:
        scores = score_examples(
            ctx.lm, rows, ctx.progress, settings.mode, settings.span_adjustment, settings.qa_order
        )
    notes = []
    scores, dropped = drop_unfillable(scores)
    if dropped:
        notes.append(
            f"{len(dropped)} subject(s) are not one token for {ctx.lm.identity.name} and "
            f"cannot fill the slot; their examples are left out: {', '.join(dropped)}"
        )
    if scores.empty:
        raise BiaslensError(
            "no example could be scored: every subject is several tokens for this model; "
            "choose single-token subject lists (e.g. --subjects religion_roberta)"
        )
    comparative = comparative_scores(scores)
    summary = model_summary(scores, comparative=comparative)
    subjects = subject_bias(comparative).sort_values("max_abs_gamma", ascending=False)
    tables = {
        "unqover": summary,
        "subjects": subjects.reset_index(drop=True),
        "subject_attribute": subject_attribute_bias(comparative),
    }
    clusters = dict(zip(scores["first"], scores["first_cluster"], strict=True))
    if len(set(clusters.values())) > 1:
        tables["cluster_attribute"] = cluster_attribute_bias(comparative, clusters)
    title = f"{ctx.lm.identity.name}, UnQover {settings.domain} ({settings.mode})"
    return MethodOutput(
        metrics={
            **json_records(summary)[0],
            "subjects_left_out": dropped,
            "examples": int(len(rows)),
        },
        tables=tables,
        samples={"samples": scores},
        figures={"subjects": subject_bias_figure(tables["subjects"], title)},
        provenance={
            "dataset_sha256": dataset_hash(rows[["key", "context", "question", "negated_question"]])
        },
        notes=notes,
    )


def _summary_view(table: pd.DataFrame) -> pd.DataFrame:
    return table[["mu", "eta", "theta4", "delta", "epsilon", "contexts"]]


def _subjects_view(table: pd.DataFrame) -> pd.DataFrame:
    columns = ["subject", "max_abs_gamma", "top_attribute", "top_gamma", "mean_abs_eta"]
    return table[columns].head(15)


SPEC = register(
    MethodSpec(
        name=METHOD,
        title="UnQover: μ, η, θ4, δ, ε on underspecified questions (QA models answer, masked "
        "LMs fill the slot)",
        settings=UnqoverSettings,
        body=run,
        prepare=prepare,
        run_name=lambda s: f"{safe_name(s.model)}-{s.domain}",
        headlines=(
            Headline("unqover", "UnQover model-level bias", view=_summary_view),
            Headline("subjects", "Subjects by max |γ| over attributes", view=_subjects_view),
        ),
        presets={
            "paper": {
                "limit": 0,
                # each rule applies where the reference used it: the span adjustment to
                # extractive models, the top-10 rule to masked LMs
                "span_adjustment": ByModel(
                    lambda kind, values: "reference" if kind == ModelKind.EXTRACTIVE_QA else UNSET
                ),
                "qa_order": "question-first",
                "fill_mask_top_k": ByModel(
                    lambda kind, values: REFERENCE_TOP_K if kind == ModelKind.MASKED else UNSET
                ),
                # the reference's masked-LM script sets USE_HESHE=1 for gender only
                "pronouns": ByModel(
                    lambda kind, values: (
                        kind == ModelKind.MASKED and values.get("domain") == "gender"
                    )
                ),
            }
        },
    )
)
