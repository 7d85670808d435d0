"""lei-eval's draws of context pairs: ``--per-cell`` fills every (subject, attribute) cell of
each set, ``--limit`` keeps about N pairs; one or the other."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.lei_eval.settings import make_settings


def _design(rng) -> pd.DataFrame:
    """Context pairs of 4 subjects × 6 attributes × 8 templates × 2 intervention sets, some
    cells thin (one attribute asked at two templates only)."""
    subjects = ["a", "b", "c", "d"]
    rows = []
    for kind in ("ethical", "adversarial"):
        for attribute in range(6):
            templates = range(2) if attribute == 5 else range(8)
            for template in templates:
                for i, first in enumerate(subjects):
                    for second in subjects[i + 1 :]:
                        for intervention in range(2):
                            key = f"{first}|{second}|{template}|{attribute}|{kind}{intervention}"
                            rows.append((key, kind, first, second, template, f"att{attribute}"))
    table = pd.DataFrame(
        rows, columns=["pair_key", "intervention_type", "first", "second", "template", "attribute"]
    )
    return table.sample(frac=1, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)


def _cell_units(table: pd.DataFrame) -> pd.Series:
    """Distinct subject pair × template units per (set, subject, attribute) cell, counted
    here from the rows themselves."""
    pairs = table.apply(lambda r: "|".join(sorted([r["first"], r["second"]])), axis=1)
    units = pairs + "#" + table["template"].astype(str)
    long = pd.concat([
        table.assign(subject=table["first"], unit=units),
        table.assign(subject=table["second"], unit=units),
    ])  # fmt: skip
    return long.groupby(["intervention_type", "subject", "attribute"])["unit"].nunique()


@pytest.mark.parametrize("units", [1, 3, 5])
def test_cell_filling_reads_every_cell_with_the_units_asked(units):
    """Every (set, subject, attribute) cell holds ``units`` distinct units, or all it has;
    far fewer context pairs than the whole set are kept; pairs stay whole; the draw is the
    seed's."""
    table = _design(np.random.default_rng(units))
    kept = lei.cell_filling_keys(table, units, ("intervention_type",), "pair_key", seed=3)
    available, held = _cell_units(table), _cell_units(kept)
    assert held.index.equals(available.index)  # no cell left out
    assert (held >= np.minimum(units, available)).all()
    assert held.min() == min(units, available.min())  # thin cells give all they have
    assert kept["pair_key"].nunique() < table["pair_key"].nunique() / 2
    again = lei.cell_filling_keys(table, units, ("intervention_type",), "pair_key", seed=3)
    assert again.equals(kept)
    other = lei.cell_filling_keys(table, units, ("intervention_type",), "pair_key", seed=4)
    assert set(other["pair_key"]) != set(kept["pair_key"])


def test_limit_and_per_cell_are_one_choice():
    with pytest.raises(BiaslensError, match="--limit and --per-cell"):
        make_settings(limit=40, per_cell=4)
    with pytest.raises(BiaslensError, match="at least 1"):
        lei.cell_filling_keys(_design(np.random.default_rng(0)), 0)
