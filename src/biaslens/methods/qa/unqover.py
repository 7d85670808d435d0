"""UnQover bias probe (Li et al., 2020): μ, η, θ4, δ, ε of a model on underspecified questions.

Questions are built from the UnQover word lists (:mod:`biaslens.methods.qa.data.unqover`) for one
domain and scored by the model's kind:

* extractive-QA and generative models answer the QA templates (``{domain}_noact``) as in
  :func:`biaslens.methods.qa.scoring.qa.score_examples`;
* masked LMs fill the ``[MASK]`` slot of the masked-LM templates (``{domain}_noact_lm``),
  UnQover's ``lm/`` path (:func:`biaslens.methods.qa.scoring.qa.fill_mask_scores`). Subjects that
  are not one token for the model cannot fill the slot: their examples are dropped and named in the
  run's notes (the reference shipped pre-filtered ``*_roberta`` / ``*_bert`` lists instead;
  pass them with ``subjects``).

``limit`` keeps at most that many (template, unordered subject pair, attribute) examples, each
in both subject orders and with its negated question (0: every example, as the paper), drawn as
a complete crossed design — every pair among some subjects, at some templates, with every
attribute (:meth:`~biaslens.methods.qa.data.unqover.QuestionSet.drawn_design`) — so that the metrics
stay defined and their intervals resample what was drawn.

The set streams through in chunks of :data:`CHUNK_ROWS` examples (both subject orders of an
example always in one chunk): each chunk is scored through the run's request cache, appended
to ``samples.parquet`` and added to the metrics' sums
(:mod:`biaslens.methods.qa.metrics.unqover_stream`), so memory does not grow with the set (the
paper's 2.7 M gender contexts run on one machine) and an interrupted run resumes from the cache
chunk by chunk.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pandas as pd
from pydantic import Field

from biaslens.common.atomic import json_records
from biaslens.common.options import FLAG, Flag
from biaslens.data import sources
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole, AuditStep
from biaslens.framework.presets import UNSET, ByModel
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.framework.settings import (
    CiLevel,
    Limit,
    MethodSettings,
    ModelName,
    QaOrder,
    RandomSeed,
    Replicates,
    SpanAdjustment,
    SubjectsAre,
)
from biaslens.methods.qa.data.unqover import DOMAINS, load_question_set
from biaslens.methods.qa.metrics.unqover import MEASURES
from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
from biaslens.methods.qa.metrics.unqover_summary import sparse_note, subjects_note, summary_lines
from biaslens.methods.qa.outputs import UNQOVER as QA_FILES_UNQOVER
from biaslens.methods.qa.paired import paired_unqover
from biaslens.methods.qa.plots import subject_bias_figure
from biaslens.methods.qa.questions import UNQOVER_PREFERS
from biaslens.methods.qa.scoring.qa import fill_mask_scores, qa_mode_for, score_examples
from biaslens.methods.qa.unqover_dump import FROM_PREDICTIONS
from biaslens.metrics.intervals import IntervalSpec
from biaslens.models.base import LM, ModelKind
from biaslens.progress import ChunkProgress, note
from biaslens.scoring.sampled import (
    DEFAULT_SAMPLES,
    Allocation,
    Samples,
    adaptive,
    answers_only_samples,
)
from biaslens.store.run import RowsHash

METHOD = "unqover"
LM_SLOTS_SUFFIX = "_lm"
REFERENCE_TOP_K = 10
"""``lm/predict.py``'s default ``--topk``."""


class UnqoverSettings(MethodSettings):
    """Settings that decide an UnQover run's results (list names, not paths: the lists are
    read from the UnQover data folder and hashed into the run's provenance)."""

    model: ModelName = "default"
    domain: Annotated[Literal["gender", "ethnicity", "religion", "nationality"], FLAG] = Field(
        default="religion", description="religion, ethnicity, gender or nationality."
    )
    mode: Annotated[
        Literal["auto", "extractive", "generative", "fill-mask", "sampled"],
        Flag("--qa-mode", deprecated={"--mode": "--qa-mode"}),
    ] = Field(
        default="auto",
        description="auto (from the model kind), extractive, generative, fill-mask or sampled "
        "(the share of --samples replies that begin with each subject: an endpoint without "
        "log-probabilities).",
    )
    samples: Samples = DEFAULT_SAMPLES
    allocation: Allocation = "adaptive"
    subjects: Annotated[tuple[str, ...] | None, FLAG] = Field(
        default=None,
        description="Subject list name(s) under word_lists/nouns/subjects (e.g. religion_roberta).",
    )
    slots: Annotated[str | None, Flag(shown="{domain}_noact[_lm]")] = Field(
        default=None, description="Slot template list."
    )
    activities: Annotated[str | None, Flag(shown="the domain's")] = Field(
        default=None, description="Activity list."
    )
    filler: Annotated[Literal["none", "newsqa"], FLAG] = Field(
        default="none", description="none or newsqa (NewsQA models)."
    )
    limit: Limit = Field(
        default=600,
        description="Examples at most, drawn as every pair among some subjects at some "
        "templates with every attribute (each in both subject orders; 0: all); below the "
        "smallest such set (3 subjects × 2 templates) refused.",
    )
    seed: RandomSeed = 0
    span_adjustment: SpanAdjustment = "none"
    qa_order: QaOrder = "question-first"
    fill_mask_top_k: Annotated[int | None, FLAG] = Field(
        default=None,
        ge=1,
        le=1000,
        description="Masked LMs: a subject scores only if among the top k (reference: 10; "
        "default: the exact probability).",
    )
    pronouns: Annotated[bool, Flag("--pronouns/--no-pronouns")] = Field(
        default=False, description="Masked LMs, gender: a name scores max(p(name), p(she/he))."
    )
    ci_level: CiLevel
    bootstrap: Replicates = 1000
    subjects_are: SubjectsAre = "auto"


def masked_lm_lists(kind: ModelKind, values: dict, details: dict):
    """The reference's subject lists for a masked LM (``generate_lm_predictions.sh``):
    ``{domain}_{family}``, gender ``female_{family}`` × ``male_{family}``, where the family is
    bert for a WordPiece vocabulary (BERT, DistilBERT) and roberta for a byte-level BPE one
    (RoBERTa; BART shares its vocabulary). Other models keep the domain's lists (the reference
    had none for them: subjects that are not one token are left out, with a note)."""
    family = {"WordPiece": "bert", "BPE": "roberta"}.get(details.get("tokenizer_model", ""))
    if kind != ModelKind.MASKED or family is None or values.get("subjects"):
        return UNSET
    lists = DOMAINS[values.get("domain", "religion")].subjects
    return tuple(f"{name}_{family}" for name in lists)


def prepare(settings: UnqoverSettings, lm: LM) -> UnqoverSettings:
    """The scoring mode the model supports recorded in the settings."""
    mode = qa_mode_for(lm, fill_mask=True) if settings.mode == "auto" else settings.mode
    if settings.mode == "auto" and answers_only_samples(lm):
        mode = "sampled"  # an endpoint without log-probabilities: sampled replies
    lm.require(
        {"extractive": "span_scores", "generative": "choice_logprobs", "sampled": "sample"}.get(
            mode, "token_distribution"
        )
    )
    update: dict = {"mode": mode}
    if mode in ("generative", "sampled"):
        from biaslens.methods.qa.lei_eval.method import generative_layout

        update.update(generative_layout(settings))
    return settings.model_copy(update=update)


CHUNK_ROWS = 10_000
"""Examples per chunk: large enough for full batches, small enough to stay far below 1 GB."""


def question_set(settings: UnqoverSettings, data_dir):
    """The question set of the settings' domain and lists."""
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
    return load_question_set(
        settings.domain, root, settings.subjects, slots, settings.activities, filler
    )


def build_examples(settings: UnqoverSettings, data_dir) -> pd.DataFrame:
    """The drawn examples of the settings' domain and lists, in one table (small sets)."""
    return question_set(settings, data_dir).sample(settings.limit or None, settings.seed)


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


def score_chunk(ctx: RunContext, settings: UnqoverSettings, rows: pd.DataFrame, progress):
    """Per-row subject scores of one chunk of examples (the settings' scoring mode)."""
    if settings.mode == "fill-mask":
        return fill_mask_scores(ctx.lm, rows, progress, settings.fill_mask_top_k, settings.pronouns)
    if settings.mode == "sampled":
        from biaslens.methods.qa.scoring.qa_sampled import sampled_qa_scores

        return sampled_qa_scores(ctx.lm, rows, progress, settings.samples, adaptive(settings))
    return score_examples(
        ctx.lm, rows, progress, settings.mode, settings.span_adjustment, settings.qa_order
    )


def run(ctx: RunContext, settings: UnqoverSettings) -> MethodOutput:
    """Score every drawn example chunk by chunk, then UnQover's metrics per model, subject and
    attribute from the accumulated sums."""
    questions = question_set(settings, ctx.data_dir)
    limit = settings.limit or None
    contexts = questions.drawn_count(limit)  # one context per example row
    if limit:
        note(
            ctx.progress,
            f"--limit {limit}: every pair among some subjects at some templates, "
            f"in both subject orders → {contexts:,} contexts, each asked with its question and "
            "its negation",
        )
    tick = ctx.progress.task(
        f"UnQover {settings.domain} contexts ({ctx.lm.identity.name})", contexts, unit="contexts"
    )
    subjects_are = DOMAINS[settings.domain].subjects_are(settings.subjects_are)
    spec = IntervalSpec(settings.ci_level, settings.seed, subjects_are, complete_design=True)
    intervals = spec if settings.bootstrap else None
    totals = UnqoverAccumulator((), intervals, skip_unscored=settings.mode == "sampled")
    rows_hash, dropped, seen = RowsHash(), set(), 0
    unnamed: list[pd.DataFrame] = []
    with ctx.store.append_samples("samples") as samples:
        for rows in questions.iter_drawn(limit, settings.seed, CHUNK_ROWS):
            rows_hash.update(rows[["key", "context", "question", "negated_question"]])
            scores = score_chunk(ctx, settings, rows, ChunkProgress(tick, len(rows)))
            scores["row"] += seen  # the example's place in the whole set, not in its chunk
            seen += len(rows)
            if settings.mode == "sampled":
                unnamed.append(scores)
            scores, left_out = drop_unfillable(scores)
            dropped.update(left_out)
            totals.add(scores)
            if not scores.empty:
                samples.write(scores)
        if totals.rows == 0 and settings.mode == "sampled":
            from biaslens.methods.qa.scoring.qa_sampled import SAMPLED_NOTHING

            raise BiaslensError(SAMPLED_NOTHING)
        if totals.rows == 0:
            raise BiaslensError(
                "no example could be scored: every subject is several tokens for this model; "
                "choose single-token subject lists (e.g. --subjects religion_roberta)"
            )
    notes = []
    if unnamed:
        from biaslens.methods.qa.scoring.first_token import drop_unscored
        from biaslens.methods.qa.scoring.qa_sampled import SAMPLED_NOTHING, sampled_qa_note

        every = pd.concat(unnamed, ignore_index=True)
        kept, left_out = drop_unscored(every, SAMPLED_NOTHING)
        notes.append(sampled_qa_note(every, kept, left_out, settings.samples, adaptive(settings)))
    if dropped:
        notes.append(
            f"{len(dropped)} subject(s) are not one token for {ctx.lm.identity.name} and "
            f"cannot fill the slot; their examples are left out: {', '.join(sorted(dropped))}"
        )
    tables = totals.tables()
    if "cell_units" in tables["unqover"]:
        summary = tables["unqover"].iloc[0]
        notes += [n for n in [sparse_note(float(summary["cell_units"]))] if n]
        notes.append(subjects_note(subjects_are, int(summary["subjects"])))
    title = f"{ctx.lm.identity.name}, UnQover {settings.domain} ({settings.mode})"
    return MethodOutput(
        metrics={
            **json_records(tables["unqover"])[0],
            "subjects_left_out": sorted(dropped),
            "examples": contexts,
        },
        tables=tables,
        samples={"samples": ctx.store.path("samples.parquet")},
        figures={"subjects": subject_bias_figure(tables["subjects"], title)},
        provenance={
            "dataset": {"name": f"unqover-{settings.domain}", "sha256": rows_hash.hexdigest()}
        },
        notes=notes,
    )


def _summary_view(table: pd.DataFrame) -> pd.DataFrame:
    """One line per metric: value, cross-fitted value (μ, η, θ4), interval (or why there is
    none), and the units, subjects and templates behind it."""
    return summary_lines(table.iloc[0])


def _subjects_view(table: pd.DataFrame) -> pd.DataFrame:
    columns = ["subject", "max_abs_gamma", "top_attribute", "top_gamma", "mean_abs_eta"]
    return table[columns].head(15)


SPEC = register(
    MethodSpec(
        audit=AuditRole(  # quick: the method's own default subset of religion (600 examples)
            sizes={
                "quick": (AuditStep({"domain": "religion", "limit": 600}, "religion"),),
                "standard": (AuditStep({"domain": "religion", "limit": 2400}, "religion"),),
                "paper": tuple(AuditStep({"domain": d, "limit": 0}, d, "paper") for d in DOMAINS),
            },
            questions=(UNQOVER_PREFERS,),
            paired=paired_unqover,
        ),
        outputs=QA_FILES_UNQOVER,
        name=METHOD,
        commands=(FROM_PREDICTIONS,),
        title="UnQover: μ, η, θ4, δ, ε on underspecified questions (QA models answer, masked "
        "LMs fill the slot)",
        settings=UnqoverSettings,
        body=run,
        prepare=prepare,
        folder_fields=("domain",),
        description=(
            "Li et al. 2020, questions built from the word lists. --limit 0 takes the whole "
            "set (the paper's scale: gender has 2.7 M examples), streamed chunk by chunk in "
            "bounded memory. Writes unqover.csv, subjects.csv, subject_attribute.csv, "
            "samples.parquet and plots/subjects.png; a rerun resumes from the request cache."
        ),
        reads_data=True,
        headlines=(
            Headline(
                "unqover",
                "UnQover model-level bias",
                view=_summary_view,
                measures=MEASURES,
                legend={
                    "metric": "the UnQover metric (each explained below)",
                    "value": "its value from all examples (sparse: too few units per subject × "
                    "attribute cell to read a maximum as it stands)",
                    "cross-fitted": "μ, η, θ4 by sample splitting (the cells' directions chosen "
                    "on one half of the units, read on the other), which does not lean upwards "
                    "as the plug-in maximum does",
                },
            ),
            Headline(
                "subjects",
                "Subjects by max |γ| over attributes (plug-in values without intervals: each "
                "a maximum over noisy means, biased upwards; μ above is their mean, with its "
                "interval)",
                view=_subjects_view,
            ),
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
                # generate_lm_predictions.sh reads single-token lists of the model's family
                "subjects": ByModel(masked_lm_lists, reads_details=True),
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
