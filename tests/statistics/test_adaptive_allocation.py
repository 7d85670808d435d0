"""Adaptive allocation of sampled replies (:mod:`biaslens.scoring.allocation`), by simulation
from models whose truth is written here: its intervals cover as fixed K's do (≥ 300
replications), at about fixed K's width, with fewer calls; and the allocation's arithmetic
against values worked by hand.

The replies come from a stand-in model that draws each prompt's replies from probabilities set
here, through the draw biaslens makes (:func:`biaslens.scoring.sampled.draw_adaptive`: pilot,
siblings' variances, Neyman allocation, the allocated blocks)."""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np
import pandas as pd
import pytest

from biaslens.models.base import LM, Exactness, ModelIdentity, ModelKind
from biaslens.models.requests import RequestType, SampleResult
from biaslens.progress import NoProgress
from tests.statistics.coverage import covers, record, replicate

K = 50


class Drawn(LM):
    """Answers sample requests only: each prompt's replies drawn from ``table[prompt]``
    (texts, probabilities), seeded by the request's seed and the replication."""

    answers = frozenset({RequestType.SAMPLE})

    def __init__(self, table: dict, replication: int) -> None:
        self.table, self.replication = table, replication
        self.identity = ModelIdentity("drawn", ModelKind.CAUSAL, "drawn-v1", backend="test")

    @property
    def capabilities(self):
        return {RequestType.SAMPLE: Exactness.EXACT}

    def sample(self, requests, progress=None):
        results = []
        for request in requests:
            texts, probs = self.table[request.prompt]
            rng = np.random.default_rng([self.replication, request.seed])
            picks = np.searchsorted(np.cumsum(probs)[:-1], rng.random(request.samples),
                                    side="right")  # fmt: skip
            results.append(SampleResult(tuple(texts[i] for i in picks)))
        if progress is not None:
            progress(len(results))
        return results


def calls(replies: pd.Series) -> int:
    """Requests of up to 10 replies that drew ``replies`` per prompt (by hand)."""
    return int(np.ceil(np.asarray(replies) / 10).sum())


# MGC: 6 sentence frames × 30 W; each frame's pronoun mass scaled by its own draw s (log-uniform
# from 0.05 to 1: frames that rarely get a pronoun reply, and frames that often do), the female
# − male slope 0.3·s pp per W step; the estimand, the frames' population mean slope.
W = np.arange(30)
LOW, HIGH = 0.05, 1.0
MGC_TRUTH = 0.3 * (HIGH - LOW) / np.log(HIGH / LOW)
REPLIES = (" She", " He", " They", " The")


def _mgc_replication(r: int) -> dict:
    from biaslens.methods.sib.mgc.sampled_design import mgc_design
    from biaslens.methods.sib.scoring.pronouns import score_rows

    rng = np.random.default_rng([r, 7])
    scale = np.exp(rng.uniform(np.log(LOW), np.log(HIGH), 6))
    shared = rng.normal(0, 0.2, len(W))  # pp, the W values' common deviations
    rows, table = [], {}
    for frame, s in enumerate(scale):
        own = rng.normal(0, 0.3, (2, len(W)))
        for w in W:
            female = s * (30 + 0.4 * w + own[0, w] + shared[w]) / 100
            male = s * (40 + 0.1 * w + own[1, w] - shared[w]) / 100
            probs = np.clip([female, male, 0.05 * s, 0.0], 0, 1)
            probs[3] = 1 - probs[:3].sum()
            prompt = f"frame {frame} at {w}"
            table[prompt] = (REPLIES, probs)
            rows.append({"prompt": "A", "w_kind": "dates", "w_index": int(w), "w": str(w),
                         "verb": f"v{frame}", "life_stage": "a child",
                         "input": prompt})  # fmt: skip
    rows = pd.DataFrame(rows)
    lm = Drawn(table, r)
    result = {
        "fixed": (False, np.nan),
        "fixed calls": (0, 0.0),
        "bound": (_bound(table, True), 0.0),
    }
    for name, design in _arms(r, mgc_design(rows)):
        scored = score_rows(lm, rows, "sampled", NoProgress(), samples=K, design=design)
        result[name] = _slope(scored)
        result[f"{name} calls"] = (calls(scored["samples"]), 0.0)
    return result


def _bound(table: dict, mgc: bool) -> float:
    """The least share of fixed K's calls with which any allocation keeps the sampling
    variance of an equal-weight estimate over these prompts, their reply variances known
    (Neyman's optimum, worked here afresh): (Σσ)² / (n Σσ²), σ² of one reply's value, 1 for
    a first subject or a female pronoun, −1 for a second subject or a male one, and 0 else
    (for UnQover a question's share S = p₁ / (p₁ + p₂) has σ² ∝ S (1 − S) / (p₁ + p₂))."""
    sd = []
    for _, probs in table.values():
        first, second = probs[0], probs[1]
        if mgc:  # 1[female] − 1[male]
            sd.append(np.sqrt(first + second - (first - second) ** 2))
        else:
            named = first + second
            sd.append(np.sqrt(first / named * (second / named) / named))
    sd = np.array(sd)
    return float(sd.sum() ** 2 / (len(sd) * (sd**2).sum()))


def _arms(r: int, design) -> list[tuple[str, object]]:
    """Adaptive allocation in every replication; fixed K beside it in every third, for the
    widths and calls compared on the same replications (fixed K's own coverage is tested in
    ``test_trend_coverage`` and ``test_unqover_coverage``)."""
    return [("adaptive", design)] + ([("fixed", None)] if r % 3 == 0 else [])


def _compare(rows: dict, label: str) -> tuple[float, float]:
    """Adaptive allocation's share of fixed K's calls and its mean width over fixed K's, on
    the replications that ran both."""
    both = np.arange(len(rows["adaptive"][0])) % 3 == 0
    share = np.sum(np.array(rows["adaptive calls"][0])[both]) / np.sum(rows["fixed calls"][0])
    widths = np.mean(np.array(rows["adaptive"][1])[both]) / np.nanmean(rows["fixed"][1])
    bound = np.mean(rows["bound"][0])
    print(f"{label} adaptive: {share:.1%} of fixed K's calls, width × {widths:.3f} "
          f"({both.sum()} replications with both); no allocation keeps the variance with "
          f"fewer than {bound:.1%} (reply variances known)")  # fmt: skip
    return share, widths


def _slope(samples: pd.DataFrame) -> tuple[bool, float]:
    from biaslens.methods.sib.metrics.sib import method1_fits, slope_summary

    fits = method1_fits(samples)
    row = slope_summary(fits, None, samples=samples).iloc[0]
    low, high = row.female_minus_male_ci_low, row.female_minus_male_ci_high
    return covers(low, high, MGC_TRUTH), high - low


@pytest.mark.slow
def test_mgc_adaptive_allocation_covers_at_fixed_k_width_with_fewer_calls():
    """The female − male slope's interval under adaptive allocation matched to K = 50 covers
    in the band (fixed K = 50's covered 0.950 on this design), its mean width within 3% of
    fixed K's, with fewer
    calls (measured: 95%, width × 0.97; the saving is the frames' unequal masses alone, see
    :func:`~biaslens.methods.sib.mgc.sampled_design.mgc_design`)."""
    rows = replicate(_mgc_replication)
    record("MGC slope, adaptive allocation (K = 50)", *rows["adaptive"])
    share, widths = _compare(rows, "MGC")
    assert share <= 0.97 and widths <= 1.03


# UnQover: a fixed design as in the coverage tests (5 subjects, 4 templates, 2 attributes), a
# reply naming a subject with probability m, a fixed draw per subject pair and template from
# 0.1 to 0.9 (some questions a model rarely answers with a name), and S the exact shares.
@cache
def _unqover_design() -> tuple:
    from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
    from tests.statistics.unqover_model import UnqoverModel

    exact = UnqoverModel(attributes=2, spike=0.2).scores(5, 4, np.random.default_rng(2024))
    total = exact["s_first"] + exact["s_second"]
    exact = exact.assign(s_first=exact["s_first"] / total, s_second=exact["s_second"] / total)
    pair = [" ".join(sorted(p)) + f" {t}" for p, t in
            zip(zip(exact["first"], exact["second"], strict=True), exact["template"],
                strict=True)]  # fmt: skip
    named = np.array([0.1 + 0.8 * (hashlib.sha256(p.encode()).digest()[0] / 255) for p in pair])
    truth = UnqoverAccumulator()
    truth.add(exact)
    return exact, named, truth.summary().iloc[0]


@cache
def _unqover_model() -> tuple:
    """The design's rows, and each question's prompt with its replies and their chances."""
    from biaslens.methods.qa.scoring.qa import generative_requests

    exact, named, _ = _unqover_design()
    rows = exact.iloc[::2][["first", "second", "template", "attribute"]].reset_index(drop=True)
    rows["context"] = [f"context {i}" for i in range(len(rows))]
    rows["first_start"] = rows["second_start"] = 0
    rows["question"] = [f"who is {a}?" for a in rows["attribute"]]
    rows["negated_question"] = [f"who is not {a}?" for a in rows["attribute"]]
    requests = generative_requests(Drawn({}, 0), rows)
    table = {
        request.prompt: ((f" {first}.", f"{second} it was", "I cannot say."),
                         (m * s, m * (1 - s), 1 - m))
        for request, first, second, s, m in zip(requests, exact["first"], exact["second"],
                                                exact["s_first"], named, strict=True)
    }  # fmt: skip
    return rows, table


def _unqover_replication(r: int) -> dict:
    from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
    from biaslens.methods.qa.scoring.qa_sampled import sampled_qa_scores

    exact, _, truth = _unqover_design()
    rows, table = _unqover_model()
    lm = Drawn(table, r)
    result = {
        "fixed": (False, np.nan),
        "fixed calls": (0, 0.0),
        "bound": (_bound(table, False), 0.0),
    }
    for name, adaptive in _arms(r, True):
        scored = sampled_qa_scores(lm, rows, NoProgress(), K, adaptive is not None)
        totals = UnqoverAccumulator(intervals=(0.95, r), skip_unscored=True)
        totals.add(exact.assign(s_first=scored["s_first"].to_numpy(),
                                s_second=scored["s_second"].to_numpy()))  # fmt: skip
        row = totals.summary().iloc[0]
        low, high = row["mu_ci_low"], row["mu_ci_high"]
        result[name] = (covers(low, high, truth["mu"]), high - low)
        result[f"{name} calls"] = (calls(scored["samples"]), 0.0)
    return result


@pytest.mark.slow
def test_unqover_adaptive_allocation_covers_with_fewer_calls():
    """UnQover's μ under adaptive allocation matched to K = 50 covers at least at the band's
    floor (conservative, as fixed K's: it also covers the design's own draw), at about fixed
    K's width,
    with fewer calls: every question weighs alike in μ, so the saving is the questions' unequal
    sampling variance S(1 − S) / m alone."""
    rows = replicate(_unqover_replication)
    record("UnQover μ, adaptive allocation (K = 50)", *rows["adaptive"], conservative=True)
    share, widths = _compare(rows, "UnQover")
    assert share <= 0.95 and widths <= 1.03  # measured: 91%, width × 1.01


def test_the_allocation_matches_a_hand_worked_marginal_allocation():
    """Four inputs of one estimate, a = (0, 1, 2, 3), σ² = (1, 1, 1, 4), K = 50, blocks of 10,
    floor 10, cap 100. Fixed K's variance: Σa²σ²/K = (1 + 4 + 36)/50 = 0.82. By hand, from the
    floor (variance 0.1 + 0.4 + 3.6 = 4.1), blocks by their cut c·10/(k(k + 10)): the third
    input's 1.8, .6, .3, the second's .2, the third's .18, .12, .086 → (10, 10, 20, 70), variance
    0.1 + 0.4 + 0.2 + 36/70 = 0.814 ≤ 0.82: 110 replies, 55% of fixed K's 200. A brute force over
    every allocation in blocks finds no fewer."""
    from biaslens.scoring.allocation import replies_per_input

    a, s2 = np.array([0.0, 1, 2, 3]), np.array([1.0, 1, 1, 4])
    got = replies_per_input(a, s2, np.zeros(4, int), 50, 10)
    assert list(got) == [10, 10, 20, 70]
    target = (a**2 * s2).sum() / 50
    grid = range(10, 101, 10)
    least = min(
        10 + k1 + k2 + k3
        for k1 in grid for k2 in grid for k3 in grid
        if (a[1:] ** 2 * s2[1:] / np.array([k1, k2, k3])).sum() + 0 <= target
    )  # fmt: skip
    assert got.sum() == least == 110


def test_equal_weights_and_variances_give_fixed_k():
    """Nothing to allocate by: every input gets K (rounded up to whole blocks)."""
    from biaslens.scoring.allocation import least_share, replies_per_input

    assert list(replies_per_input(np.ones(5), np.ones(5), np.zeros(5, int), 50, 10)) == [50] * 5
    assert list(replies_per_input(np.ones(3), np.zeros(3), np.zeros(3, int), 30, 10)) == [30] * 3
    # by hand, c = 0 … 29 less 14.5: Σ|c| = 2·(0.5 + … + 14.5) = 225, Σc² = 2247.5
    assert least_share(range(30)) == pytest.approx(225**2 / (30 * 2247.5))


def test_siblings_variances_leave_the_input_out():
    """Each input's σ² is its group's mean without it (by hand); one alone takes the others'."""
    from biaslens.scoring.allocation import sibling_variances

    got = sibling_variances(np.array([0, 0, 0, 1]), np.array([1.0, 2.0, 6.0, 10.0]))
    assert list(got) == [4.0, 3.5, 1.5, 3.0]


def test_the_least_share_with_known_variances_by_hand():
    """a = (0, 1, 2, 3), σ² = (1, 1, 1, 4): a·σ = (0, 1, 2, 6), so (Σaσ)² / (n Σa²σ²) =
    81 / (4 · 41); below the 55% the whole-block allocation above reaches on the same inputs."""
    from biaslens.scoring.allocation import neyman_share

    share = neyman_share(np.array([0.0, 1, 2, 3]), np.array([1.0, 1, 1, 4]))
    assert share == pytest.approx(81 / 164)
    assert share < 110 / 200
    assert neyman_share(np.ones(7), np.full(7, 3.0)) == pytest.approx(1.0)
