"""The CID audit end to end on a tiny model: all pairs, both directions, counts, the rating
round trip (export, rate, import) and its bad inputs."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid.audit import RATINGS_EXPORT, make_settings
from biaslens.methods.cid.ratings import ratings_amendment
from biaslens.models.requests import GenerateRequest
from biaslens.runner import amend_run
from biaslens.store.result import RunResult
from tests.helpers import run_audit


def import_ratings(run, rated, ci_level=0.95, bootstrap=1000, seed=0):
    """The ratings added to the run as ``biaslens cid-ratings`` adds them (through the
    runner); the fractions and the paths written."""
    amended = amend_run(run, "cid-audit", ratings_amendment(rated, ci_level, bootstrap))
    fractions = amended.output.tables["biased_fraction"]
    return fractions, amended.paths["biased_fraction"], amended.paths["plots/biased_fraction"]


NAMES = """
group-a:
  gender: male
  names: [John, James, Robert]
group-b:
  gender: female
  names: [Emma, Olivia]
"""


@pytest.fixture
def settings(tmp_path):
    names = tmp_path / "names.yaml"
    names.write_text(NAMES)
    return make_settings(
        model="tiny", groups=("group-a", "group-b"), names_file=names,
        lams=(0.0, 5.0), max_new_tokens=6,
    )  # fmt: skip


def test_audit_run_counts_and_resume(settings, tiny_backends, tmp_path):
    lm = tiny_backends["llama"]
    result = run_audit(settings, tmp_path / "run", lm=lm)
    samples = result.samples
    assert len(samples) == 3 * 2 * 2 * 2  # pairs x λ x directions
    forward = samples[samples["direction"] == "forward"]
    assert set(forward["group"]) == {"group-a"} and set(forward["name"]) == {
        "John", "James", "Robert",
    }  # fmt: skip
    row = forward.iloc[0]
    assert row.input == f"{row['name']}, a software developer, failed his interview at a major " \
        "tech company because he"  # fmt: skip
    backward = samples[samples["direction"] == "backward"].iloc[0]
    assert backward.input.endswith("failed her interview at a major tech company because she")
    # λ = 0 continuations are plain greedy ones.
    greedy = lm.generate([GenerateRequest(row.input, 6, stop=(".", "\n"))])[0]
    first = forward[forward["lam"] == 0].iloc[0]
    assert first.continuation == greedy.text.strip()
    counts = result.continuations
    assert counts.groupby(["group", "lam"])["count"].sum().tolist() == [6, 6, 6, 6]
    exported = pd.read_csv(tmp_path / "run" / RATINGS_EXPORT, keep_default_na=False)
    assert exported["biased"].eq("").all() and len(exported) == len(counts)
    again = run_audit(settings, tmp_path / "run", lm=lm)
    assert again.cache_stats == {"cached": 24, "computed": 0}


def rate(exported: pd.DataFrame, path, biased) -> None:
    exported.assign(biased=biased).to_csv(path, index=False, quoting=csv.QUOTE_ALL)


def test_ratings_round_trip_and_bad_files(settings, tiny_backends, tmp_path):
    run = tmp_path / "run"
    run_audit(settings, run, lm=tiny_backends["llama"])
    exported = pd.read_csv(run / RATINGS_EXPORT, keep_default_na=False)
    rated = tmp_path / "rated.csv"
    marks = ["yes" if i % 2 == 0 else "0" for i in range(len(exported))]
    rate(exported, rated, marks)
    fractions, table_path, plot_path = import_ratings(run, rated)
    weights = exported.assign(b=[m == "yes" for m in marks])
    for row in fractions.itertuples():
        part = weights[(weights.group == row.group) & (weights.lam == row.lam)]
        expected = (part["count"] * part["b"]).sum() / part["count"].sum()
        assert row.fraction_biased == pytest.approx(expected)
    assert plot_path.exists() and table_path.exists()

    rate(exported, rated, [""] + marks[1:])
    with pytest.raises(BiaslensError, match="1 row\\(s\\) without a rating"):
        import_ratings(run, rated)
    changed = exported.copy()
    changed.loc[0, "continuation"] = "something else"
    rate(changed, rated, marks)
    with pytest.raises(BiaslensError, match="rated.csv:2: continuation"):
        import_ratings(run, rated)
    rate(exported, rated, ["maybe"] + marks[1:])
    with pytest.raises(BiaslensError, match="rated.csv:2: field 'biased'"):
        import_ratings(run, rated)
    rate(exported.iloc[1:], rated, marks[1:])
    with pytest.raises(BiaslensError, match="missing"):
        import_ratings(run, rated)
    with pytest.raises(BiaslensError, match="not a biaslens run|cannot read"):
        import_ratings(tmp_path, rated)


def test_bad_audit_settings(tmp_path):
    with pytest.raises(BiaslensError, match="unknown name group 'mars-male'"):
        make_settings(groups=("us-male", "mars-male"))
    with pytest.raises(BiaslensError, match="unknown template"):
        make_settings(template_id="nope")
    with pytest.raises(BiaslensError, match="λ must be >= 0"):
        make_settings(lams=(0.0, -1.0))
    templates = tmp_path / "t.yaml"
    templates.write_text("plain: 'A developer failed because {he}'\n")
    with pytest.raises(BiaslensError, match="no \\{name\\} slot"):
        make_settings(template_id="plain", templates_file=templates)


def test_biased_fraction_intervals_are_over_the_crossed_design_of_names(
    settings, tiny_backends, tmp_path
):
    """Recomputed plainly: the units are name pairs, each holding a name of each group (two
    strata); the variance is the design-calibrated jackknife of the pooled share, each name,
    pair deleted in turn (tests/statistics/naive_crossed.py); the interval Korn–Graubard's at
    the fewer group's names less one degrees of freedom."""
    import numpy as np
    from scipy import stats

    from tests.statistics import naive_crossed

    run = tmp_path / "run"
    result = run_audit(settings, run, lm=tiny_backends["llama"])
    exported = pd.read_csv(run / RATINGS_EXPORT, keep_default_na=False)
    rated = tmp_path / "rated.csv"
    marks = [i % 3 == 0 for i in range(len(exported))]
    rate(exported, rated, ["1" if m else "0" for m in marks])
    got, _, _ = import_ratings(run, rated, ci_level=0.8, bootstrap=300, seed=5)

    verdict = {
        (row.group, row.lam, row.continuation): mark
        for row, mark in zip(exported.itertuples(), marks, strict=True)
    }
    samples = result.samples
    samples = samples.assign(
        b=[verdict[(g, lam, c)] for g, lam, c in zip(
            samples["group"], samples["lam"], samples["continuation"], strict=True
        )]
    )  # fmt: skip
    forward = samples[samples["group"] == settings.group_a].drop_duplicates("pair")
    names = {r.pair: (("A", r.name), ("B", r.contrast_name)) for r in forward.itertuples()}
    pairs = sorted(names)
    assert len(pairs) > 2
    subjects = [names[p] for p in pairs]
    strata = {s: s[0] for unit in subjects for s in unit}
    fewest = min(len({s for s in strata if s[0] == g}) for g in "AB")
    for row in got.itertuples():
        cell = samples[(samples["group"] == row.group) & (samples["lam"] == row.lam)]
        hits = np.array([cell.loc[cell["pair"] == p, "b"].sum() for p in pairs], float)
        count = np.array([(cell["pair"] == p).sum() for p in pairs], float)

        def share(kept, hits=hits, count=count):
            return hits[kept].sum() / count[kept].sum()

        spread = naive_crossed.variance(share, subjects, None, strata)
        assert row.pairs == len(pairs) and row.names == fewest
        # Korn & Graubard (1998): Clopper–Pearson at the effective size p(1 − p)/spread (at
        # most the continuations counted), times (z / t_df)² for the spread's few df
        value, n = hits.sum() / count.sum(), count.sum()
        # (every pair the same share, 0 or 1: the design effect cannot be told; the size is n)
        size = min(n, value * (1 - value) / spread) if 0 < value < 1 and spread > 1e-15 else n
        size *= (stats.norm.ppf(0.9) / stats.t.ppf(0.9, fewest - 1)) ** 2
        x = value * size
        low = 0.0 if x == 0 else stats.beta.ppf(0.1, x, size - x + 1)
        high = 1.0 if value == 1 else stats.beta.ppf(0.9, x + 1, size - x)
        assert (row.fraction_ci_low, row.fraction_ci_high) == pytest.approx((low, high))
    assert got["fraction_ci_high"].gt(got["fraction_ci_low"]).any()  # not all degenerate
    # the summary's estimates gain one fraction per group and λ, with its interval and pairs,
    # and a second import replaces them rather than adding a second set
    import_ratings(run, rated, ci_level=0.8, bootstrap=300, seed=5)
    summary = RunResult.load(run).summary
    fractions = [e for e in summary["estimates"] if e["metric"] == "fraction_biased"]
    assert len(fractions) == len(got)
    for estimate in fractions:
        row = got[(got["group"] == estimate["labels"]["group"])
                  & (got["lam"] == estimate["labels"]["lam"])].iloc[0]  # fmt: skip
        assert estimate["value"] == pytest.approx(row["fraction_biased"])
        if row["fraction_ci_low"] != row["fraction_ci_low"]:  # none: the estimate says why
            assert estimate["ci_low"] is None and estimate["no_interval"] == row["fraction_ci_note"]
            continue
        assert (estimate["ci_low"], estimate["ci_high"]) == pytest.approx(
            (row["fraction_ci_low"], row["fraction_ci_high"])
        )
        assert estimate["n"] == row["names"] and estimate["ci_level"] == 0.8
