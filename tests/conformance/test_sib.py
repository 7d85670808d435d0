"""SIB Methods 1 and 2 on every model class the paper audited, with the defaults and with
``--preset paper``: every stored number recomputed by the naive reference (one forward pass
per input, plain-Python least squares and shares)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

import biaslens
from tests.conformance import naive
from tests.conformance.leaning import leaning_copy
from tests.conftest import DATA

CLASSES = {
    # name: (model kind, slot style, backend options)
    "bert-mlm": ("masked", "mlm", {}),
    "roberta-mlm": ("masked", "mlm", {}),
    "bart": ("masked", "reconstruct", {}),
    "t5-denoiser": ("masked", "sentinel", {"model_kind": "masked"}),
    "llama": ("causal", None, {}),
    "t5": ("seq2seq", None, {}),
}
LOADERS = {
    "masked": AutoModelForMaskedLM,
    "causal": AutoModelForCausalLM,
    "seq2seq": AutoModelForSeq2SeqLM,
}
CLOSE = {"rel": 1e-4, "abs": 1e-7}


VARIANTS = {
    # name: (preset, settings): the defaults, the paper preset, and top-5 scoring with the
    # default handling of sentences without pronoun mass (the zero-mass path)
    "exact": (None, {}),
    "paper": ("paper", {}),
    "top5": (None, {"mode": "paper"}),
}
MIN_SHARE_WITH_MASS = 0.2
"""Top-5 scoring must see pronouns in at least this share of inputs: no 0 compared with 0."""

LEANING_FRAME = dict(limit=1, seed=2)
"""--limit 1 keeps one sentence frame at every date; seed 2 draws a frame the leaning models
rank pronouns on at half the dates (conftest: every 8th MGC sentence, every 24th prompted)."""


def load_plain(folder, kind: str, style: str | None):
    """The model and tokenizer straight from transformers (not through biaslens)."""
    loader = AutoModelForSeq2SeqLM if style in ("reconstruct", "sentinel") else LOADERS[kind]
    return loader.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def run(method: str, name: str, variant: str, models, tmp_path, **settings):
    """A biaslens run on the tiny model ``name`` (its pronoun-leaning copy where there is one)
    and the naive masses of any input text."""
    kind, style, options = CLASSES[name]
    preset, more = VARIANTS[variant]
    result = biaslens.run(
        method, str(models[name]), output=tmp_path / f"{method}-{variant}", preset=preset,
        data_dir=DATA, report=False, device="cpu", batch_size=4, **options, **more, **settings,
    )  # fmt: skip
    model, tokenizer = load_plain(models[name], kind, style)
    mode = result.settings["mode"]
    # App. G: greedy decoding of up to 20 tokens; the reference code's Method 1 used 10
    # (GPT_NUM_TOKS = 20 if UNDERSP_METRIC else 10), which the preset restores
    steps = 10 if (method, preset) == ("sib-mgc", "paper") else 20
    assert result.settings["generation_tokens"] == steps

    def masses(text: str) -> dict[str, float]:
        return naive.pronoun_masses(model, tokenizer, text, kind, mode, style or "mlm", steps)

    return result, masses


def assert_masses(row, expected: dict[str, float]) -> None:
    for gender in naive.GENDERS:
        assert row[f"p_{gender}"] == pytest.approx(expected[gender], **CLOSE), (gender, row)


def with_mass(expected: list[dict[str, float]]) -> float:
    """The share of inputs whose naive masses hold any pronoun probability."""
    return sum(sum(m.values()) > 0 for m in expected) / len(expected)


def check_mgc(result, masses, kind: str) -> float:
    """Every input rebuilt from Appendix D's text, every mass and fit recomputed; returns the
    share of inputs with pronoun mass."""
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert len(samples) == 30 * len(result.settings["prompts"])
    assert sorted(set(samples["w"])) == sorted(naive.MGC_DATES)
    by_w = defaultdict(lambda: defaultdict(list))
    expected = []
    for row in samples.to_dict("records"):
        sentence = naive.MGC_TEMPLATE.format(
            w=row["w"], verb=row["verb"], life_stage=row["life_stage"]
        )
        text = naive.prompted(sentence, None if kind == "masked" else row["prompt"])
        assert row["input"] == text
        expected.append(masses(text))
        # the stored masses equal the naive ones (to float32 noise); the fits are then
        # recomputed from them with plain arithmetic, tightly (slopes of a random model are
        # tiny, and noise of 1e-7 in a mass would otherwise swamp them)
        assert_masses(row, expected[-1])
        for gender in naive.GENDERS:
            by_w[(row["prompt"], gender)][naive.MGC_DATES.index(row["w"])].append(
                row[f"p_{gender}"] * 100
            )
    fits = pd.read_csv(result.run_dir / "fits.csv")
    slopes = pd.read_csv(result.run_dir / "slopes.csv").set_index("prompt")
    for fit in fits.to_dict("records"):
        points = by_w[(fit["prompt"], fit["gender"])]
        x = sorted(points)
        y = [sum(points[i]) / len(points[i]) for i in x]
        line = naive.ols([float(i) for i in x], y)
        assert fit["slope"] == pytest.approx(line["slope"], rel=1e-6, abs=1e-12)
        assert fit["intercept"] == pytest.approx(line["intercept"], rel=1e-6, abs=1e-12)
        assert fit["r2"] == pytest.approx(line["r2"], rel=1e-6, abs=1e-12, nan_ok=True)
        assert fit["slope_stderr"] == pytest.approx(line["stderr"], rel=1e-6, abs=1e-12)
        # the interval is biaslens's own (tests/statistics checks its coverage): around the slope
        assert fit["slope_ci_low"] <= fit["slope"] <= fit["slope_ci_high"] or isinstance(
            fit.get("slope_ci_note"), str
        )
    for prompt, row in slopes.iterrows():
        female = fits[(fits.prompt == prompt) & (fits.gender == "female")].iloc[0]
        male = fits[(fits.prompt == prompt) & (fits.gender == "male")].iloc[0]
        assert row["female_minus_male_slope"] == pytest.approx(
            female["slope"] - male["slope"], abs=1e-12
        )
        defined = [r for r in (female["r2"], male["r2"]) if not math.isnan(r)]
        assert row["flat_fits"] == 2 - len(defined)
        assert row["mean_r2"] == pytest.approx(
            sum(defined) / len(defined) if defined else math.nan, abs=1e-12, nan_ok=True
        )
    return with_mass(expected)


@pytest.mark.parametrize("variant", ["exact", "paper"])
@pytest.mark.parametrize("name", CLASSES)
def test_sib_mgc_numbers_recomputed(name, variant, leaning_models, tmp_path):
    result, masses = run("sib-mgc", name, variant, leaning_models, tmp_path, w_kinds=("dates",),
                         **LEANING_FRAME)  # fmt: skip
    kind = CLASSES[name][0]
    if kind == "masked":
        assert tuple(result.settings["prompts"]) == ("mask",)
    elif variant == "paper":
        assert tuple(result.settings["prompts"]) == ("A", "B", "C")
    share = check_mgc(result, masses, kind)
    assert share >= (MIN_SHARE_WITH_MASS if variant == "paper" else 1.0), share


def test_the_mgc_check_fails_when_top_5_scoring_drops_a_pronoun(leaning_models, tmp_path,
                                                                monkeypatch):  # fmt: skip
    """Top-5 scoring that loses the pronoun the model ranks most often (read off an honest
    run, so that the broken rule acts on this machine's numbers whatever its CPU)."""
    import biaslens.methods.sib.scoring.pronouns as scoring

    honest, _ = run("sib-mgc", "bert-mlm", "paper", leaning_models, tmp_path / "honest",
                    w_kinds=("dates",), **LEANING_FRAME)  # fmt: skip
    samples = pd.read_parquet(honest.run_dir / "samples.parquet")
    dropped = max(naive.GENDERS, key=lambda g: (samples[f"p_{g}"] > 0).mean())
    assert (samples[f"p_{dropped}"] > 0).any(), "no pronoun among the top 5 anywhere"
    rule = scoring.mass_top_k

    def without_one(tokens, probs):
        return {**rule(tokens, probs), dropped: 0.0}

    monkeypatch.setattr(scoring, "mass_top_k", without_one)
    result, masses = run("sib-mgc", "bert-mlm", "paper", leaning_models, tmp_path,
                         w_kinds=("dates",), **LEANING_FRAME)  # fmt: skip
    with pytest.raises(AssertionError, match=dropped):
        check_mgc(result, masses, "masked")


def test_the_mgc_check_fails_when_a_prompt_is_reworded(leaning_models, tmp_path, monkeypatch):
    from biaslens.methods.sib.data import mgc

    template, slot = mgc.PROMPTS["B"]
    monkeypatch.setitem(mgc.PROMPTS, "B", (template.replace("missing", "absent"), slot))
    result, masses = run("sib-mgc", "llama", "paper", leaning_models, tmp_path,
                         w_kinds=("dates",), **LEANING_FRAME)  # fmt: skip
    with pytest.raises(AssertionError, match="absent"):
        check_mgc(result, masses, "causal")


def date_groups(average_n: int) -> dict[str, list[int]]:
    """The dates of each end: 1901 and 2016, or the first and last N of the reference's grid
    ``np.linspace(1901, 2016, 30).astype(int)``."""
    if average_n == 1:
        return {"earliest": [1901], "latest": [2016]}
    grid = [int(y) for y in np.linspace(1901, 2016, 30).astype(int)]
    return {"earliest": grid[:average_n], "latest": grid[-average_n:]}


def check_detect(result, masses, kind: str, average_n: int = 1) -> tuple[int, int, float]:
    """Every input rebuilt from Section 5's date rule, every share, metric, verdict and rate
    recomputed; returns (sentences with a metric, sentences without, share of inputs with
    pronoun mass)."""
    settings = result.settings
    eps = 1e-5 if settings["empty_mass"] == "zero" else 0.0  # inference.py's EPS
    groups = date_groups(average_n)
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    sentences = pd.read_parquet(result.run_dir / "sentences.parquet")
    text_of = {(r["set"], r["id"]): r["sentence"] for r in sentences.to_dict("records")}
    assert {(r["end"], r["date"]) for r in samples.to_dict("records")} == {
        (end, date) for end, dates in groups.items() for date in dates
    }
    shares = defaultdict(lambda: defaultdict(list))
    expected = []
    for row in samples.to_dict("records"):
        text = naive.dated(text_of[(row["set"], row["id"])], row["date"],
                           settings["date_format"] == "colon")  # fmt: skip
        text = naive.prompted(text, None if kind == "masked" else "A")
        assert row["input"] == text
        expected.append(masses(text))
        assert_masses(row, expected[-1])
        stored = {g: row[f"p_{g}"] for g in naive.GENDERS}
        shares[(row["set"], row["id"])][row["end"]].append(naive.female_share(stored, eps))
    assert len(sentences) == len(shares) == 11  # 8 extended + 3 simplified, one occupation
    counts = defaultdict(lambda: defaultdict(int))
    for row in sentences.to_dict("records"):
        share = {end: sum(v) / len(v) for end, v in shares[(row["set"], row["id"])].items()}
        metric = abs(share["latest"] - share["earliest"])
        if math.isnan(metric):
            assert math.isnan(row["metric"]) and row["verdict"] == "no pronoun predicted"
            counts[row["set"]]["none"] += 1
            continue
        assert row["metric"] == pytest.approx(metric, rel=1e-9, abs=1e-9)
        flagged = metric > 0.5
        assert row["verdict"] == ("unspecified" if flagged else "well-specified")
        truth = "pos" if not row["well_specified"] else "neg"
        counts[row["set"]][truth] += 1
        counts[row["set"]][truth + ("_right" if flagged == (truth == "pos") else "_wrong")] += 1
    rates = pd.read_csv(result.run_dir / "rates.csv").set_index("set")
    for name_, c in counts.items():
        tpr = c["pos_right"] / c["pos"] if c["pos"] else math.nan
        tnr = c["neg_right"] / c["neg"] if c["neg"] else math.nan
        got = rates.loc[name_]
        assert got["tpr"] == pytest.approx(tpr, nan_ok=True)
        assert got["tnr"] == pytest.approx(tnr, nan_ok=True)
        assert got["n_no_pronoun"] == c["none"]
    missing = sum(c["none"] for c in counts.values())
    return len(sentences) - missing, missing, with_mass(expected)


def detect(name, variant, models, tmp_path, **settings):
    # the authors' Simplified file (the preset's) is a download; biaslens's set stands in
    return run("sib-detect", name, variant, models, tmp_path, limit=1,
               sets=("extended", "simplified"), **settings)  # fmt: skip


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", CLASSES)
def test_sib_detect_numbers_recomputed(name, variant, leaning_models, tmp_path):
    result, masses = detect(name, variant, leaning_models, tmp_path)
    assert (variant == "paper") == (result.settings["empty_mass"] == "zero")
    assert (variant == "paper") == (result.settings["date_format"] == "colon")
    _, _, share = check_detect(result, masses, CLASSES[name][0])
    assert share >= (1.0 if variant == "exact" else MIN_SHARE_WITH_MASS), share


@pytest.mark.parametrize("name", ["bert-mlm", "bart"])
def test_sentences_without_pronoun_mass_end_to_end(name, tiny_models, tmp_path):
    """Top-5 scoring where some sentences have no pronoun among the top 5 at a date: they get
    no metric and no verdict, and the others are scored. Copies rank the pronouns among the
    top 5 for a share of this run's own inputs (an output-bias shift read off them); the first
    share that leaves sentences of both kinds is checked."""
    first, _ = detect(name, "top5", tiny_models, tmp_path / "plain")
    inputs = list(pd.read_parquet(first.run_dir / "samples.parquet")["input"])
    outcomes = []
    for share in (0.5, 0.35, 0.65, 0.2, 0.8):
        folder = tmp_path / f"leaning-{share}"
        models = {name: leaning_copy(tiny_models[name], folder, CLASSES[name][1], [inputs], share)}
        result, masses = detect(name, "top5", models, folder)
        outcomes.append(check_detect(result, masses, "masked")[:2])
        if min(outcomes[-1]) >= 1:
            break
    scored, missing = outcomes[-1]
    assert scored >= 1 and missing >= 1, outcomes


@pytest.mark.parametrize("name", ["roberta-mlm", "llama"])
def test_average_n_recomputed(name, leaning_models, tmp_path):
    result, masses = detect(name, "paper", leaning_models, tmp_path, average_n=3)
    check_detect(result, masses, CLASSES[name][0], average_n=3)


def test_the_detect_check_fails_when_the_date_keeps_the_capital(leaning_models, tmp_path,
                                                                monkeypatch):  # fmt: skip
    import biaslens.methods.sib.detect.sentences as sib_detect

    monkeypatch.setattr(sib_detect, "inject_date", lambda s, date, _: f"In {date}, {s}")
    result, masses = detect("roberta-mlm", "exact", leaning_models, tmp_path)
    with pytest.raises(AssertionError, match="In 1901, The"):
        check_detect(result, masses, "masked")


def test_the_average_n_check_fails_when_the_grid_is_rounded(leaning_models, tmp_path,
                                                            monkeypatch):  # fmt: skip
    from biaslens.methods.sib.data import mgc

    cut = mgc.year_grid
    monkeypatch.setattr(mgc, "year_grid", lambda a, b, n, rounded=False: cut(a, b, n, True))
    result, masses = detect("roberta-mlm", "paper", leaning_models, tmp_path, average_n=3)
    with pytest.raises(AssertionError):
        check_detect(result, masses, "masked", average_n=3)


@pytest.mark.slow
def test_sib_mgc_on_smollm2_recomputed(tmp_path):
    """The default model (a real causal LM), exact scoring: the same naive recomputation."""
    from biaslens.models.checkpoints.packaged import converted_smollm2

    folder = converted_smollm2()
    result = biaslens.run(
        "sib-mgc", "default", output=tmp_path / "run", w_kinds=("dates",), limit=1,
        report=False, device="cpu",
    )  # fmt: skip
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert len(samples) == 30
    for row in samples.to_dict("records")[::3]:
        assert_masses(row, naive.pronoun_masses(model, tokenizer, row["input"], "causal", "exact"))
