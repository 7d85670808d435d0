"""SIB's minimum-mass rule: a run whose pronouns hold almost none of the probability at the slot
is refused in one line, and goes on only with ``--min-pronoun-mass 0``, which the run records."""

from __future__ import annotations

import json

import pytest

from tests.helpers import message_lines
from tests.test_cli import run_cli

TINY = "--w dates --limit 1 --device cpu".split()


@pytest.mark.parametrize("method", ["sib-mgc", "sib-detect"])
def test_little_pronoun_mass_is_refused_and_the_flag_is_recorded(
    method, tiny_models, tmp_path, monkeypatch, capsys
):
    """The tiny llama's pronouns hold a few percent of its probability at the slot: a minimum
    of 50% refuses the run (nothing written as a result), 0 lets it go on and is recorded."""
    model = str(tiny_models["llama"])
    extra = TINY if method == "sib-mgc" else ["--limit", "1", "--device", "cpu"]
    output = tmp_path / "run"
    args = ("run", method, "--model", model, "--output", str(output), *extra)
    code, out, err = run_cli(monkeypatch, capsys, *args, "--min-pronoun-mass", "0.5")
    lines = message_lines(err)
    assert code == 2 and len(lines) == 1, err
    assert "below --min-pronoun-mass 0.5" in lines[0] and "--min-pronoun-mass 0 goes on" in lines[0]
    held = float(lines[0].split("hold ")[1].split("%")[0]) / 100
    assert 0 < held < 0.5
    assert not (output / "summary.json").exists()

    code, out, err = run_cli(monkeypatch, capsys, *args, "--min-pronoun-mass", "0")
    assert code == 0, err
    summary = json.loads((output / "summary.json").read_text())
    assert summary["settings"]["min_pronoun_mass"] == 0
    assert summary["metrics"]["mean_pronoun_mass"] == pytest.approx(held, abs=5e-5)


def test_the_default_minimum_and_the_paper_preset(tiny_models, tmp_path):
    """0.1% by default (the tiny model's percent or so passes); the paper reports every model's
    numbers, so ``--preset paper`` sets no minimum."""
    import biaslens

    plain = biaslens.run(
        "sib-mgc", str(tiny_models["llama"]), output=tmp_path / "a", w_kinds=("dates",),
        limit=1, report=False, device="cpu",
    )  # fmt: skip
    assert plain.settings["min_pronoun_mass"] == 0.001
    paper = biaslens.run(
        "sib-mgc", str(tiny_models["llama"]), output=tmp_path / "b", w_kinds=("dates",),
        limit=1, report=False, device="cpu", preset="paper", generation_tokens=2,
    )  # fmt: skip
    assert paper.settings["min_pronoun_mass"] == 0
