"""Zero-shot LEI evaluation (Zhao et al., 2021, Section 2.3 and Fig. 4).

For one model and domain: μ and η (UnQover, Li et al. 2020 Section 4.3) with no intervention and
under ethical, adversarial and irrelevant interventions (an official SQuAD-format LEI split), and
on specified contexts (Q_N), next to the desired value of each: 0, 1, unchanged, 1. The
no-intervention set is the split's own contexts with the intervention removed. Specified
contexts: the public gender sample file for gender, or ``attribute<TAB>sentence`` sentences for
any domain. Optional QA utility: EM/F1 on a SQuAD-format file.

``limit`` keeps about that many context pairs (the two subject orders of a key stay together),
stratified by intervention type and category so every type and category stays represented.
``per_cell`` instead keeps context pairs until every (subject, attribute) cell of each set holds
that many subject pair × template units: μ and η then read every cell (the audit's quick draw).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from biaslens.common.atomic import json_records
from biaslens.data import sources
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import LmEvalTask
from biaslens.framework.options import options_of
from biaslens.framework.presets import UNSET, ByModel
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.data.squad import read_squad
from biaslens.methods.qa.data.unqover import DOMAINS
from biaslens.methods.qa.lei_eval import reference
from biaslens.methods.qa.lei_eval.scores import score_questions, scoring_label
from biaslens.methods.qa.lei_eval.settings import AUDIT, LeiEvalSettings, make_settings
from biaslens.methods.qa.lei_eval.table import PAIRING, change_table, lei_table
from biaslens.methods.qa.lei_eval.views import change_view, mu_view
from biaslens.methods.qa.metrics.lei_measures import MU_CHANGE
from biaslens.methods.qa.metrics.qa import squad_scores
from biaslens.methods.qa.metrics.unqover import MEASURES as UNQOVER_MEASURES
from biaslens.methods.qa.metrics.unqover import (
    comparative_scores,
    subject_bias,
    unordered_pair,
)
from biaslens.methods.qa.metrics.unqover_summary import subject_strata, subjects_note
from biaslens.methods.qa.outputs import LEI_EVAL as QA_FILES_LEI_EVAL
from biaslens.methods.qa.plots import lei_mu_figure
from biaslens.methods.qa.scoring.qa import qa_mode_for, unifiedqa_prompt
from biaslens.metrics.intervals import IntervalSpec
from biaslens.models.base import LM, ModelKind
from biaslens.models.requests import AnswerSpanRequest, GenerateRequest, RequestType
from biaslens.progress import Progress, note
from biaslens.scoring.sampled import answers_only_samples
from biaslens.store.paths import safe_name
from biaslens.store.run import dataset_hash

METHOD = "lei-eval"


def _pair_key(table: pd.DataFrame) -> pd.Series:
    low, high = unordered_pair(table["first"], table["second"])
    return (
        pd.Series(low, index=table.index)
        + "|"
        + pd.Series(high, index=table.index)
        + "|"
        + table["template"].astype(str)
        + "|"
        + table["attribute"]
        + "|"
        + table["intervention_id"]
    )


def _drawn(table: pd.DataFrame, settings: LeiEvalSettings, strata: tuple[str, ...]):
    """The context pairs ``--limit`` (stratified by ``strata``) or ``--per-cell`` (every
    (subject, attribute) cell of each intervention type filled) keeps; all without either."""
    if settings.per_cell is not None:
        return lei.cell_filling_keys(
            table, settings.per_cell, ("intervention_type",), "pair_key", settings.seed
        )
    if settings.limit is not None:
        return lei.stratified_keys(table, settings.limit, strata, "pair_key", settings.seed)
    return table


def build_rows(
    settings: LeiEvalSettings,
    lei_dir: Path | None,
    split_file: Path | None = None,
    specified_sentences: Path | None = None,
) -> tuple[pd.DataFrame, str]:
    """All contexts to score, with a ``set`` column; and why Q_N is absent, if it is."""
    if split_file is None and lei_dir is None:
        raise BiaslensError("the LEI data folder is needed for an official split")
    path = split_file or lei.split_path(f"{settings.domain}/{settings.split}", lei_dir)
    split = lei.read_split(path)
    split["pair_key"] = _pair_key(split)
    split = _drawn(split, settings, ("intervention_type", "category"))
    parts = [lei.without_interventions(split), split]
    absent = ""
    answers = specified_answers(settings, specified_sentences is not None)
    if specified_sentences is not None:
        if lei_dir is None:
            raise BiaslensError("specified subsets need the LEI word lists (--data-dir)")
        sentences = lei.read_specifying_sentences(specified_sentences)
        clusters = lei.subject_clusters(lei_dir, settings.domain)
        base = lei.without_interventions(split)
        parts += [lei.specify(base, sentences, answer, clusters) for answer in answers]
    elif settings.domain == "gender" or settings.specified_file is not None:
        source = settings.specified_file or lei_dir / "data" / lei.SPECIFIED_SAMPLE
        specified = lei.read_specified(source)
        present = set(specified["intervention_type"].str.removeprefix("specified-"))
        if settings.specified_file is not None and not settings.specified_answers:
            answers = tuple(sorted(present))
        missing = sorted(set(answers) - present)
        if missing:
            what = (
                f"{settings.specified_file}"
                if settings.specified_file is not None
                else "the public LEI specified-context sample"
            )
            raise BiaslensError(
                f"{what} holds {', '.join(sorted(present))} answers only, not "
                f"{', '.join(missing)}; pass --specified-file with the authors' file of those "
                "answers, or --specified-sentences to build them from the split"
            )
        specified = specified[
            specified["intervention_type"].isin([f"specified-{a}" for a in answers])
        ]
        specified["pair_key"] = _pair_key(specified)
        specified = _drawn(specified, settings, ("template",))
        parts.append(specified)
    else:
        if settings.specified_answers:
            raise BiaslensError(
                f"--specified-answer {' '.join(settings.specified_answers)}: there are no "
                f"specified contexts for {settings.domain} in the public LEI release; pass "
                "--specified-sentences (attribute<TAB>sentence with [subj]) or --specified-file"
            )
        absent = (
            f"no specified-context data for {settings.domain} in the public LEI release; "
            "pass specifying sentences (attribute<TAB>sentence with [subj])"
        )
    rows = pd.concat(parts, ignore_index=True)
    rows["set"] = rows["intervention_type"]
    rows["intervention"] = rows["intervention"].fillna("")
    return rows.drop(columns=["pair_key"], errors="ignore"), absent


def specified_answers(settings: LeiEvalSettings, from_sentences: bool) -> tuple[str, ...]:
    """The answers of the specified subsets: as asked, else gender's female and male (the
    public sample: male only); other domains must name them (a subject, e.g. Muslim)."""
    if settings.specified_answers:
        return tuple(a.lower() for a in settings.specified_answers)
    if settings.domain == "gender":
        return ("female", "male") if from_sentences else ("male",)
    if from_sentences:
        raise BiaslensError(
            f"name the answer of the {settings.domain} specified contexts with "
            "--specified-answer SUBJECT (e.g. --specified-answer Muslim): a set whose specified "
            "subject varies cannot reach the desired μ = 1"
        )
    return ()


def qa_utility(
    lm: LM, qa: pd.DataFrame, progress: Progress, context_first: bool = False
) -> pd.DataFrame:
    """The model's answers to SQuAD-format questions (best span, or a greedy answer)."""
    if lm.kind == ModelKind.EXTRACTIVE_QA:
        requests = [
            AnswerSpanRequest(q, c, context_first=context_first)
            for q, c in zip(qa["question"], qa["context"], strict=True)
        ]
        tick = progress.task(f"QA utility ({lm.identity.name})", len(requests))
        answers = [r.text for r in lm.answer_span(requests, tick)]
    else:
        causal = lm.kind == ModelKind.CAUSAL
        prompts = [
            unifiedqa_prompt((q, c), causal)
            for q, c in zip(qa["question"], qa["context"], strict=True)
        ]
        requests = [GenerateRequest(p, max_new_tokens=16, top_k=1, stop=("\n",)) for p in prompts]
        tick = progress.task(f"QA utility ({lm.identity.name})", len(requests))
        answers = [r.text.strip() for r in lm.generate(requests, tick)]
    return qa.assign(prediction=answers)


def prepare(settings: LeiEvalSettings, lm: LM) -> LeiEvalSettings:
    """The QA mode the model supports (``auto``) recorded in the settings."""
    mode = qa_mode_for(lm) if settings.mode == "auto" else settings.mode
    if mode == "extractive":
        lm.require("span_scores")
        return settings.model_copy(update={"mode": mode})
    answers = set(lm.capabilities)
    if settings.mode == "auto" and answers - {RequestType.SAMPLE} == {RequestType.GENERATE}:
        mode = "first-token"  # a chat endpoint: the top-k of the answer is all there is
    if settings.mode == "auto" and answers_only_samples(lm):
        mode = "sampled"  # an endpoint without log-probabilities: sampled replies
    if mode == "sampled":
        lm.require("sample")
    elif mode != "first-token":
        lm.require("choice_logprobs")
    elif lm.kind != ModelKind.CAUSAL:
        raise BiaslensError(
            "--qa-mode first-token reads a causal model's first answer token; score "
            f"{lm.identity.name!r} ({lm.kind.value}) with --qa-mode generative"
        )
    else:
        lm.require("generate")
    return settings.model_copy(update={"mode": mode, **generative_layout(settings)})


def generative_layout(settings) -> dict:
    """A generative model reads the UnifiedQA layout: the extractive span adjustment and input
    order do not apply (a warning says so when they were asked for)."""
    if settings.span_adjustment != "none" or settings.qa_order != "question-first":
        warnings.warn(
            "the span adjustment and the extractive input order apply to extractive QA models; "
            f"{settings.model} is scored generatively (UnifiedQA layout) without them",
            stacklevel=3,
        )
    return {"span_adjustment": "none", "qa_order": "question-first"}


def run(ctx: RunContext, settings: LeiEvalSettings) -> MethodOutput:
    """Score every set, compute μ per set next to the desired μ, and the QA utility."""
    needs_release = settings.split_file is None or (
        settings.domain == "gender"
        and settings.specified_sentences is None
        and settings.specified_file is None
    )
    lei_dir = sources.locate("lei", ctx.data_dir) if needs_release else None
    rows, specified_absent = build_rows(
        settings, lei_dir, settings.split_file, settings.specified_sentences
    )
    if settings.limit or settings.per_cell:
        per_set = ", ".join(
            f"{n} {name}" for name, n in rows.groupby("set", sort=False).size().items()
        )
        how = (
            f"--limit {settings.limit}: context pairs drawn per set, stratified"
            if settings.limit
            else f"--per-cell {settings.per_cell}: context pairs drawn until every (subject, "
            f"attribute) cell of each set holds {settings.per_cell} subject pair × template units"
        )
        note(
            ctx.progress,
            f"{how} → {len(rows):,} contexts ({per_set}), each asked with its question and its "
            "negation",
        )
    qa = read_squad(settings.qa_file) if settings.qa_file is not None else None
    if qa is not None and settings.qa_limit is not None:
        qa = qa.head(settings.qa_limit)
    scored = score_questions(ctx, rows, settings)
    scores, notes = scored.scores, list(scored.notes)
    comparative = comparative_scores(scores, PAIRING)
    subjects_are = DOMAINS[settings.domain].subjects_are(settings.subjects_are)
    intervals = (
        IntervalSpec(settings.ci_level, settings.seed, subjects_are) if settings.bootstrap else None
    )
    strata = subject_strata(scores)
    scoring = scoring_label(settings.mode, settings.samples, settings.allocation)
    table = lei_table(scores, comparative, intervals, strata)
    table.insert(1, "scoring", scoring)
    changes = change_table(scores, intervals, strata)
    changes.insert(1, "scoring", scoring)
    subjects = subject_bias(comparative, ("set",))
    tables = {"lei_mu": table, "subjects": subjects, "lei_change": changes}
    metrics = {}
    if settings.split_file is None:  # an official split: its stored scores are the base model's
        gap = reference.protocol_gap(settings.model_dump())
        known, why_not = reference.reference_table(scores, intervals, strata, gap)
        if known is not None:
            tables["lei_reference"] = known
            metrics["reference"] = reference.summary(known, gap)
        else:
            notes.append(f"LEI's base model is not beside this run: {why_not}")
    samples = {"samples": scores}
    if scored.left_out is not None:
        samples["unscored_questions"] = scored.left_out
    utility = None
    if qa is not None:
        answered = qa_utility(ctx.lm, qa, ctx.progress, settings.qa_order == "context-first")
        utility = squad_scores(list(answered["prediction"]), list(answered["answers"]))
        samples["qa_predictions"] = answered
        notes.append(
            f"QA utility: EM {utility['exact_match']:.1f}, F1 {utility['f1']:.1f} "
            f"({utility['questions']} questions)"
        )
    if specified_absent:
        notes.append(f"specified contexts: {specified_absent}")
    notes += sorted({c for c in table.get("caution", ()) if c})
    if intervals is not None:
        notes.append(subjects_note(subjects_are))
    title = f"{ctx.lm.identity.name}, {settings.domain} {settings.split} ({settings.mode})"
    return MethodOutput(
        metrics={
            "sets": {row.pop("set"): row for row in json_records(table)},
            "contexts": {s: int(n) for s, n in table.set_index("set")["contexts"].items()},
            "qa_utility": utility,
            "specified_absent": specified_absent or None,
            **({"first_token": scored.metrics} if scored.metrics is not None else {}),
            **metrics,
        },
        tables=tables,
        samples=samples,
        figures={"lei_mu": lei_mu_figure(table, title)},
        provenance={
            "dataset": {
                "name": "lei",
                "sha256": dataset_hash(rows[["set", "context", "question", "negated_question"]]),
            }
        },
        notes=notes,
    )


def run_name(settings: LeiEvalSettings) -> str:
    """``MODEL-DOMAIN``; first-token runs say so (their μ is not the paper's)."""
    name = f"{safe_name(settings.model)}-{settings.domain}"
    return f"{name}-{settings.mode}" if settings.mode in ("first-token", "sampled") else name


SPEC = register(
    MethodSpec(
        audit=AUDIT,
        outputs=QA_FILES_LEI_EVAL,
        name=METHOD,
        lm_eval=LmEvalTask(
            "biaslens.methods.qa.lei_eval.lm_eval_task:lei_task",
            options=options_of(LeiEvalSettings, fields=("domain",)),
        ),
        title="Zero-shot LEI: μ without and under ethical / adversarial / irrelevant "
        "interventions and on specified contexts, next to the desired μ (Fig. 4)",
        settings=LeiEvalSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        run_name=run_name,
        reads_data=True,
        headlines=(
            Headline(
                "lei_mu",
                "LEI μ per set vs desired μ",
                view=mu_view,
                measures=UNQOVER_MEASURES,
                labels=("set", "scoring"),
                legend={
                    "desired μ": "what μ should be after the intervention: 0 ethical, 1 "
                    "adversarial, the no-intervention μ irrelevant (LEI Section 3)",
                    "win rate": "on specified contexts, how often the subject the context names "
                    "is scored higher",
                },
            ),
            Headline(
                "lei_change",
                "LEI: μ's change under each intervention, paired over the same contexts",
                view=change_view,
                measures=(MU_CHANGE,),
                labels=("set", "scoring"),
                legend={
                    "μ, no intervention": "μ with the intervention removed, over the set's "
                    "own contexts",
                    "change of μ": "μ − μ with no intervention, with its paired interval "
                    "(−1 to 1; 0: the intervention leaves μ as it was)",
                },
            ),
            Headline("subjects", "Subjects: max |γ|", cli=False),
        ),
        presets={
            "paper": {
                # UnQover's span adjustment is an extractive rule (the UnifiedQA layout has none)
                "span_adjustment": ByModel(
                    lambda kind, values: "reference" if kind == ModelKind.EXTRACTIVE_QA else UNSET
                ),
                "qa_order": "question-first",
            }
        },
    )
)
