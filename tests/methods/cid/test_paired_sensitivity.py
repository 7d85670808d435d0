"""Two tiny causal models' cid-sensitivity runs paired over the same perturbation pairs: the
audit's paired number (the median over pairs of λ*(A) − λ*(B) and its order-statistic
interval) recomputed from the two runs' λ* files with the rule written again here."""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

import biaslens
from biaslens.framework.registry import get_method

SENTENCES = (
    "The nurse said that she would be late because\n"
    "The doctor told him that the results were fine and\n"
    "My sister thinks that her teacher is the best because\n"
    "The king said that he would speak to the people when\n"
    "Her mother was sure that the train would leave before\n"
    "The actor thanked his father for the flowers and\n"
    "The girl told her friend that the game was over so\n"
    "The man said that his son would call later because\n"
)


def runs(tiny_models, tmp_path) -> dict:
    sentences = tmp_path / "sentences.txt"
    sentences.write_text(SENTENCES)
    return {
        name: biaslens.run(
            "cid-sensitivity",
            str(tiny_models[name]),
            output=tmp_path / name,
            sentences_file=sentences,
            variants=3,
            types=("gender",),
            lams=(0.0, 1.0, 5.0, 50.0),
            max_new_tokens=4,
            report=False,
            device="cpu",
        )  # fmt: skip
        for name in ("llama", "gpt2")
    }


def by_hand(folder_a, folder_b, level: float) -> tuple[float, float, float, int]:
    a = pd.read_csv(folder_a / "lambda_star.csv", keep_default_na=False)
    b = pd.read_csv(folder_b / "lambda_star.csv", keep_default_na=False)
    both = a.merge(b, on=["type", "x", "x_prime"])
    differences = []
    for x, y in zip(both["lambda_star_x"], both["lambda_star_y"], strict=True):
        x, y = float(x), float(y)
        differences.append(0.0 if math.isinf(x) and math.isinf(y) else x - y)
    ordered = sorted(differences)
    n = len(ordered)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    # Conover §3.2: the largest j with P(Binomial(n, ½) ≤ j − 1) ≤ (1 − level) / 2
    j = max(k for k in range(n + 1) if k == 0 or stats.binom.cdf(k - 1, n, 0.5) <= (1 - level) / 2)
    return middle, ordered[j - 1], ordered[n - j], n


def test_the_paired_lambda_star_of_two_models_is_recomputed(tiny_models, tmp_path):
    done = runs(tiny_models, tmp_path)
    stars = {m: pd.read_csv(r.run_dir / "lambda_star.csv")["lambda_star"] for m, r in done.items()}
    assert all(len(s) >= 6 for s in stars.values())  # enough pairs for a 95% interval
    assert any((s < float("inf")).any() for s in stars.values())  # some λ* crossed τ
    paired = get_method("cid-sensitivity").audit.paired
    found = paired(done["llama"].run_dir, done["gpt2"].run_dir, {"type": "gender"}, "median", 0.95)
    middle, low, high, n = by_hand(done["llama"].run_dir, done["gpt2"].run_dir, 0.95)
    assert found["n"] == n and n >= 6
    assert (found["difference"], found["ci_low"], found["ci_high"]) == (middle, low, high)
    assert found["note"] is None
    # the same model on both sides differs by 0 on every pair
    same = paired(done["llama"].run_dir, done["llama"].run_dir, {"type": "gender"}, "median", 0.95)
    assert (same["difference"], same["ci_low"], same["ci_high"]) == (0.0, 0.0, 0.0)
    # numbers without a paired interval say so
    assert paired(done["llama"].run_dir, done["gpt2"].run_dir, {"type": "gender"}, "q25") is None
