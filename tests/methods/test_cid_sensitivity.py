"""λ* study end to end on a tiny model with a stub similarity, and its pieces."""

from __future__ import annotations

import difflib
import math

import numpy as np
import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid.metrics.cid import lambda_star
from biaslens.methods.cid.sensitivity import (
    build_perturbation_pairs,
    make_settings,
    pair_similarities,
)
from tests.helpers import run_sensitivity


def text_similarity(a: list[str], b: list[str]) -> np.ndarray:
    return np.array(
        [difflib.SequenceMatcher(None, x, y).ratio() for x, y in zip(a, b, strict=True)]
    )


def test_pairs_cover_every_type_with_seeded_variants():
    settings = make_settings(variants=2, seed=3)
    pairs = build_perturbation_pairs(settings)
    counts = pairs["type"].value_counts()
    assert counts["gender"] == 12 and counts["letter duplication"] == 24
    assert counts["semantic subtle"] == counts["semantic significant"] == 12
    assert (pairs["x"] != pairs["x_prime"]).all()
    assert build_perturbation_pairs(settings).equals(pairs)
    other = build_perturbation_pairs(make_settings(variants=2, seed=4))
    assert not other.equals(pairs)


def test_similarities_from_continuations_with_known_crossings():
    # Continuations "c<λ>": the stub similarity reads λ back and crosses τ at known points.
    rows = []
    for pair, crossing in {0: 2.0, 1: math.inf}.items():
        for lam in (0.0, 1.0, 5.0, 10.0):
            for direction, text in (("forward", "x"), ("backward", "y")):
                rows.append((pair, lam, direction, text, f"{crossing}|{lam}"))
    decoded = pd.DataFrame(rows, columns=["pair", "lam", "direction", "input", "continuation"])

    def stub(a, b):
        values = []
        for text in a:
            crossing, lam = (float(v) for v in text.split(" ", 1)[1].split("|"))
            values.append(0.5 if lam > crossing else 0.95)
        return np.array(values)

    scored = pair_similarities(decoded, stub)
    assert scored["text_x"].iloc[0].startswith("x ") and scored["text_x_prime"].iloc[0][0] == "y"
    assert lambda_star(scored, 0.85).to_dict() == {0: 5.0, 1: math.inf}


def test_sensitivity_run_on_a_tiny_model(tiny_backends, tmp_path):
    settings = make_settings(
        model="tiny", variants=1, types=("gender", "spelling", "semantic significant"),
        lams=(0.0, 5.0, 50.0), max_new_tokens=5, similarity=text_similarity,
    )  # fmt: skip
    result = run_sensitivity(settings, tmp_path / "run", lm=tiny_backends["llama"])
    assert set(result.lambda_star["type"]) == {"gender", "spelling", "semantic significant"}
    samples = pd.read_parquet(tmp_path / "run" / "samples.parquet")
    assert len(samples) == len(result.lambda_star) * 3
    recomputed = lambda_star(samples, settings.tau)
    assert recomputed.to_dict() == result.lambda_star.set_index("pair")["lambda_star"].to_dict()
    assert np.allclose(
        samples["similarity"], text_similarity(list(samples.text_x), list(samples.text_x_prime))
    )
    assert result.similarity_vs_lambda["lam"].tolist() == [0.0, 5.0, 50.0]
    assert all(p.exists() for p in result.plots)
    assert result.summary["metrics"]["num_pairs"] == len(result.lambda_star)
    again = run_sensitivity(settings, tmp_path / "run", lm=tiny_backends["llama"])
    assert again.cache_stats["computed"] == 0


def test_bad_sensitivity_settings():
    with pytest.raises(BiaslensError, match="unknown perturbation type"):
        make_settings(types=("typos",))
    with pytest.raises(BiaslensError, match="invalid tau"):
        make_settings(tau=1.5)
    with pytest.raises(BiaslensError, match="λ must be >= 0"):
        make_settings(lams=(-5.0,))
