"""SIB Method 2's known models on a run's own sentences, paired with it: a tiny model's
sib-detect run on two occupations of extended Winogender, with the SIB authors' released
outputs in its data folder. Each known model's rates and the paired differences are
recomputed here from the released archive itself (each sentence's female file, the paper's
rule |p_f(2016) − p_f(1901)| > 0.5 pp, Section 5), and the card reads them."""

from __future__ import annotations

import csv
import io
import tarfile
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import biaslens
from biaslens.framework.registry import get_method
from biaslens.store.result import RunResult

MEMBER = "data/detect_wino_raw/fp_wikibio_{model}_date_{id}_testFalse{suffix}.csv"


def female_metrics(archive, wanted: set[str]) -> dict[str, float]:
    """|p_f(2016) − p_f(1901)| in points, per wanted member: a model's female file of a sentence
    (one pass over the archive)."""
    found = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.name in wanted:
                text = tar.extractfile(member).read().decode("utf-8")
                shares = {int(r[1]): float(r[2]) for r in list(csv.reader(io.StringIO(text)))[1:]}
                found[member.name] = abs(shares[2016] - shares[1901])
    assert set(found) == wanted
    return found


@pytest.fixture(scope="module")
def run(tiny_models, full_data, tmp_path_factory):
    return biaslens.run(
        "sib-detect", str(tiny_models["bert-mlm"]), output=tmp_path_factory.mktemp("detect"),
        data_dir=full_data, limit=2, sets=("extended",), report=False, device="cpu",
    )  # fmt: skip


def test_known_models_on_the_runs_sentences_recomputed(run, full_data):
    archive = full_data / "sib" / "detect_wino_raw.tar.gz"
    sentences = pd.read_parquet(run.run_dir / "sentences.parquet")
    known = pd.read_csv(run.run_dir / "known_models.csv", keep_default_na=False)
    assert {"bert-base-uncased", "roberta-base", "text-davinci-002"} <= set(known["known_model"])
    mine = sentences[np.isfinite(sentences["metric"].to_numpy(float))]
    positive = ~mine["well_specified"].to_numpy(bool)
    flagged = mine["metric"].to_numpy(float) > 0.5
    assert 0 < positive.sum() < len(mine)  # both classes, so both rates look at something
    models = (("roberta-base", ""), ("text-davinci-002", "_P3"))
    name = {(m, i): MEMBER.format(model=m, id=i, suffix=x) for m, x in models for i in mine["id"]}
    metrics = female_metrics(archive, set(name.values()))
    for model, _ in models:
        theirs = np.array([metrics[name[(model, i)]] > 0.5 for i in mine["id"]])
        rows = known[known["known_model"] == model].set_index("metric")
        expected = {
            "tpr": (theirs[positive].mean(), flagged[positive].mean()),
            "tnr": ((~theirs[~positive]).mean(), (~flagged[~positive]).mean()),
        }
        for rate, (value, own) in expected.items():
            assert rows.loc[rate, "value"] == pytest.approx(value)
            assert rows.loc[rate, "difference"] == pytest.approx(own - value)
            assert rows.loc[rate, "n"] == len(mine)
        balanced = (expected["tpr"][0] + expected["tnr"][0]) / 2
        assert rows.loc["balanced_accuracy", "value"] == pytest.approx(balanced)
    assert (theirs != flagged).any(), "the run and the known model must part somewhere"


def test_the_card_reads_the_known_models_paired(run):
    record = RunResult.load(run.run_dir).record
    references = get_method("sib-detect").audit.references
    row = SimpleNamespace(metric="tpr", labels={"set": "extended"})
    found = references([row], record)
    roberta = next(f for f in found if f["model"].endswith("(roberta-base)"))
    assert "on the sentences this run judged" in roberta["protocol"]
    assert "sentences both judged" in roberta["paired_over"]
    known = pd.read_csv(run.run_dir / "known_models.csv", keep_default_na=False)
    mine = known[(known["known_model"] == "roberta-base") & (known["metric"] == "tpr")].iloc[0]
    assert roberta["difference"] == pytest.approx(mine["difference"])
    # the limit is not a protocol gap when the known models were read on the same sentences
    assert "occupations" not in (roberta["why_not_same"] or "")


def test_without_the_released_outputs_the_run_says_so(tiny_models, tmp_path):
    from tests.conftest import DATA

    done = biaslens.run(
        "sib-detect", str(tiny_models["bert-mlm"]), output=tmp_path / "run", data_dir=DATA,
        limit=1, sets=("extended",), report=False, device="cpu",
    )  # fmt: skip
    assert not (done.run_dir / "known_models.csv").exists()
    assert any("released Method 2 outputs are not in the data folder" in n for n in done.notes)
