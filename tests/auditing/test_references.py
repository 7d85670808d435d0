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


# ---------------------------------------------------------------- SIB Method 2 (sib-detect)

DETECT_NAME = re.compile(
    r"^fp_wikibio_(.+)_date_([a-z]+)_([a-z]+)_([01])_testFalse(?:_(P\d))?\.csv$"
)
TABLE_3_EXTENDED = {  # the paper's Table 3, Winogender columns: (TPR, TNR)
    "BERT-base": (0.769, 0.608), "BERT-large": (0.725, 0.758),
    "RoBERTa-base": (0.758, 0.775), "RoBERTa-large": (0.786, 0.892),
    "BART-base": (0.661, 0.600), "BART-large": (0.689, 0.708),
    "UL2-20B-gen": (0.728, 0.608), "Flan-UL2-20B": (0.464, 0.958),
    "GPT-3": (0.689, 0.517), "GPT-3.5 SFT": (0.739, 0.950), "GPT-3.5 RLHF": (0.711, 0.742),
}  # fmt: skip


@pytest.fixture(scope="module")
def detect_archive(full_data) -> Path:
    archive = full_data / "sib" / "detect_wino_raw.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive}: the released Method 2 outputs are not in this data folder")
    return archive


def _female_file_rates(archive: Path) -> dict:
    """Section 5's rule written out again: per sentence, |p_f(latest) − p_f(earliest)| from
    its female file (the first and last date rows), unspecified above 0.5; well-specified
    only where the pronoun is the participant's and the participant is the man or the woman
    (extended set), or where the professional is female or male (Simplified set)."""
    import io
    import tarfile

    counts: dict = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            match = DETECT_NAME.match(Path(member.name).name)
            if not member.isfile() or match is None:
                continue
            model, _, participant, answer, prompt = match.groups()
            text = tar.extractfile(member).read().decode("utf-8")
            rows = list(csv.reader(io.StringIO(text)))[1:]
            metric = abs(float(rows[-1][2]) - float(rows[0][2]))
            simplified = participant in ("female", "male", "unspecified")
            well = participant != "unspecified" if simplified else (
                participant in ("man", "woman") and answer == "1")  # fmt: skip
            key = (model, prompt or "", "simplified-reference" if simplified else "extended")
            tally = counts.setdefault(key, [0, 0, 0, 0])  # hits, positives, rejections, negatives
            if well:
                tally[2] += metric <= 0.5
                tally[3] += 1
            else:
                tally[0] += metric > 0.5
                tally[1] += 1
    return {key: (h / p, r / n, (h / p + r / n) / 2, p, n) for key, (h, p, r, n) in counts.items()}


def test_every_shipped_detector_rate_is_the_released_female_files_rate(detect_archive):
    from biaslens.methods.sib.detect.references import load_sib_detect

    expected = _female_file_rates(detect_archive)
    shipped = load_sib_detect()
    assert len(expected) == len(shipped[["model", "prompt", "set"]].drop_duplicates()) == 27
    for (model, prompt, name), (tpr, tnr, ba, positives, negatives) in expected.items():
        rows = shipped[(shipped["model"] == model) & (shipped["prompt"] == prompt)
                       & (shipped["set"] == name)].set_index("metric")  # fmt: skip
        assert rows.loc["tpr", "value"] == pytest.approx(tpr, abs=1e-12)
        assert rows.loc["tnr", "value"] == pytest.approx(tnr, abs=1e-12)
        assert rows.loc["balanced_accuracy", "value"] == pytest.approx(ba, abs=1e-12)
        assert (rows.loc["tpr", "n"], rows.loc["tnr", "n"]) == (positives, negatives)
        assert (rows["ci_low"] <= rows["value"]).all() and (rows["value"] <= rows["ci_high"]).all()
    # extended Winogender: 60 occupations × 4 participants × 2 templates, 120 well-specified
    assert expected[("bert-base-uncased", "", "extended")][3:] == (360, 120)


def test_the_shipped_detector_file_is_what_biaslens_computes_from_the_archive(detect_archive):
    import pandas as pd

    from biaslens.methods.sib.detect.references import (
        SIB_DETECT_FILE,
        load_sib_detect,
        sib_detect_references,
    )

    fresh, shipped = sib_detect_references(detect_archive), load_sib_detect()
    columns = ["model", "prompt", "set", "metric", "value", "ci_low", "ci_high", "n",
               "occupations"]  # fmt: skip
    pd.testing.assert_frame_equal(
        fresh[columns].reset_index(drop=True), shipped[columns].reset_index(drop=True),
        check_dtype=False, rtol=1e-12,
    )  # fmt: skip
    assert all(SIB_COMMIT in source and "detect_wino" in source for source in shipped["source"])
    assert SIB_DETECT_FILE.is_file()


def test_table_3_is_the_processed_statistics_not_the_female_files(full_data, detect_archive):
    """The paper's Table 3 is reproduced, to its three decimals, from the reference code's
    processed statistics (``*_delta_stats.csv``: per occupation and participant × template, one
    delta) by its own threshold rule; those deltas kept whichever of a sentence's female, male
    and neutral files was read last, so the female files' rates (shipped) differ."""
    import pandas as pd

    folder = full_data / "sib" / "data" / "detect_wino_processed"
    female = _female_file_rates(detect_archive)
    for model, (tpr, tnr) in TABLE_3_EXTENDED.items():
        deltas = pd.read_csv(folder / f"{model}_delta_stats.csv", index_col=0)
        well = ["man_1", "woman_1"]
        rest = [c for c in deltas.columns if c not in well]
        assert round(float((deltas[rest] > 0.5).to_numpy().mean()), 3) == tpr, model
        assert round(float((deltas[well] <= 0.5).to_numpy().mean()), 3) == tnr, model
    assert female[("bert-base-uncased", "", "extended")][:2] != TABLE_3_EXTENDED["BERT-base"]
    assert abs(female[("bert-base-uncased", "", "extended")][0] - 0.769) > 0.05


def test_a_detector_runs_rates_get_the_known_models_with_what_differs():
    """A quick audit's sib-detect rows (exact scoring, 10 occupations, biaslens's Simplified
    rewrite) get every released model's rate on the same set, named as the paper names it,
    marked as another protocol with each difference said; the paper preset's run is on the
    references' protocol."""
    from types import SimpleNamespace

    from biaslens.methods.sib.detect.references import references_for

    rows = [SimpleNamespace(metric="balanced_accuracy", labels={"set": "extended"}),
            SimpleNamespace(metric="tpr", labels={"set": "simplified"}),
            SimpleNamespace(metric="n_tpr", labels={"set": "extended"})]  # fmt: skip
    quick = {"mode": "exact", "date_format": "comma", "empty_mass": "exclude", "average_n": 1,
             "earliest": 1901, "latest": 2016, "limit": 10}  # fmt: skip
    found = references_for(rows, SimpleNamespace(settings=quick))
    extended = [r for r in found if r["labels"] == {"set": "extended"}]
    assert len(extended) == 11 and all(r["metric"] == "balanced_accuracy" for r in extended)
    bert = next(r for r in extended if r["model"] == "BERT-base (bert-base-uncased)")
    assert bert["value"] == pytest.approx(0.6722222222222222, abs=1e-12)
    assert bert["ci_low"] < bert["value"] < bert["ci_high"]
    assert any(r["model"] == "GPT-3.5 SFT (text-davinci-002)" for r in extended)  # prompt A
    gap = bert["why_not_same"]
    assert not bert["same_protocol"] and "mode 'exact'" in gap and "first 10 occupations" in gap
    simplified = [r for r in found if r["labels"] == {"set": "simplified"}]
    assert len(simplified) == 11 and "Simplified rewrite" in simplified[0]["why_not_same"]
    paper = dict(quick, mode="paper", date_format="colon", empty_mass="zero", limit=None)
    on_protocol = references_for(
        [SimpleNamespace(metric="tnr", labels={"set": "simplified-reference"})],
        SimpleNamespace(settings=paper),
    )
    assert len(on_protocol) == 11 and all(r["same_protocol"] for r in on_protocol)
