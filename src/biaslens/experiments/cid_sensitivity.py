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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from biaslens.data import perturbations as P
from biaslens.data import sources
from biaslens.data.sources import PACKAGE_FILES
from biaslens.errors import BiaslensError
from biaslens.experiments.cid_common import DecodingSettings, decode_both_directions
from biaslens.experiments.settings import validated
from biaslens.metrics.cid import DEFAULT_TAU, lambda_star, lambda_star_summary, similarity_trend
from biaslens.models.base import LM
from biaslens.models.hf import BackendConfig
from biaslens.models.registry import load_model, resolve_name
from biaslens.progress import NoProgress, Progress
from biaslens.store.cache import CachedLM
from biaslens.store.run import RunStore, dataset_hash

METHOD = "cid-sensitivity"
DEFAULT_LAMS = (0.0, 1.0, 5.0, 10.0, 50.0)
Similarity = Callable[[list[str], list[str]], np.ndarray]


class SensitivitySettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "default"
    encoder: str = "all-minilm-l6-v2"
    tau: float = Field(default=DEFAULT_TAU, gt=0, le=1)
    variants: int = Field(default=2, ge=1, description="variants per sentence and rule family")
    seed: int = 0
    types: tuple[str, ...] = (*P.PERTURBATIONS, *P.SEMANTIC_TYPES)
    sentences_sha256: str = ""
    semantic_sha256: str = ""
    decoding: DecodingSettings = DecodingSettings(lams=DEFAULT_LAMS)


def _file_hash(path: Path | None, default: str) -> str:
    source = Path(path) if path is not None else PACKAGE_FILES / default
    try:
        return sources.sha256_file(source)
    except FileNotFoundError:
        raise BiaslensError(f"{source}: file not found") from None


def make_sensitivity_settings(
    model: str = "default",
    encoder: str = "all-minilm-l6-v2",
    tau: float = DEFAULT_TAU,
    variants: int = 2,
    seed: int = 0,
    types: tuple[str, ...] | None = None,
    sentences_file: Path | None = None,
    semantic_file: Path | None = None,
    **decoding,
) -> SensitivitySettings:
    known = (*P.PERTURBATIONS, *P.SEMANTIC_TYPES)
    for kind in types or ():
        if kind not in known:
            raise BiaslensError(f"unknown perturbation type {kind!r}; known: {', '.join(known)}")
    decoding.setdefault("lams", DEFAULT_LAMS)
    return validated(
        SensitivitySettings,
        {
            "model": model,
            "encoder": encoder,
            "tau": tau,
            "variants": variants,
            "seed": seed,
            "types": tuple(types) if types else known,
            "sentences_sha256": _file_hash(sentences_file, "cid_sentences.txt"),
            "semantic_sha256": _file_hash(semantic_file, "cid_semantic_pairs.tsv"),
            "decoding": validated(DecodingSettings, decoding),
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
    from biaslens.models.embeddings import cosine_similarity, load_sentence_encoder

    encoder = load_sentence_encoder(name)
    return lambda a, b: cosine_similarity(encoder, a, b)


@dataclass
class SensitivityResult:
    run_dir: Path
    per_pair: pd.DataFrame
    summary_table: pd.DataFrame
    curve: pd.DataFrame
    monotonicity: dict
    summary: dict
    plots: list[Path]
    cache_stats: dict


def pair_similarities(decoded: pd.DataFrame, similarity: Similarity) -> pd.DataFrame:
    """One row per (pair, λ): both contrastive texts and their similarity."""
    decoded = decoded.assign(text=decoded["input"] + " " + decoded["continuation"])
    wide = decoded.pivot(index=["pair", "lam"], columns="direction", values="text").reset_index()
    wide = wide.rename(columns={"forward": "text_x", "backward": "text_x_prime"})
    wide["similarity"] = np.asarray(
        similarity(list(wide["text_x"]), list(wide["text_x_prime"])), dtype=float
    )
    return wide


def run_sensitivity(
    settings: SensitivitySettings,
    output: Path | str,
    backend: BackendConfig | None = None,
    progress: Progress | None = None,
    lm: LM | None = None,
    similarity: Similarity | None = None,
    sentences_file: Path | None = None,
    semantic_file: Path | None = None,
) -> SensitivityResult:
    """Decode the whole λ grid for all pairs in one batched pass, then compute λ*."""
    import matplotlib.pyplot as plt

    from biaslens.report.cid_plots import lambda_star_boxplot, similarity_curve

    progress = progress or NoProgress()
    pairs = build_perturbation_pairs(settings, sentences_file, semantic_file)
    lm = lm or load_model(settings.model, backend or BackendConfig())
    lm.require("contrastive_generate")
    similarity = similarity or minilm_similarity(settings.encoder)
    resolved = settings.model_copy(update={"model": resolve_name(settings.model)})
    store = RunStore(output, METHOD, resolved.model_dump(mode="json"), {})
    try:
        cached = CachedLM(lm, store.cache)
        decoded = decode_both_directions(
            cached, pairs, settings.decoding, progress, "CID sensitivity"
        )
        scored = pair_similarities(decoded, similarity).merge(pairs, on="pair")
        stars = lambda_star(scored, settings.tau).reset_index()
        per_pair = pairs.merge(stars, on="pair")
        table = lambda_star_summary(per_pair)
        curve, check = similarity_trend(scored)
        by_type = [similarity_trend(part)[1] | {"type": k} for k, part in scored.groupby("type")]
        title = f"{lm.identity.name}: CID perturbation effect"
        plots = []
        for name, figure in (
            (
                "lambda_star",
                lambda_star_boxplot(
                    per_pair, list(table["type"]), list(settings.decoding.lams), settings.tau, title
                ),
            ),
            ("similarity_vs_lambda", similarity_curve(curve, settings.tau, title)),
        ):
            plots.append(store.write_plot(name, figure))
            plt.close(figure)
        store.write_samples(decoded, name="continuations")
        store.write_samples(scored)
        store.write_table("lambda_star", per_pair)
        store.write_table("lambda_star_summary", table)
        store.write_table("similarity_vs_lambda", curve)
        summary = store.write_summary(
            {
                "lambda_star": table.replace(np.inf, None).to_dict(orient="records"),
                "similarity_vs_lambda": curve.to_dict(orient="records"),
                "monotonicity": check,
                "monotonicity_by_type": by_type,
                "num_pairs": len(pairs),
            },
            model=lm.identity.describe(),
            encoder=settings.encoder,
            dataset={"name": "cid-perturbations", "sha256": dataset_hash(pairs)},
            requests=dict(cached.stats),
        )
        return SensitivityResult(
            Path(output), per_pair, table, curve, check, summary, plots, dict(cached.stats)
        )
    finally:
        store.close()
