"""SIB Methods 1 and 2 on every model class the paper audited, with the defaults and with
``--preset paper``: every stored number recomputed by the naive reference (one forward pass
per input, plain-Python least squares and shares)."""

from __future__ import annotations

import math
from collections import defaultdict

import pandas as pd
import pytest
from scipy import stats
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

import biaslens
from tests.conformance import naive
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
PRESETS = [None, "paper"]
CLOSE = {"rel": 1e-4, "abs": 1e-7}


def load_plain(folder, kind: str, style: str | None):
    """The model and tokenizer straight from transformers (not through biaslens)."""
    loader = AutoModelForSeq2SeqLM if style in ("reconstruct", "sentinel") else LOADERS[kind]
    return loader.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def run(method: str, name: str, preset, tiny_models, tmp_path, **settings):
    kind, style, options = CLASSES[name]
    result = biaslens.run(
        method, str(tiny_models[name]), output=tmp_path / f"{method}-{preset}", preset=preset,
        data_dir=DATA, report=False, device="cpu", batch_size=4, **options, **settings,
    )  # fmt: skip
    model, tokenizer = load_plain(tiny_models[name], kind, style)
    mode = result.settings["mode"]
    steps = result.settings["generation_tokens"]

    def masses(text: str) -> dict[str, float]:
        return naive.pronoun_masses(model, tokenizer, text, kind, mode, style or "mlm", steps)

    return result, masses


def assert_masses(row, expected: dict[str, float]) -> None:
    for gender in naive.GENDERS:
        assert row[f"p_{gender}"] == pytest.approx(expected[gender], **CLOSE), (gender, row)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", CLASSES)
def test_sib_mgc_numbers_recomputed(name, preset, tiny_models, tmp_path):
    result, masses = run(
        "sib-mgc", name, preset, tiny_models, tmp_path, w_kinds=("dates",), limit=1
    )
    kind = CLASSES[name][0]
    expected_prompts = ("A", "B", "C") if preset == "paper" and kind != "masked" else None
    if kind == "masked":
        expected_prompts = ("mask",)
    if expected_prompts is not None:
        assert tuple(result.settings["prompts"]) == expected_prompts
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert len(samples) == 30 * len(result.settings["prompts"])
    # the stored masses equal the naive ones (to float32 noise); the fits are then recomputed
    # from them with plain arithmetic, tightly (slopes of a random model are tiny, and noise of
    # 1e-7 in a mass would otherwise swamp them)
    by_w = defaultdict(lambda: defaultdict(list))
    for row in samples.to_dict("records"):
        assert_masses(row, masses(row["input"]))
        for gender in naive.GENDERS:
            by_w[(row["prompt"], gender)][row["w_index"]].append(row[f"p_{gender}"] * 100)
    fits = pd.read_csv(result.run_dir / "fits.csv")
    slopes = pd.read_csv(result.run_dir / "slopes.csv").set_index("prompt")
    t = stats.t.ppf(0.975, 30 - 2)
    for fit in fits.to_dict("records"):
        points = by_w[(fit["prompt"], fit["gender"])]
        x = sorted(points)
        y = [sum(points[i]) / len(points[i]) for i in x]
        line = naive.ols([float(i) for i in x], y)
        assert fit["slope"] == pytest.approx(line["slope"], rel=1e-6, abs=1e-12)
        assert fit["intercept"] == pytest.approx(line["intercept"], rel=1e-6, abs=1e-12)
        assert fit["r2"] == pytest.approx(line["r2"], rel=1e-6, abs=1e-12, nan_ok=True)
        assert fit["slope_stderr"] == pytest.approx(line["stderr"], rel=1e-6, abs=1e-12)
        assert fit["slope_ci_high"] == pytest.approx(
            line["slope"] + t * line["stderr"], rel=1e-6, abs=1e-12
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


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", CLASSES)
def test_sib_detect_numbers_recomputed(name, preset, tiny_models, tmp_path):
    # the authors' Simplified file (the preset's) is a download; biaslens's set stands in
    result, masses = run(
        "sib-detect", name, preset, tiny_models, tmp_path, limit=1, sets=("extended", "simplified")
    )
    eps = 1e-5 if result.settings["empty_mass"] == "zero" else 0.0
    assert (preset == "paper") == (eps > 0) == (result.settings["date_format"] == "colon")
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    shares = defaultdict(dict)
    for row in samples.to_dict("records"):
        assert_masses(row, masses(row["input"]))
        stored = {g: row[f"p_{g}"] for g in naive.GENDERS}
        shares[(row["set"], row["id"])][row["end"]] = naive.female_share(stored, eps)
    sentences = pd.read_parquet(result.run_dir / "sentences.parquet")
    assert len(sentences) == len(shares) == 11  # 8 extended + 3 simplified, one occupation
    counts = defaultdict(lambda: defaultdict(int))
    for row in sentences.to_dict("records"):
        share = shares[(row["set"], row["id"])]
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


@pytest.mark.slow
def test_sib_mgc_on_smollm2_recomputed(tmp_path):
    """The default model (a real causal LM), exact scoring: the same naive recomputation."""
    from biaslens.models.offline import converted_smollm2

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
