"""Zero-shot LEI evaluation (Zhao et al., 2021, Section 2.3 and Fig. 4).

For one model and domain: μ and η (UnQover, Li et al. 2020 Section 4.3) with no intervention and
under ethical, adversarial and irrelevant interventions (an official SQuAD-format LEI split), and
on specified contexts (Q_N), next to the desired value of each: 0, 1, unchanged, 1. The
no-intervention set is the split's own contexts with the intervention removed. Specified
contexts: the public gender sample file for gender, or ``attribute<TAB>sentence`` sentences for
any domain. Optional QA utility: EM/F1 on a SQuAD-format file.

``limit`` keeps about that many context pairs (the two subject orders of a key stay together),
stratified by intervention type and category so every type and category stays represented.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from biaslens.data import lei, sources
from biaslens.data.squad import read_squad
from biaslens.errors import BiaslensError
from biaslens.experiments.qa_scoring import qa_mode_for, score_examples, unifiedqa_prompt
from biaslens.experiments.settings import validated
from biaslens.metrics.qa import squad_scores
from biaslens.metrics.unqover import comparative_scores, model_summary, subject_bias
from biaslens.models.base import LM, ModelKind
from biaslens.models.hf import BackendConfig
from biaslens.models.registry import load_model, resolve_name
from biaslens.models.requests import AnswerSpanRequest, GenerateRequest
from biaslens.progress import NoProgress, Progress
from biaslens.store.cache import CachedLM
from biaslens.store.run import RunStore, dataset_hash, json_records

METHOD = "lei-eval"
SETS = ("none", "ethical", "adversarial", "irrelevant", "specified")
DOMAINS = ("religion", "ethnicity", "gender")
PAIRING = ("set", "intervention_id")
"""Keys that tell contexts apart: the set (reported) and the intervention (averaged over)."""


class LeiEvalSettings(BaseModel):
    """Settings that decide a zero-shot LEI run's results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "default"
    domain: Literal["religion", "ethnicity", "gender"] = "religion"
    split: str = "noniid_test"
    split_sha256: str = ""
    mode: Literal["auto", "extractive", "generative"] = "auto"
    head_words: bool = False
    limit: int | None = Field(default=None, ge=1, description="context pairs, stratified")
    seed: int = 0
    specified_sha256: str = ""
    qa_sha256: str = ""
    qa_limit: int | None = Field(default=None, ge=1)


def make_lei_eval_settings(
    split_file: Path | None = None,
    specified_sentences: Path | None = None,
    qa_file: Path | None = None,
    **values,
) -> LeiEvalSettings:
    domain = values.get("domain", "religion")
    if domain not in DOMAINS:
        raise BiaslensError(f"unknown domain {domain!r}; LEI has {', '.join(DOMAINS)}")
    split = values.get("split", "noniid_test")
    if split_file is None and f"{domain}/{split}" not in lei.SPLITS:
        known = [k.split("/")[1] for k in lei.SPLITS if k.startswith(domain + "/")]
        raise BiaslensError(f"no LEI split {split!r} for {domain}; known: {', '.join(known)}")
    hashes = {}
    for name, path in (("split", split_file), ("specified", specified_sentences), ("qa", qa_file)):
        if path is not None:
            if not Path(path).is_file():
                raise BiaslensError(f"{path}: file not found")
            hashes[f"{name}_sha256"] = sources.sha256_file(Path(path))
    if split_file is not None:
        values["split"] = Path(split_file).name
    return validated(LeiEvalSettings, {**values, **hashes})


def _pair_key(table: pd.DataFrame) -> pd.Series:
    low = np.where(table["first"] < table["second"], table["first"], table["second"])
    high = np.where(table["first"] < table["second"], table["second"], table["first"])
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
    if settings.limit is not None:
        split = lei.stratified_keys(
            split, settings.limit, ("intervention_type", "category"), "pair_key", settings.seed
        )
    parts = [lei.without_interventions(split), split]
    absent = ""
    if specified_sentences is not None:
        sentences = lei.read_specifying_sentences(specified_sentences)
        parts.append(lei.specify(lei.without_interventions(split), sentences))
    elif settings.domain == "gender":
        specified = lei.read_specified(lei_dir / "data" / lei.SPECIFIED_SAMPLE)
        specified["pair_key"] = _pair_key(specified)
        if settings.limit is not None:
            specified = lei.stratified_keys(
                specified, settings.limit, ("template",), "pair_key", settings.seed
            )
        parts.append(specified)
    else:
        absent = (
            f"no specified-context data for {settings.domain} in the public LEI release; "
            "pass specifying sentences (attribute<TAB>sentence with [subj])"
        )
    rows = pd.concat(parts, ignore_index=True)
    rows["set"] = rows["intervention_type"]
    rows["intervention"] = rows["intervention"].fillna("")
    return rows.drop(columns=["pair_key"], errors="ignore"), absent


def lei_table(scores: pd.DataFrame, comparative: pd.DataFrame | None = None) -> pd.DataFrame:
    """μ, η, θ4, δ, ε per set with the desired μ and the specified win rate (``comparative``:
    ``comparative_scores(scores, PAIRING)`` when the caller has it)."""
    table = model_summary(scores, by=("set",), within=("intervention_id",), comparative=comparative)
    order = {name: i for i, name in enumerate(SETS)}
    table = table.sort_values("set", key=lambda s: s.map(order)).reset_index(drop=True)
    none_mu = table.loc[table["set"] == "none", "mu"]
    desired = {**lei.DESIRED_MU, "irrelevant": float(none_mu.iloc[0]) if len(none_mu) else None}
    table["desired_mu"] = table["set"].map(desired)
    table["gap"] = (table["mu"] - table["desired_mu"]).abs()
    if "specified" in scores and scores["set"].eq("specified").any():
        spec = scores[(scores["set"] == "specified") & ~scores["negated"].astype(bool)]
        first_named = (spec["specified"] == spec["first"]).to_numpy()
        named = np.where(first_named, spec["s_first"], spec["s_second"])
        other = np.where(first_named, spec["s_second"], spec["s_first"])
        table.loc[table["set"] == "specified", "specified_win_rate"] = float(np.mean(named > other))
    return table


def qa_utility(lm: LM, qa: pd.DataFrame, progress: Progress) -> pd.DataFrame:
    """The model's answers to SQuAD-format questions (best span, or a greedy answer)."""
    if lm.kind == ModelKind.EXTRACTIVE_QA:
        requests = [
            AnswerSpanRequest(q, c) for q, c in zip(qa["question"], qa["context"], strict=True)
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


@dataclass
class LeiEvalResult:
    run_dir: Path
    table: pd.DataFrame
    summary: dict
    plot: Path
    cache_stats: dict[str, int]


def run_lei_eval(
    settings: LeiEvalSettings,
    output: Path | str,
    backend: BackendConfig | None = None,
    progress: Progress | None = None,
    lm: LM | None = None,
    data_dir: Path | None = None,
    split_file: Path | None = None,
    specified_sentences: Path | None = None,
    qa_file: Path | None = None,
) -> LeiEvalResult:
    """Score every set, write the run directory (resumes from its request cache)."""
    import matplotlib.pyplot as plt

    from biaslens.report.lei_plots import lei_mu_figure

    progress = progress or NoProgress()
    needs_release = split_file is None or (
        settings.domain == "gender" and specified_sentences is None
    )
    lei_dir = sources.locate("lei", data_dir) if needs_release else None
    rows, specified_absent = build_rows(settings, lei_dir, split_file, specified_sentences)
    qa = read_squad(qa_file) if qa_file is not None else None
    if qa is not None and settings.qa_limit is not None:
        qa = qa.head(settings.qa_limit)
    lm = lm or load_model(settings.model, backend or BackendConfig())
    mode = qa_mode_for(lm) if settings.mode == "auto" else settings.mode
    resolved = settings.model_copy(update={"model": resolve_name(settings.model), "mode": mode})
    store = RunStore(output, METHOD, resolved.model_dump(mode="json"), {})
    try:
        cached = CachedLM(lm, store.cache)
        scores = score_examples(cached, rows, progress, mode, settings.head_words)
        comparative = comparative_scores(scores, PAIRING)
        table = lei_table(scores, comparative)
        subjects = subject_bias(comparative, ("set",))
        store.write_samples(scores)
        store.write_table("lei_mu", table)
        store.write_table("subjects", subjects)
        utility = None
        if qa is not None:
            answered = qa_utility(cached, qa, progress)
            utility = squad_scores(list(answered["prediction"]), list(answered["answers"]))
            store.write_samples(answered, name="qa_predictions")
        title = f"{lm.identity.name}, {settings.domain} {settings.split} ({mode})"
        figure = lei_mu_figure(table, title)
        plot = store.write_plot("lei_mu", figure)
        plt.close(figure)
        summary = store.write_summary(
            {
                "sets": {row.pop("set"): row for row in json_records(table)},
                "contexts": {s: int(n) for s, n in table.set_index("set")["contexts"].items()},
                "qa_utility": utility,
                "specified_absent": specified_absent or None,
            },
            model=lm.identity.describe(),
            dataset_sha256=dataset_hash(rows[["set", "context", "question", "negated_question"]]),
        )
        return LeiEvalResult(store.root, table, summary, plot, dict(cached.stats))
    finally:
        store.close()
