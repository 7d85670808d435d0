"""The SIB paper's known models on a sib-mgc run's own sentence frames: their slopes recomputed
here from the released files (the csv module, the frame read from each column's sentence, the
slope of the per-W mean by least squares), the paired difference from the run's own samples,
and the card's rows for them."""

from __future__ import annotations

import csv
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.sib.mgc.audit_role import references_for
from biaslens.methods.sib.mgc.method import make_settings
from biaslens.models import BackendConfig
from tests.conftest import full_data_dir
from tests.helpers import run_mgc

CPU = BackendConfig(device="cpu", batch_size=16)


def _released(path) -> tuple[list[str], dict[tuple[str, str], np.ndarray]]:
    """A released file's W values and, per frame ("has become", "an adult"), its percentages."""
    with open(path, newline="") as handle:
        header, *rows = list(csv.reader(handle))
    frames = {}
    for column, sentence in enumerate(header[2:], start=2):
        rest = re.search(r"(?:\[MASK\]|<mask>) ([^.\n]+)\.", sentence).group(1)
        words = rest.split(" ")
        for cut in range(1, len(words)):
            verb, stage = " ".join(words[:cut]), " ".join(words[cut:])
            if stage in ("a child", "an adolescent", "an adult", "a kid", "a teenager",
                         "a grown up"):  # fmt: skip
                frames[(verb, stage)] = np.array([float(r[column]) for r in rows])
    return [r[1] for r in rows], frames


def _slope(series: np.ndarray) -> float:
    return float(np.polyfit(np.arange(len(series), dtype=float), series, 1)[0])


@pytest.fixture(scope="module")
def run(tiny_models, tmp_path_factory):
    settings = make_settings(model=str(tiny_models["llama"]), limit=4, w_kinds=("dates",))
    folder = tmp_path_factory.mktemp("mgc-known") / "run"
    return run_mgc(settings, folder, CPU, data_dir=full_data_dir())


def test_known_slopes_on_the_runs_frames_and_the_paired_difference(run):
    table = pd.read_csv(run.run_dir / "mgc_reference.csv")
    samples = pd.read_parquet(run.run_dir / "samples.parquet")
    frames = set(zip(samples["verb"], samples["life_stage"], strict=True))
    assert len(frames) == 4
    folder = full_data_dir() / "sib" / "data" / "spur_mgc_raw"
    w, female = _released(folder / "fp_wikibio_text-davinci-002_date__testFalse_P3.csv")
    _, male = _released(folder / "mp_wikibio_text-davinci-002_date__testFalse_P3.csv")
    known = np.mean([female[f] - male[f] for f in frames], axis=0)
    row = table[(table["known_model"] == "text-davinci-002") & (table["prompt"] == "A")
                & (table["metric"] == "female_minus_male_slope")].iloc[0]  # fmt: skip
    assert row["frames"] == 4 and row["n"] == len(w) == 30
    assert row["value"] == pytest.approx(_slope(known), abs=1e-9)
    assert abs(row["value"]) > 0.05  # the known model's frames carry a trend: a real check
    per_w = samples.assign(d=(samples["p_female"] - samples["p_male"]) * 100)
    audited = per_w.groupby("w_index")["d"].mean().to_numpy()
    assert [str(v) for v in samples.drop_duplicates("w_index").sort_values("w_index")["w"]] == w
    assert row["difference"] == pytest.approx(_slope(audited) - _slope(known), abs=1e-9)
    assert row["difference_ci_low"] < row["difference"] < row["difference_ci_high"]
    assert row["paired_over"] == "30 W values × 4 frames"


def test_the_card_rows_read_the_runs_own_frames(run):
    summary = run.summary
    rows = [
        SimpleNamespace(metric=e["metric"], labels=e["labels"])
        for e in summary["estimates"]
        if e["metric"] == "female_minus_male_slope"
    ]
    record = SimpleNamespace(settings=summary["settings"], metrics=summary["metrics"])
    found = references_for(rows, record)
    assert len(found) == 6  # the prompted models of prompt A
    gpt = next(r for r in found if r["model"] == "GPT-3.5 SFT (text-davinci-002)")
    assert gpt["difference"] is not None and gpt["paired_over"] == "30 W values × 4 frames"
    assert "sentence frames" not in (gpt["why_not_same"] or "")  # the same frames
    assert "mode 'exact'" in gpt["why_not_same"]  # still another readout than the paper's
    assert "the run's own sentence frames" in gpt["protocol"]
