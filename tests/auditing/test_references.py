"""The reference values shipped beside every card are recomputed here from the SIB authors'
released Method 1 outputs (``sib/data/spur_mgc_raw/`` of the shared data), with the paper's
rule written out again: per W value the mean over the MGC sentences (percent), then the
least-squares slope over the W index (Section 4; the reference ``spurious_plotting.py`` fits
``stats.linregress(range(len(ys)), ys)``)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from biaslens.methods.sib.mgc.audit_role import (
    SIB_COMMIT,
    SIB_MGC_FILE,
    load_sib_mgc,
    sib_mgc_references,
)

NAME = re.compile(r"^([fmn])p_wikibio_(.+)_(date|place)__testFalse(?:_P(\d))?\.csv$")
PROMPTS = {"1": "C", "2": "B", "3": "A", None: "mask"}


def _per_w_means(path: Path) -> list[float]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    body = rows[1:]
    return [sum(float(v) for v in row[2:]) / (len(row) - 2) for row in body]


def _slope(ys: list[float]) -> float:
    n = len(ys)
    x_bar = (n - 1) / 2
    y_bar = sum(ys) / n
    sxy = sum((x - x_bar) * (y - y_bar) for x, y in enumerate(ys))
    sxx = sum((x - x_bar) ** 2 for x in range(n))
    return sxy / sxx


@pytest.fixture(scope="module")
def released(full_data) -> Path:
    folder = full_data / "sib" / "data" / "spur_mgc_raw"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the released SIB outputs are not in this data folder")
    return folder


def test_every_shipped_slope_is_the_released_outputs_slope(released):
    shipped = load_sib_mgc()
    expected = {}
    for path in sorted(released.glob("*.csv")):
        match = NAME.match(path.name)
        if match is None:
            continue
        pronoun, model, w, prompt = match.groups()
        model = re.sub(r"^(facebook|google)_", r"\1/", model)
        key = (model, PROMPTS[prompt], {"date": "dates", "place": "places"}[w])
        expected.setdefault(key, {})[pronoun] = _per_w_means(path)
    assert len(expected) == len(shipped[["model", "prompt", "w_kind"]].drop_duplicates()) > 30
    checked = 0
    for (model, prompt, w_kind), means in expected.items():
        rows = shipped[
            (shipped["model"] == model)
            & (shipped["prompt"] == prompt)
            & (shipped["w_kind"] == w_kind)
        ]
        rows = rows.set_index(rows["metric"] + ":" + rows["gender"].fillna(""))
        for pronoun, gender in (("f", "female"), ("m", "male"), ("n", "neutral")):
            assert rows.loc[f"slope:{gender}", "value"] == pytest.approx(
                _slope(means[pronoun]), abs=1e-9
            )
        difference = [f - m for f, m in zip(means["f"], means["m"], strict=True)]
        assert rows.loc["female_minus_male_slope:", "value"] == pytest.approx(
            _slope(difference), abs=1e-9
        )
        checked += 1
    assert checked == len(expected)
    # the paper's Fig. 3(b): BERT-base's female slope over dates is clearly positive
    bert = shipped[(shipped["model"] == "bert-base-uncased") & (shipped["w_kind"] == "dates")]
    assert bert[bert["gender"] == "female"]["value"].iloc[0] > 0.3


def test_the_shipped_file_is_what_biaslens_computes_from_the_released_files(released):
    import pandas as pd

    fresh = sib_mgc_references(released)
    shipped = load_sib_mgc()
    columns = [
        "model",
        "prompt",
        "w_kind",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "n",
        "sentences",
    ]
    pd.testing.assert_frame_equal(
        fresh[columns].reset_index(drop=True), shipped[columns].reset_index(drop=True),
        check_dtype=False, rtol=1e-12,
    )  # fmt: skip
    assert all(SIB_COMMIT in source for source in shipped["source"])
    assert all("spur_mgc_raw/" in source for source in shipped["source"])
    assert SIB_MGC_FILE.is_file()
