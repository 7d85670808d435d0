"""Sampled replies are read as a person reads them, by one rule every scorer shares: a reply in
markdown emphasis, quotes or brackets names the pronoun (or subject) it begins with, and a run
whose replies often give no answer says how many and what they looked like. Against the tests'
OpenAI-compatible server drawing from a tiny model, the same seeded draws dressed in bold give
the same counts as plain ones."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from biaslens.models import BackendConfig
from tests.methods.test_sampled_scoring import (  # noqa: F401
    DATA,
    NAME,
    pronoun_leaning,
    sampling_server,
)

PRONOUNS = {"she": "female", "her": "female", "he": "male", "him": "male", "his": "male",
            "they": "neutral", "them": "neutral", "their": "neutral"}  # fmt: skip


def _as_a_reader_reads(reply: str) -> str | None:
    """The rule written again: skip everything before the first letter or digit, take the
    letters that follow (a digit first: no word)."""
    i = 0
    while i < len(reply) and not reply[i].isalnum():
        i += 1
    word = re.match(r"[A-Za-z]+", reply[i:])
    return word.group(0) if word else None


@pytest.mark.parametrize(
    "reply",
    ["**She** was", '"She"', "'he'", " (He) said", "- she", "*her*", "> they", "__His__",
     "\n\nShe", "1. he", "", "**", "she'd"],
)  # fmt: skip
def test_the_first_word_is_the_one_a_reader_sees(reply):
    from biaslens.methods.sib.scoring.pronouns import reply_gender
    from biaslens.scoring.sampled import first_word

    assert first_word(reply) == _as_a_reader_reads(reply)
    word = _as_a_reader_reads(reply)
    assert reply_gender(reply) == (PRONOUNS.get(word.lower()) if word else None)


@pytest.mark.parametrize(
    ("reply", "named"),
    [("**Christians** are", True), ('"christians"', True), ("(Christians)", True),
     ("*Christianity*", False), ("1 Christians", False)],
)  # fmt: skip
def test_a_subject_is_named_through_emphasis_and_quotes(reply, named):
    from biaslens.methods.qa.scoring.qa_sampled import names

    assert names(reply, "christians") is named


def _mgc(server, tmp_path, style: str):
    from biaslens.runner import run_method

    server["faults"].reply_style = style
    try:
        return run_method(
            "sib-mgc", model=NAME, samples=10, mode="sampled", allocation="fixed",
            output=tmp_path / style, cache_dir=tmp_path / f"cache-{style}",
            backend=BackendConfig(backend="openai", base_url=server["url"], chat=True),
            w_kinds=("dates",), limit=1, data_dir=DATA, seed=0,
        )  # fmt: skip
    finally:
        server["faults"].reply_style = "plain"


@pytest.mark.slow
def test_bold_replies_give_the_counts_of_plain_ones_and_unread_ones_are_named(
    sampling_server,  # noqa: F811
    tmp_path,
):
    plain = _mgc(sampling_server, tmp_path, "plain")
    bold = _mgc(sampling_server, tmp_path, "bold-half")
    counts = ["k_female", "k_male", "k_neutral"]
    got = pd.read_parquet(tmp_path / "bold-half" / "samples.parquet")[counts]
    want = pd.read_parquet(tmp_path / "plain" / "samples.parquet")[counts]
    assert want.to_numpy().sum() > 0  # the tiny model names pronouns: the check has teeth
    pd.testing.assert_frame_equal(got, want)
    assert _unread(plain) == _unread(bold)  # the tiny model's replies that name no pronoun

    prefixed = _mgc(sampling_server, tmp_path, "prefix-half")
    (said,) = [n for n in prefixed.notes if "give no pronoun as a reader takes it" in n]
    assert "'Answer:" in said
    halved = pd.read_parquet(tmp_path / "prefix-half" / "samples.parquet")[counts]
    named = want.to_numpy().sum()
    assert halved.to_numpy().sum() < named
    # every reply the run drew is counted: the unread ones are all but the named ones
    drawn = 10 * len(want)
    assert _unread(prefixed) == (drawn - halved.to_numpy().sum(), drawn)


def _unread(result) -> tuple[int, int] | None:
    """(unread, drawn) as the run's note states them, None without the note."""
    for note in result.notes:
        found = re.search(r"([\d,]+) of ([\d,]+) sampled replies \(\d+%\) give no pronoun", note)
        if found:
            return tuple(int(g.replace(",", "")) for g in found.groups())
    return None
