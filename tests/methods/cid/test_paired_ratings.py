"""Two tiny causal models' cid-audit runs, each rated, paired over the same prompts: the
audit's paired number (Σ (biased A − biased B) / n over the prompts of one group and λ)
recomputed from the two runs' samples with the rating rule applied again here, and what the
pairing says where it cannot be computed."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from biaslens.framework.registry import get_method
from biaslens.methods.cid.audit import RATINGS_EXPORT, make_settings
from biaslens.methods.cid.ratings import ratings_amendment
from biaslens.runner import amend_run
from tests.helpers import run_audit

NAMES = """
group-a:
  gender: male
  names: [John, James, Robert, Michael]
group-b:
  gender: female
  names: [Emma, Olivia, Ava]
"""


def biased(continuation: str) -> int:
    """The rule the test's rater follows: a continuation with an ``e`` in it is biased."""
    return int("e" in continuation)


@pytest.fixture
def rated_runs(tiny_backends, tmp_path) -> dict:
    names = tmp_path / "names.yaml"
    names.write_text(NAMES)
    settings = make_settings(
        model="tiny", groups=("group-a", "group-b"), names_file=names, lams=(0.0, 5.0),
        max_new_tokens=5,
    )  # fmt: skip
    folders = {}
    for model in ("llama", "gpt2"):
        folder = tmp_path / model
        run_audit(settings, folder, lm=tiny_backends[model])
        exported = pd.read_csv(folder / RATINGS_EXPORT, keep_default_na=False)
        rated = tmp_path / f"{model}-rated.csv"
        exported.assign(biased=[biased(c) for c in exported["continuation"]]).to_csv(
            rated, index=False, quoting=csv.QUOTE_ALL
        )
        amend_run(folder, "cid-audit", ratings_amendment(rated))
        folders[model] = folder
    return folders


def by_hand(folder_a, folder_b, group: str, lam: float) -> tuple[float, int]:
    """The mean over the prompts both runs decoded (same group, λ, input and contrast) of
    biased(A's continuation) − biased(B's)."""
    a, b = (pd.read_parquet(f / "samples.parquet") for f in (folder_a, folder_b))
    a, b = (t[(t["group"] == group) & (t["lam"] == lam)] for t in (a, b))
    both = a.merge(b, on=["group", "lam", "input", "contrast"])
    pairs = zip(both["continuation_x"], both["continuation_y"], strict=True)
    changes = [biased(x) - biased(y) for x, y in pairs]
    return float(np.mean(changes)), len(changes)


def test_the_paired_fraction_of_two_rated_runs_is_recomputed(rated_runs):
    paired = get_method("cid-audit").audit.paired
    llama, gpt2 = rated_runs["llama"], rated_runs["gpt2"]
    parted = 0
    for group in ("group-a", "group-b"):
        for lam in (0.0, 5.0):
            found = paired(llama, gpt2, {"group": group, "lam": lam}, "fraction_biased", 0.95)
            difference, n = by_hand(llama, gpt2, group, lam)
            assert n == 12 and found["n"] == n  # 4 × 3 name pairs, one prompt each
            assert found["difference"] == pytest.approx(difference)
            parted += difference != 0
            if found["note"] is None:
                assert found["ci_low"] <= found["difference"] <= found["ci_high"]
    assert parted, "the two tiny models must part on some cell for the test to look at it"
    # the same run on both sides differs by 0; labels as the card writes them (λ a string)
    same = paired(llama, llama, {"group": "group-a", "lam": "5"}, "fraction_biased", 0.95)
    assert same["difference"] == 0 and same["n"] == 12
    # another number has no paired interval
    assert paired(llama, gpt2, {"group": "group-a", "lam": 5.0}, "biased", 0.95) is None


def test_a_run_without_ratings_says_so(rated_runs, tiny_backends, tmp_path):
    names = tmp_path / "names.yaml"
    settings = make_settings(
        model="tiny", groups=("group-a", "group-b"), names_file=names, lams=(0.0, 5.0),
        max_new_tokens=5,
    )  # fmt: skip
    unrated = tmp_path / "unrated"
    run_audit(settings, unrated, lm=tiny_backends["llama"])
    paired = get_method("cid-audit").audit.paired
    found = paired(rated_runs["llama"], unrated, {"group": "group-a", "lam": 5.0},
                   "fraction_biased", 0.95)  # fmt: skip
    assert np.isnan(found["difference"]) and "no ratings yet" in found["note"]
