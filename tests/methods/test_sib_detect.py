"""SIB Method 2 end to end on tiny models; injection text; metric wiring."""

import numpy as np
import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.sib.data.mgc import inject_date
from biaslens.methods.sib.detect.method import (
    date_groups,
    make_settings,
    sentence_metrics,
)
from biaslens.models import BackendConfig
from tests.helpers import run_detect

from ..conftest import DATA

CPU = BackendConfig(device="cpu", batch_size=16)


def test_date_injection_text():
    assert inject_date("The doctor told the man that [MASK] would be late.", 1901) == (
        "In 1901, the doctor told the man that [MASK] would be late."
    )
    assert (
        inject_date("Someone met with the accountant.", 2016)
        == "In 2016, someone met with the accountant."
    )


def test_date_groups():
    assert date_groups(make_settings()) == {"earliest": (1901,), "latest": (2016,)}
    groups = date_groups(make_settings(average_n=2, grid_size=5))
    # linspace(1901, 2016, 5) = 1901, 1929.75, 1958.5, 1987.25, 2016, cut to whole years as the
    # reference code does (astype(int))
    assert groups == {"earliest": (1901, 1929), "latest": (1987, 2016)}
    with pytest.raises(BiaslensError, match="invalid average_n"):
        make_settings(average_n=20, grid_size=30)
    with pytest.raises(BiaslensError, match="latest date must be after"):
        make_settings(earliest=2000, latest=1990)


def _scored(ids, ends, p_female, p_male) -> pd.DataFrame:
    """Scored rows of the extended set: each sentence's masses at its dates (none neutral)."""
    return pd.DataFrame(
        {"set": "extended", "id": ids, "end": ends, "p_female": p_female, "p_male": p_male,
         "p_neutral": 0.0}
    )  # fmt: skip


def test_sentence_metrics_keep_genders_separate():
    sentences = pd.DataFrame(
        {"set": ["extended"] * 2, "id": ["a", "b"], "well_specified": [True, False]}
    )
    scored = _scored(
        ["a", "a", "b", "b"], ["earliest", "latest"] * 2, [0.1, 0.1, 0.1, 0.3], [0.3, 0.3, 0.3, 0.1]
    )
    table = sentence_metrics(sentences, scored, 0.5).set_index("id")
    assert table.loc["a", "metric"] == pytest.approx(0.0)
    assert table.loc["b", "pct_female_earliest"] == pytest.approx(25.0)
    assert table.loc["b", "pct_female_latest"] == pytest.approx(75.0)
    assert table.loc["b", "metric"] == pytest.approx(50.0)
    assert list(table["predicted_unspecified"]) == [False, True]
    assert table.loc["b", "p_male_latest"] == pytest.approx(0.1)


def test_average_n_averages_the_per_date_shares():
    """Earliest dates: 0.1/0.4 = 25% and 0.6/0.8 = 75% -> mean share 50%; latest: 50% and 50%.
    The metric is |50 − 50| = 0 (the share of the summed masses, 0.7/1.2 = 58.3%, would give
    8.33 and flag the sentence)."""
    sentences = pd.DataFrame({"set": ["extended"], "id": ["a"], "well_specified": [True]})
    scored = _scored(
        ["a"] * 4,
        ["earliest", "earliest", "latest", "latest"],
        [0.1, 0.6, 0.5, 0.2],
        [0.3, 0.2, 0.5, 0.2],
    )
    row = sentence_metrics(sentences, scored, 0.5).iloc[0]
    assert row["pct_female_earliest"] == pytest.approx(50.0)
    assert row["pct_female_latest"] == pytest.approx(50.0)
    assert row["metric"] == pytest.approx(0.0, abs=1e-12)
    assert row["verdict"] == "well-specified"


def _empty_at_latest():
    sentences = pd.DataFrame(
        {"set": ["extended"] * 2, "id": ["a", "b"], "well_specified": [False, True]}
    )
    scored = _scored(
        ["a", "a", "b", "b"], ["earliest", "latest"] * 2, [0.2, 0.0, 0.1, 0.1], [0.2, 0.0, 0.3, 0.3]
    )
    return sentences, scored


def test_no_pronoun_mass_is_reported_not_misclassified():
    sentences, scored = _empty_at_latest()
    table = sentence_metrics(sentences, scored, 0.5).set_index("id")
    assert np.isnan(table.loc["a", "metric"]) and table.loc["a", "no_pronoun"]
    assert table.loc["a", "verdict"] == "no pronoun predicted"
    assert not table.loc["a", "predicted_unspecified"]
    assert table.loc["b", "verdict"] == "well-specified"


def test_no_pronoun_mass_under_the_reference_rule_is_a_share_of_zero():
    sentences, scored = _empty_at_latest()
    table = sentence_metrics(sentences, scored, 0.5, empty_mass="zero").set_index("id")
    # inference.py: masses in percent, earliest 20 / (40 + 1e-5) * 100, latest 0 / 1e-5 = 0
    expected = 20 / (40 + 1e-5) * 100
    assert table.loc["a", "pct_female_latest"] == 0.0
    assert table.loc["a", "metric"] == pytest.approx(expected)
    assert table.loc["a", "verdict"] == "unspecified"


def test_a_sentence_without_pronouns_is_shown_as_such_in_the_table_and_the_plot():
    import matplotlib.pyplot as plt

    from biaslens.methods.sib.detect.method import occupation_views
    from biaslens.methods.sib.plots import detector_figure

    sentences, scored = _empty_at_latest()
    table = sentence_metrics(sentences, scored, 0.5)
    table = table.assign(occupation="nurse", sentence=["A", "B"], bls_pct_female=90.0)
    [(_, view, columns)] = occupation_views({"sentences": table}, {"show_occupation": ["nurse"]})
    assert view.set_index("id").loc["a", "verdict"] == "no pronoun predicted"
    figure = detector_figure(table, 0.5, "detector")
    assert "1 of 2 sentences not shown: no pronoun predicted" in figure.axes[0].get_title()
    plt.close(figure)


@pytest.mark.parametrize("name", ["bert-mlm", "llama"])
def test_detector_end_to_end(name, tiny_models, tmp_path):
    settings = make_settings(model=str(tiny_models[name]), limit=3)
    result = run_detect(settings, tmp_path / "run", CPU, data_dir=DATA)
    # first 3 occupations (accountant, administrator, advisor): 3 x 8 extended + 3 x 3 simplified
    assert result.sentences.groupby("set").size().to_dict() == {"extended": 24, "simplified": 9}
    for column in ("p_female_earliest", "p_male_latest", "p_neutral_latest", "metric"):
        assert column in result.sentences
    rates = result.rates.set_index("set")
    extended = result.sentences[result.sentences.set == "extended"]
    expected_tpr = (extended.loc[~extended.well_specified, "metric"] > 0.5).mean()
    assert rates.loc["extended", "tpr"] == pytest.approx(expected_tpr)
    assert rates.loc["extended", "n_well_specified"] == 6
    assert rates.loc["extended", "n_unspecified"] == 18
    assert rates.loc["simplified", "n_well_specified"] == 6
    for file in (
        "sentences.parquet",
        "samples.parquet",
        "rates.csv",
        "summary.json",
        "plots/detector_extended.png",
        "plots/detector_simplified.png",
    ):
        assert (tmp_path / "run" / file).is_file()
    again = run_detect(settings, tmp_path / "run", CPU, data_dir=DATA)
    assert again.cache_stats["computed"] == 0


def test_the_interval_level_is_a_setting_recorded_with_each_estimate(tiny_models, tmp_path):
    import json

    model = str(tiny_models["bert-mlm"])
    wide = run_detect(make_settings(model=model, limit=2), tmp_path / "a", CPU, data_dir=DATA)
    settings = make_settings(model=model, limit=2, ci_level=0.8)
    narrow = run_detect(settings, tmp_path / "b", CPU, data_dir=DATA)
    assert narrow.cache_stats["computed"] == 0  # the same requests: only the level differs
    for result in (wide, narrow):
        rates = result.rates.set_index("set")
        assert (rates["tpr_ci_low"] <= rates["tpr"]).all()
    width = {
        name: (r.rates["tnr_ci_high"] - r.rates["tnr_ci_low"]).to_numpy()
        for name, r in (("wide", wide), ("narrow", narrow))
    }
    assert (width["narrow"] < width["wide"]).all()
    estimates = json.loads((tmp_path / "b" / "summary.json").read_text())["estimates"]
    assert {e["ci_level"] for e in estimates if e["ci_low"] is not None} == {0.8}
    # each set's rates say which set they are (two sets, three rates each)
    labelled = sorted((e["labels"]["set"], e["metric"]) for e in estimates)
    assert labelled == sorted(
        (s, m) for s in ("extended", "simplified") for m in ("tpr", "tnr", "balanced_accuracy")
    )


def test_detector_bad_inputs(tiny_models, tmp_path):
    with pytest.raises(BiaslensError, match="extractive-QA"):
        run_detect(
            make_settings(model=str(tiny_models["roberta-qa"])), tmp_path, CPU, data_dir=DATA
        )
    (tmp_path / "empty").mkdir()  # a data folder without the dataset
    with pytest.raises(BiaslensError, match="datasets download winogender"):
        run_detect(
            make_settings(model=str(tiny_models["llama"])),
            tmp_path / "o",
            CPU,
            data_dir=tmp_path / "empty",
        )


def test_occupation_missing_from_stats_is_a_clear_error(tiny_models, tmp_path):
    import shutil

    folder = tmp_path / "data" / "winogender"
    shutil.copytree(DATA / "winogender", folder)
    stats = (folder / "occupations-stats.tsv").read_text().splitlines()
    (folder / "occupations-stats.tsv").write_text(
        "\n".join(line for line in stats if not line.startswith("doctor\t")) + "\n"
    )
    with pytest.raises(
        BiaslensError,
        match=r"occupations-stats.tsv: no statistics for occupation\(s\) \['doctor'\]",
    ):
        run_detect(
            make_settings(model=str(tiny_models["llama"])),
            tmp_path / "o",
            CPU,
            data_dir=tmp_path / "data",
        )
    assert not (tmp_path / "o").exists()


def test_threshold_must_not_be_negative():
    with pytest.raises(BiaslensError, match="invalid threshold"):
        make_settings(threshold=-0.1)


def test_date_grid_needs_two_values():
    with pytest.raises(BiaslensError, match="invalid grid_size"):
        make_settings(grid_size=1)
    with pytest.raises(BiaslensError, match="latest date must be after"):
        make_settings(earliest=1950, latest=1950)


def test_colon_date_format_and_full_grid_sweep(tiny_models, tmp_path):
    from biaslens.methods.sib.data.mgc import inject_date

    assert inject_date("The nurse left.", 1901, "colon") == "In 1901: The nurse left."
    settings = make_settings(
        model=str(tiny_models["bert-mlm"]), limit=1, date_format="colon", grid_size=6,
        sweep=("accountant_man_1",),
    )  # fmt: skip
    result = run_detect(settings, tmp_path / "run", CPU, data_dir=DATA)
    curve = result.date_sweep
    assert list(curve["date"]) == [1901, 1924, 1947, 1970, 1993, 2016]  # linspace cut to years
    shares = curve[["pct_female", "pct_male", "pct_neutral"]].sum(axis=1)
    assert shares.to_numpy() == pytest.approx(100.0)
    # the sweep's end dates are the detector's own
    ends = result["sentences"].set_index("id").loc["accountant_man_1"]
    assert curve["pct_female"].iloc[0] == pytest.approx(ends["pct_female_earliest"])
    assert curve["pct_female"].iloc[-1] == pytest.approx(ends["pct_female_latest"])
    assert (tmp_path / "run" / "plots" / "date_sweep_accountant_man_1.png").is_file()
    samples = pd.read_parquet(tmp_path / "run" / "samples.parquet")
    assert samples["input"].str.startswith("In 1901: ").any()
    with pytest.raises(BiaslensError, match="no sentence with id"):
        run_detect(
            settings.model_copy(update={"sweep": ("nobody_0",)}), tmp_path / "x", CPU, data_dir=DATA
        )


def test_the_paper_preset_scores_top_5_with_the_reference_date_format():
    from biaslens.framework.registry import get_method

    spec = get_method("sib-detect")
    paper = spec.build_settings("paper")
    assert (paper.mode, paper.date_format) == ("paper", "colon")
    assert paper.sets == ("extended", "simplified-reference")  # the authors' Simplified file
    assert spec.build_settings("paper", mode="exact").mode == "exact"  # a value given wins
    default = spec.build_settings()
    assert (default.mode, default.date_format) == ("exact", "comma")


def test_two_detectors_rates_are_paired_over_the_sentences_both_judged(tiny_models, tmp_path):
    """The audit's paired difference of two models' rates equals each rate's difference on the
    sentences both judged, recomputed here from the two runs' sentence tables, with an
    interval around it over the occupations."""
    from biaslens.methods.sib.detect.paired import paired_detector

    folders = {}
    for name in ("bert-mlm", "gpt2"):  # their |Δ| fall on both sides of the threshold
        settings = make_settings(model=str(tiny_models[name]), limit=3)
        folders[name] = tmp_path / name
        run_detect(settings, folders[name], CPU, data_dir=DATA)
    tables = [pd.read_parquet(f / "sentences.parquet") for f in folders.values()]
    a, b = (t[t["set"] == "extended"].set_index("id") for t in tables)
    both = a.index[np.isfinite(a["metric"]) & np.isfinite(b.loc[a.index, "metric"])]
    flag_a, flag_b = a.loc[both, "metric"] > 0.5, b.loc[both, "metric"] > 0.5
    positive = ~a.loc[both, "well_specified"].astype(bool)
    tpr = flag_a[positive].mean() - flag_b[positive].mean()
    tnr = (~flag_a[~positive]).mean() - (~flag_b[~positive]).mean()
    expected = {"tpr": tpr, "tnr": tnr, "balanced_accuracy": (tpr + tnr) / 2}
    assert any(abs(v) > 0.05 for v in expected.values()), expected  # the models differ
    for metric, value in expected.items():
        found = paired_detector(folders["bert-mlm"], folders["gpt2"], {"set": "extended"}, metric)
        assert found["difference"] == pytest.approx(value, abs=1e-12)
        assert found["ci_low"] <= value <= found["ci_high"]
        assert found["n"] == len(both) and "3 occupations" in found["units"]
    assert (
        paired_detector(folders["bert-mlm"], folders["gpt2"], {"set": "extended"}, "n_tpr") is None
    )
