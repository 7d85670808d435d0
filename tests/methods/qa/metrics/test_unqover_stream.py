"""Streamed UnQover metrics equal the whole-table computation, whatever the chunks cut."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.metrics.unqover import (
    cluster_attribute_bias,
    comparative_scores,
    model_summary,
    subject_attribute_bias,
    subject_bias,
)
from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator, stream_tables
from tests.methods.qa.metrics.test_unqover import STRONG, WEAK, rows

SUBJECTS = {"Ann": "f", "Bea": "f", "Cy": "m", "Dan": "m"}


def random_scores(seed: int, interventions: int = 3) -> pd.DataFrame:
    """Every ordered pair of 4 subjects × 2 templates × 2 attributes × interventions, both
    questions, random probabilities."""
    rng = np.random.default_rng(seed)
    out = []
    for intervention in range(interventions):
        for template in ("t1", "t2"):
            for attribute in ("bad", "good"):
                for first in SUBJECTS:
                    for second in SUBJECTS:
                        if first == second:
                            continue
                        for negated in (False, True):
                            s_first, s_second = rng.random(2)
                            out.append(
                                {"first": first, "second": second, "template": template,
                                 "attribute": attribute, "negated": negated,
                                 "s_first": s_first, "s_second": s_second,
                                 "first_cluster": SUBJECTS[first],
                                 "intervention": f"i{intervention}"}
                            )  # fmt: skip
    return pd.DataFrame(out)


def chunks(table: pd.DataFrame, size: int, seed: int) -> list[pd.DataFrame]:
    """The rows shuffled, cut every ``size`` rows: contexts split across chunks."""
    shuffled = table.sample(frac=1, random_state=seed).reset_index(drop=True)
    return [shuffled.iloc[i : i + size] for i in range(0, len(shuffled), size)]


def _sorted(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return table.sort_values(keys).reset_index(drop=True)


@pytest.mark.parametrize("size", [1, 7, 50, 10_000])
@pytest.mark.parametrize("by", [(), ("intervention",)])
def test_streamed_tables_equal_the_whole_table(size, by):
    table = random_scores(seed=size)
    within = () if by else ("intervention",)
    tables = stream_tables(chunks(table, size, seed=1), by=by, within=within)
    comparative = comparative_scores(table, (*by, *within))
    expected = {
        "model": model_summary(table, by=by, within=within, comparative=comparative),
        "subjects": subject_bias(comparative, by),
        "subject_attribute": subject_attribute_bias(comparative, by),
        "cluster_attribute": cluster_attribute_bias(comparative, SUBJECTS, by),
    }
    assert set(tables) == set(expected)
    for name, want in expected.items():
        got = tables[name]
        keys = [c for c in (*by, "subject", "cluster", "attribute") if c in want and c in got]
        keys = keys or list(by)
        got, want = (_sorted(t, keys) if keys else t for t in (got, want))
        assert list(got.columns) == list(want.columns), name
        pd.testing.assert_frame_equal(got, want, check_dtype=False, rtol=1e-12, atol=1e-12)


def test_hand_computed_values_survive_any_cut():
    # The STRONG context alone: C(A, B) = 0.25 (test_unqover.py beside this file), so μ = 0.25.
    table = pd.DataFrame(rows("t1", "bad", STRONG) + rows("t2", "bad", WEAK))
    for size in (1, 3):
        total = UnqoverAccumulator()
        for chunk in chunks(table, size, seed=size):
            total.add(chunk)
        summary = total.summary().iloc[0]
        assert summary["mu"] == pytest.approx(model_summary(table)["mu"].iloc[0])
        assert summary["contexts"] == 4  # two contexts, each in two subject orders


def test_a_context_that_never_completes_is_named():
    table = pd.DataFrame(rows("t1", "bad", STRONG))
    total = UnqoverAccumulator()
    total.add(table[~((table["first"] == "B") & table["negated"])])
    with pytest.raises(BiaslensError, match="lack the other subject order, e.g. B before A"):
        total.summary()


def test_a_repeated_row_is_refused_not_counted_twice():
    table = pd.DataFrame(rows("t1", "bad", STRONG))
    total = UnqoverAccumulator()
    total.add(table)
    with pytest.raises(BiaslensError, match="A / B \\(template t1, attribute bad\\) came in two"):
        total.add(table.iloc[:4])
    with pytest.raises(BiaslensError, match="more than once"):
        UnqoverAccumulator().add(pd.concat([table, table.iloc[:1]]))


def test_nothing_added_is_an_error():
    with pytest.raises(BiaslensError, match="no scores"):
        stream_tables([])


@pytest.mark.parametrize("size", [7, 50])
def test_intervals_do_not_depend_on_how_chunks_cut_the_set(size):
    """The intervals (cross-fitting halves and groups, the crossed-design jackknife) come from
    per-unit sums and the names of subjects, templates and attributes, never from the order in
    which rows arrived."""
    table = random_scores(seed=size)
    whole = UnqoverAccumulator(("intervention",), intervals=(0.95, 3))
    whole.add(table)
    streamed = UnqoverAccumulator(("intervention",), intervals=(0.95, 3))
    for chunk in chunks(table, size, seed=size):
        streamed.add(chunk)
    want, got = whole.summary(), streamed.summary()
    # (δ's interval needs 5 templates; its jackknife standard error is there at 2)
    assert np.isfinite(want["mu_ci_low"].iloc[0]) and want["delta_se"].iloc[0] > 0
    pd.testing.assert_frame_equal(got, want, rtol=1e-12, atol=1e-12)


HALVES_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
from tests.methods.qa.metrics.test_unqover_stream import random_scores
table = random_scores(seed=5, interventions=1)
# templates that ask different attributes: t1 asks bad and good, t2 and t3 only bad
extra = table[(table["attribute"] == "bad") & (table["template"] == "t1")]
table = table[~((table["template"] == "t2") & (table["attribute"] == "good"))]
table = __import__("pandas").concat([table, extra.assign(template="t3")])
totals = UnqoverAccumulator(intervals=(0.95, 1))
totals.add(table)
row = totals.summary().iloc[0]
print(json.dumps({{k: float(row[k]) for k in ("mu_crossfit", "eta_crossfit", "theta4_crossfit")}}))
"""


def test_the_cross_fitting_halves_do_not_depend_on_the_process(tmp_path):
    """Templates that ask different sets of attributes are dealt into halves group by group:
    the groups' order must come from the attributes' names, not from Python's string hashes,
    which change from process to process (PYTHONHASHSEED) and would move the cross-fitted
    values and the intervals between two runs of the same set with the same seed."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[4])
    script = HALVES_SCRIPT.format(root=root)
    values = []
    for hash_seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        values.append(json.loads(result.stdout))
    assert all(v == values[0] for v in values), values


def test_a_subject_paired_with_itself_is_named():
    table = pd.DataFrame(rows("t1", "bad", STRONG)).assign(first="A", second="A")
    with pytest.raises(BiaslensError, match="pairs A with itself \\(template t1"):
        UnqoverAccumulator().add(table)


def test_cell_sums_equal_a_group_by_whatever_the_merges(monkeypatch):
    """Sums per cell of packed ids, merged every few rows, equal pandas' group-by sums of the
    same rows; the ids come back unpacked, and an id too wide for its bits is an error."""
    from biaslens.methods.qa.metrics import unqover_cells

    monkeypatch.setattr(unqover_cells, "MERGE_ROWS", 5)
    rng = np.random.default_rng(0)
    sums = unqover_cells.CellSums((40, 1, 20), "a", "n")
    parts = []
    for size in (3, 9, 0, 17, 1, 30):
        part = pd.DataFrame(
            {"unit": rng.integers(0, 2**39, size) % 7 + 2**38, "side": rng.integers(0, 2, size),
             "attribute": rng.integers(0, 5, size), "a": rng.normal(size=size), "n": 1.0}
        )  # fmt: skip
        sums.add((part["unit"], part["side"], part["attribute"]), a=part["a"], n=part["n"])
        parts.append(part)
    want = pd.concat(parts).groupby(["unit", "side", "attribute"], sort=True)[["a", "n"]].sum()
    got = sums.columns()
    assert got["key"].tolist() == [list(k) for k in want.index]
    assert got["a"] == pytest.approx(want["a"].to_numpy(), abs=1e-12)
    assert got["n"].tolist() == want["n"].tolist()
    with pytest.raises(BiaslensError, match="more than 2 distinct values"):
        sums.add((np.array([0]), np.array([2]), np.array([0])), a=np.ones(1), n=np.ones(1))
