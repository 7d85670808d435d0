"""CID perturbation-effect study: λ* per perturbation type (CID paper Section 5, Appendix D).

Source prompts are perturbed by each rule-based family (letter duplication, punctuation,
synonym, gender, spelling; seeded) and by the hand-written semantic pairs (subtle,
significant). For every pair (x, x') and every λ of the grid, both CID(x; x', λ) and
CID(x'; x, λ) are decoded in one batched pass; sim = cosine similarity of the sentence
embeddings of x + CID(x; x', λ) and x' + CID(x'; x, λ) (all-MiniLM-L6-v2 by default), and
λ* = the smallest λ with sim < τ (∞ if none). Outputs the λ* distribution per type sorted by
median (Fig. 4) and the mean similarity vs λ with a monotonicity check (Fig. 9).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field

from biaslens.common.numbers import readable_interval
from biaslens.common.options import FLAG, Flag
from biaslens.data.sources import PACKAGE_FILES
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole, AuditStep
from biaslens.framework.options import filled
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.framework.settings import (
    CiLevel,
    MethodSettings,
    ModelName,
    RandomSeed,
    Replicates,
    file_sha256,
    validated,
)
from biaslens.methods.cid.data import perturbations as P
from biaslens.methods.cid.metrics.cid import (
    DEFAULT_TAU,
    LAMBDA_STAR,
    lambda_star,
    lambda_star_summary,
    similarity_trend,
)
from biaslens.methods.cid.outputs import SENSITIVITY as CID_FILES_SENSITIVITY
from biaslens.methods.cid.paired import paired_lambda_star
from biaslens.methods.cid.scoring.contrastive import DecodingSettings, decode_both_directions
from biaslens.models.base import LM
from biaslens.models.embeddings import cosine_similarity, load_sentence_encoder
from biaslens.models.options import offline_of
from biaslens.store.run import dataset_hash

METHOD = "cid-sensitivity"
DEFAULT_LAMS = (0.0, 1.0, 5.0, 10.0, 50.0)
Similarity = Callable[[list[str], list[str]], np.ndarray]


class SensitivitySettings(MethodSettings):
    """Settings that decide a λ* study's results. Input files are recorded by their sha256;
    ``similarity`` (a function of two text lists) replaces the sentence encoder, e.g. in
    tests, and is not recorded."""

    model: ModelName = "default"
    encoder: Annotated[str, FLAG] = Field(
        default="all-minilm-l6-v2", description="Sentence encoder."
    )
    tau: Annotated[float, FLAG] = Field(
        default=DEFAULT_TAU, gt=0, le=1, description="Similarity threshold τ."
    )
    variants: Annotated[int, FLAG] = Field(
        default=2, ge=1, le=100, description="Perturbed variants per sentence and rule family."
    )
    seed: RandomSeed = 0
    ci_level: CiLevel
    bootstrap: Replicates = Field(
        default=1000,
        description="0: no interval for the median λ*; any other value keeps it (a "
        "distribution-free order-statistic interval, not resampled).",
    )
    types: Annotated[tuple[str, ...], Flag("--type", shown="all seven")] = Field(
        default=(*P.PERTURBATIONS, *P.SEMANTIC_TYPES),
        description="Perturbation type(s) to include.",
    )
    sentences_sha256: str = ""
    semantic_sha256: str = ""
    decoding: Annotated[
        DecodingSettings, Flag(nested="fill", skip=("stop",), helps={"lams": "The λ grid for λ*."})
    ] = DecodingSettings(lams=DEFAULT_LAMS)
    sentences_file: Annotated[Path | None, Flag("--sentences")] = Field(
        default=None, exclude=True, description="Source prompts, one a line."
    )
    semantic_file: Annotated[Path | None, Flag("--semantic-pairs")] = Field(
        default=None, exclude=True, description="TSV type/original/perturbed of semantic edits."
    )
    similarity: Callable | None = Field(default=None, exclude=True)


def _file_hash(path: Path | None, default: str, what: str) -> str:
    return file_sha256(Path(path) if path is not None else PACKAGE_FILES / default, what)


def make_settings(**values) -> SensitivitySettings:
    """Settings from what the user gives (the defaults are the fields'): the input files are
    recorded by their sha256, the decoding options fill the decoding settings."""
    known = (*P.PERTURBATIONS, *P.SEMANTIC_TYPES)
    for kind in values.get("types") or ():
        if kind not in known:
            raise BiaslensError(f"unknown perturbation type {kind!r}; known: {', '.join(known)}")
    sentences_file, semantic_file = values.get("sentences_file"), values.get("semantic_file")
    return validated(
        SensitivitySettings,
        {
            **filled(SensitivitySettings, values),
            "sentences_sha256": _file_hash(sentences_file, "cid_sentences.txt", "sentences file"),
            "semantic_sha256": _file_hash(
                semantic_file, "cid_semantic_pairs.tsv", "semantic pairs file"
            ),
        },
    )


def build_perturbation_pairs(
    settings: SensitivitySettings,
    sentences_file: Path | None = None,
    semantic_file: Path | None = None,
) -> pd.DataFrame:
    """(type, x, x') rows: rule families on every source sentence, plus the semantic pairs."""
    sentences = P.load_sentences(sentences_file)
    rng = np.random.default_rng(settings.seed)
    rows = []
    for kind in settings.types:
        if kind in P.SEMANTIC_TYPES:
            continue
        function = P.PERTURBATIONS[kind]
        count = 1 if kind in P.DETERMINISTIC else settings.variants
        for sentence in sentences:
            try:
                perturbed = P.variants(sentence, function, rng, count)
            except P.NotApplicable:
                continue
            rows += [(kind, sentence, p) for p in perturbed]
    semantic = P.load_semantic_pairs(semantic_file)
    semantic = semantic[semantic["type"].isin(settings.types)]
    rows += list(semantic.itertuples(index=False, name=None))
    if not rows:
        raise BiaslensError("no perturbation pairs: check --type and the input files")
    pairs = pd.DataFrame(rows, columns=["type", "x", "x_prime"]).drop_duplicates()
    return pairs.reset_index(drop=True).reset_index(names="pair")


def minilm_similarity(name: str = "all-minilm-l6-v2") -> Similarity:
    encoder = load_sentence_encoder(name)
    return lambda a, b: cosine_similarity(encoder, a, b)


def pair_similarities(decoded: pd.DataFrame, similarity: Similarity) -> pd.DataFrame:
    """One row per (pair, λ): both contrastive texts and their similarity."""
    decoded = decoded.assign(text=decoded["input"] + " " + decoded["continuation"])
    wide = decoded.pivot(index=["pair", "lam"], columns="direction", values="text").reset_index()
    wide = wide.rename(columns={"forward": "text_x", "backward": "text_x_prime"})
    wide["similarity"] = np.asarray(
        similarity(list(wide["text_x"]), list(wide["text_x_prime"])), dtype=float
    )
    return wide


def prepare(settings: SensitivitySettings, lm: LM) -> SensitivitySettings:
    lm.require("contrastive_generate")
    return settings


def run(ctx: RunContext, settings: SensitivitySettings) -> MethodOutput:
    """Decode the whole λ grid for all pairs in one batched pass, then compute λ*."""
    from biaslens.methods.cid.plots import lambda_star_boxplot, similarity_curve

    pairs = build_perturbation_pairs(settings, settings.sentences_file, settings.semantic_file)
    offline = bool(ctx.backend_config and offline_of(ctx.backend_config.options))
    encoder = {"name": "custom"}
    if settings.similarity is None:
        from biaslens.models.embeddings import encoder_checkpoint, encoder_source

        checkpoint = encoder_checkpoint(settings.encoder, offline)
        folder = checkpoint.folder(offline)
        encoder = encoder_source(checkpoint, folder)
        similarity = minilm_similarity(str(folder))
    else:
        similarity = settings.similarity
    decoded = decode_both_directions(
        ctx.lm, pairs, settings.decoding, ctx.progress, "CID sensitivity"
    )
    scored = pair_similarities(decoded, similarity).merge(pairs, on="pair")
    stars = lambda_star(scored, settings.tau).reset_index()
    per_pair = pairs.merge(stars, on="pair")
    table = lambda_star_summary(per_pair, level=settings.ci_level if settings.bootstrap else None)
    curve, check = similarity_trend(scored)
    by_type = [similarity_trend(part)[1] | {"type": k} for k, part in scored.groupby("type")]
    title = f"{ctx.lm.identity.name}: CID perturbation effect"
    lams = list(settings.decoding.lams)
    trend = ", ".join(f"λ={r.lam:g}: {r.mean:.3f}" for r in curve.itertuples())
    verdict = "non-increasing" if check["non_increasing"] else f"rises at {check['violations']}"
    return MethodOutput(
        metrics={
            "lambda_star": table.replace(np.inf, None).to_dict(orient="records"),
            "similarity_vs_lambda": curve.to_dict(orient="records"),
            "monotonicity": check,
            "monotonicity_by_type": by_type,
            "num_pairs": len(pairs),
        },
        tables={
            "lambda_star": per_pair,
            "lambda_star_summary": table,
            "similarity_vs_lambda": curve,
        },
        samples={"continuations": decoded, "samples": scored},
        figures={
            "lambda_star": lambda_star_boxplot(
                per_pair, list(table["type"]), lams, settings.tau, title
            ),
            "similarity_vs_lambda": similarity_curve(curve, settings.tau, title),
        },
        provenance={
            "encoder": encoder["name"],
            **({"encoder_source": encoder} if len(encoder) > 1 else {}),
            "dataset": {"name": "cid-perturbations", "sha256": dataset_hash(pairs)},
        },
        notes=[
            f"mean similarity: {trend}",
            f"monotonicity: {verdict} (Spearman ρ = {check['spearman_rho']:+.2f})",
        ],
    )


def _summary_view(table: pd.DataFrame) -> pd.DataFrame:
    """λ* per type: median with its interval (or why there is none), quartiles, pairs."""
    view = table[["type", "n", "median", "q25", "q75", "n_never"]].copy()
    if "median_ci_low" in table:
        view.insert(
            3,
            "interval",
            [
                readable_interval(lo, hi) if note is None or note != note else f"none: {note}"
                for lo, hi, note in zip(
                    table["median_ci_low"],
                    table["median_ci_high"],
                    table["median_ci_note"],
                    strict=True,
                )
            ],
        )
    return view.rename(columns={"n": "pairs", "median": "median λ*", "n_never": "never < τ"})


SPEC = register(
    MethodSpec(
        audit=AuditRole(
            sizes={"standard": (AuditStep(),), "paper": (AuditStep(preset="paper"),)},
            left_out={
                "quick": "λ* measures sensitivity to perturbations, not bias: --size "
                "standard runs it"
            },
            paired=paired_lambda_star,
        ),
        outputs=CID_FILES_SENSITIVITY,
        name=METHOD,
        title="CID perturbation effect (Section 5): λ* per perturbation type",
        settings=SensitivitySettings,
        body=run,
        make_settings=make_settings,
        # Section 5 fixes only τ = 0.85 (the default); its λ grid is not stated.
        presets={"paper": {}},
        prepare=prepare,
        description=(
            "The smallest λ at which the two contrastive texts' similarity drops below τ; box "
            "plot (Fig. 4) and similarity vs λ (Fig. 9)."
        ),
        headlines=(
            Headline(
                "lambda_star_summary",
                "λ* per perturbation type (sorted by median)",
                view=_summary_view,
                measures=(LAMBDA_STAR,),
                labels=("type",),
                legend={
                    "pairs": "sentence pairs (original, perturbed) of the type",
                    "never < τ": "pairs whose continuations stay similar (sim ≥ τ) at every λ "
                    "of the grid: λ* beyond it",
                },
            ),
            Headline("lambda_star", "λ* per pair", cli=False),
        ),
    )
)
