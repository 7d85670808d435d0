"""UnQover and lei-eval by sampled scoring, end to end, against a model whose answer
distribution is known: one stand-in answers ``choice_logprobs`` with it exactly (generative
scoring), another only draws replies from it (an endpoint without log-probabilities). The
sampled runs choose sampled scoring themselves, and their intervals hold the exact runs'
μ; the truth is written here, not read from biaslens."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pytest

from biaslens.models.base import LM, Exactness, ModelIdentity, ModelKind
from biaslens.models.requests import (
    ChoiceLogprobsResult,
    RequestType,
    SampleResult,
)
from biaslens.runner import run_method
from tests.conftest import DATA

NAMED = 0.7
"""Share of replies that begin with one of the two subjects (the rest: "I cannot say.")."""


def lean(subject: str) -> float:
    """A subject's leaning, from −1 to 1: a fixed draw per subject name."""
    return (hashlib.sha256(subject.encode()).digest()[0] % 9 - 4) / 4


def subjects_of(prompt: str) -> tuple[str, str, str]:
    first, second = re.search(r"\(a\) (.*) \(b\) (.*)\n", prompt).groups()
    return first.strip(), second.strip(), prompt.splitlines()[0]


def share_first(prompt: str) -> float:
    """S of the first candidate: a logistic in the subjects' leanings, turned one way or the
    other by the question (a fixed draw per question, so that an attribute and its opposite
    may pull apart)."""
    first, second, question = subjects_of(prompt)
    turn = 1.0 if hashlib.sha256(question.encode()).digest()[0] % 2 else -1.0
    return 1 / (1 + math.exp(-2 * turn * (lean(first) - lean(second))))


class Known(LM):
    """The known model, answering one request type: ``choice_logprobs`` (its exact
    probabilities) or ``sample`` (replies drawn from them)."""

    def __init__(self, answers: RequestType) -> None:
        self.answers = answers
        self.identity = ModelIdentity("known", ModelKind.CAUSAL, f"known-{answers.value}-v1",
                                      backend="test")  # fmt: skip

    @property
    def capabilities(self):
        return {self.answers: Exactness.EXACT}

    def choice_logprobs(self, requests, progress=None):
        results = []
        for r in requests:
            s = share_first(r.prompt)
            # the choices are (" x1", "x1", " x2", "x2"): half the mass to each spelling
            probs = [NAMED * s / 2] * 2 + [NAMED * (1 - s) / 2] * 2
            results.append(ChoiceLogprobsResult(tuple(math.log(p) for p in probs),
                                                (1,) * len(probs)))  # fmt: skip
        return self._done(results, progress)

    def sample(self, requests, progress=None):
        results = []
        for r in requests:
            first, second, _ = subjects_of(r.prompt)
            s = share_first(r.prompt)
            digest = hashlib.sha256(f"{r.seed}\0{r.prompt}".encode()).digest()
            rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
            picks = rng.choice(3, size=r.samples, p=[NAMED * s, NAMED * (1 - s), 1 - NAMED])
            texts = [(f" {first.capitalize()}.", f"{second} it was", "I cannot say.")[i]
                     for i in picks]  # fmt: skip
            results.append(SampleResult(tuple(texts)))
        return self._done(results, progress)

    @staticmethod
    def _done(results, progress):
        if progress is not None:
            progress(len(results))
        return results


EXACT, SAMPLED = RequestType.CHOICE_LOGPROBS, RequestType.SAMPLE


@pytest.mark.slow
def test_unqover_sampled_intervals_hold_the_exact_mu(tmp_path):
    common = dict(model="known", limit=300, data_dir=DATA, cache_dir=tmp_path / "cache",
                  report=False)  # fmt: skip
    exact = run_method("unqover", lm=Known(EXACT), output=tmp_path / "exact", **common)
    sampled = run_method("unqover", lm=Known(SAMPLED), output=tmp_path / "sampled", samples=50,
                         **common)  # fmt: skip
    assert exact.settings["mode"] == "generative" and sampled.settings["mode"] == "sampled"
    truth = exact.tables["unqover"].iloc[0]
    row = sampled.tables["unqover"].iloc[0]
    assert truth["mu"] > 0.05  # the model leans: no 0-vs-0
    for metric in ("mu", "theta4"):
        assert row[f"{metric}_ci_low"] <= truth[metric] <= row[f"{metric}_ci_high"], metric
    said = next(n for n in sampled.notes if n.startswith("scoring: sampled"))
    found = re.search(r"([\d,]+) calls against fixed K's ([\d,]+)", said)
    calls, fixed = (int(t.replace(",", "")) for t in found.groups())
    drawn = sampled.samples["samples"]  # replies per question, as the allocation gave them
    assert "adaptive allocation matched to K = 50" in said
    assert drawn.min() >= 10 and drawn.max() <= 100  # the pilot, twice K
    assert calls == int(np.ceil(drawn / 10).sum()) <= fixed == 5 * len(drawn)


@pytest.mark.slow
def test_lei_eval_sampled_intervals_hold_the_exact_mu(tmp_path):
    common = dict(model="known", domain="religion", split="noniid_dev", data_dir=DATA,
                  cache_dir=tmp_path / "cache", report=False)  # fmt: skip
    exact = run_method("lei-eval", lm=Known(EXACT), output=tmp_path / "exact", **common)
    sampled = run_method("lei-eval", lm=Known(SAMPLED), output=tmp_path / "sampled",
                         samples=50, **common)  # fmt: skip
    assert sampled.settings["mode"] == "sampled"
    truth = exact.tables["lei_mu"].set_index("set")
    table = sampled.tables["lei_mu"].set_index("set")
    assert (table["scoring"] == "sampled, K = 50, adaptive").all()
    assert truth["mu"].max() > 0.05
    for name, row in table.iterrows():
        assert row["mu_ci_low"] <= truth.loc[name, "mu"] <= row["mu_ci_high"], name
