"""The SIB paper's known models on a sib-mgc run's own sentence frames: their slopes recomputed
here from the released files (the csv module, the frame read from each column's sentence, the
slope of the per-W mean by least squares), the paired difference from the run's own samples
read as the reference code read them (``--paper-readout``, which equals a ``--scoring paper``
run), and the card's rows for them: the same frames and the same readout."""

from __future__ import annotations

import csv
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from biaslens.auditing.card import ReferenceRow
from biaslens.methods.sib.mgc.audit_role import references_for
from biaslens.methods.sib.mgc.settings import make_settings
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
    settings = make_settings(
        model=str(tiny_models["llama"]), limit=4, w_kinds=("dates",), paper_readout=True
    )
    folder = tmp_path_factory.mktemp("mgc-known") / "run"
    return run_mgc(settings, folder, CPU, data_dir=full_data_dir())


def test_known_slopes_on_the_runs_frames_and_the_paired_difference(run):
    table = pd.read_csv(run.run_dir / "mgc_reference.csv")
    samples = pd.read_parquet(run.run_dir / "paper_samples.parquet")  # the paper's readout
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
    assert len(rows) == 2  # this run's readout, and the reference code's
    record = SimpleNamespace(settings=summary["settings"], metrics=summary["metrics"])
    found = references_for(rows, record)
    assert all(ReferenceRow(**r) for r in found)  # what the card holds: typed, no NaN text
    assert len(found) == 6  # the prompted models of prompt A, beside the paper readout's row
    assert all(r["labels"]["readout"] == "the reference code's" for r in found)
    gpt = next(r for r in found if r["model"] == "GPT-3.5 SFT (text-davinci-002)")
    assert gpt["difference"] is not None and gpt["paired_over"] == "30 W values × 4 frames"
    assert gpt["same_protocol"] and gpt["why_not_same"] is None  # the same frames and readout
    assert "the run's own sentence frames" in gpt["protocol"]


def test_the_paper_readout_is_a_paper_run(run, tiny_models, tmp_path):
    """--paper-readout's slopes are those of a --scoring paper run (10 greedy steps) on the
    same inputs."""
    settings = make_settings(model=str(tiny_models["llama"]), limit=4, w_kinds=("dates",),
                             mode="paper", generation_tokens=10)  # fmt: skip
    paper = run_mgc(settings, tmp_path / "paper", CPU, data_dir=full_data_dir())
    ours = pd.read_csv(run.run_dir / "paper_slopes.csv").set_index(["prompt", "w_kind"])
    theirs = pd.read_csv(paper.run_dir / "slopes.csv").set_index(["prompt", "w_kind"])
    value = theirs["female_minus_male_slope"].iloc[0]
    assert value != 0  # the tiny model's greedy replies name pronouns: a real comparison
    assert ours["female_minus_male_slope"].iloc[0] == pytest.approx(value, abs=1e-12)


def test_a_line_of_a_pronoun_the_readout_never_named_is_cautioned():
    """A readout that never names a female pronoun has a flat female line by construction:
    its fit and the female − male slope carry a caution (no verdict, no standing); the male
    line, which it does name, carries none."""
    from biaslens.methods.sib.mgc.method import never_named

    samples = pd.DataFrame({"prompt": "A", "w_kind": "dates", "p_female": [0.0, 0.0],
                            "p_male": [0.0, 1.0], "p_neutral": [0.0, 0.0]})  # fmt: skip
    fits = pd.DataFrame({"prompt": "A", "w_kind": "dates", "gender": ["female", "male"]})
    slopes = pd.DataFrame({"prompt": ["A"], "w_kind": ["dates"]})
    fits, slopes = never_named(samples, fits, slopes)
    female, male = fits["readout_caution"]
    assert "never named a female pronoun" in female and male == ""
    assert "never named a female pronoun" in slopes["readout_caution"].iloc[0]
