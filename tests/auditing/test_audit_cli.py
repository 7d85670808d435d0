"""``biaslens audit`` on the command line: the plan before any model work, ``--dry-run`` and
``--price``, the card's verdicts printed first after the run, and bad input in one line."""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.conftest import DATA
from tests.test_cli import run_cli


def test_dry_run_prints_the_plan_and_the_cost_and_writes_nothing(
    monkeypatch, capsys, tiny_models, tmp_path
):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        monkeypatch, capsys, "audit", "--model", str(tiny_models["llama"]), "--methods",
        "sib-mgc", "--data-dir", str(DATA), "--dry-run", "--price", "2,4",
    )  # fmt: skip
    assert code == 0, err
    # 15 frames × 50 W, read as biaslens reads them and as the reference code did
    assert "audit plan" in out and "sib-mgc" in out and "1,500" in out
    cost = re.search(r"estimated cost: at most ([\d.,]+) \(([\d,]+) prompt tokens", out)
    assert cost is not None, out
    prompt_tokens = int(cost.group(2).replace(",", ""))
    assert prompt_tokens > 0 and float(cost.group(1)) >= prompt_tokens * 2 / 1e6
    assert "nothing was loaded or sent" in out
    assert not (tmp_path / "audits").exists()


def test_the_run_prints_the_cards_verdicts_and_where_the_card_is(
    monkeypatch, capsys, tiny_models, tmp_path
):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        monkeypatch, capsys, "audit", "-m", str(tiny_models["llama"]), "--methods", "sib-mgc",
        "--data-dir", str(DATA),
    )  # fmt: skip
    assert code == 0, err
    card = out.split("Bias card — ", 1)[1].splitlines()
    assert re.match(r"\s+evidence on \d+ of \d+ judged question\(s\) \(Holm", card[1])
    verdicts = [line for line in card[2:] if line.strip().startswith("[")]
    assert verdicts and all("% CI [" in line and "family-wise" in line for line in verdicts)
    assert any("card: audits/" in line for line in card)
    code, again, _ = run_cli(
        monkeypatch, capsys, "audit", "-m", str(tiny_models["llama"]), "--methods", "sib-mgc",
        "--data-dir", str(DATA),
    )  # fmt: skip
    assert code == 0 and "requests: 0 computed" in again


def test_bad_input_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    for args, expected in [
        (("--size", "huge"), "--size: 'huge' is not one of quick, standard, paper"),
        (("--methods", "sib-mcg"), "--methods: unknown method(s) sib-mcg"),
        (("--methods", "lei-train"), "--methods: lei-train is not an audit step"),
        (("--price", "1"), "--price estimates the audit's cost with --dry-run"),
        (("--models-file", str(tmp_path / "none.txt")), "none.txt"),
    ]:
        code, out, err = run_cli(monkeypatch, capsys, "audit", *args)
        assert code == 2, (args, out, err)
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and expected in lines[0], (args, err)


@pytest.mark.slow
def test_two_packaged_models_audit_offline_into_one_comparison(monkeypatch, capsys, tmp_path):
    """The guide's several-models example with no hub: the default model and Gemma-3-270m
    (the gemma extra) each get a card whose identity is its own converted checkpoint, and
    comparison.md sets their answers side by side (different models: different numbers)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        monkeypatch, capsys, "audit", "--offline", "-m", "default", "-m", "gemma-3-270m",
        "--methods", "sib-detect", "--data-dir", str(DATA), "-o", "both",
    )  # fmt: skip
    assert code == 0, err
    cards = {m: json.loads((tmp_path / "both" / m / "card.json").read_text())
             for m in ("default", "gemma-3-270m")}  # fmt: skip
    sources = {m: c["model_identity"]["converted_from"] for m, c in cards.items()}
    assert sources == {"default": "SmolLM2-135M-Instruct.Q4_1.gguf",
                       "gemma-3-270m": "gemma-3-270m-q4_k_m.gguf"}  # fmt: skip
    values = {}
    for model, card in cards.items():
        assert card["questions"] and not card["failed"]
        values[model] = [row["value"] for row in card["rows"]]
        assert all(v is not None and math.isfinite(v) for v in values[model]), values
    assert values["default"] != values["gemma-3-270m"]
    comparison = (tmp_path / "both" / "comparison.md").read_text()
    assert comparison.count("| default |") >= 2 and comparison.count("| gemma-3-270m |") >= 2
