"""Options and inputs at their limits end in one line, not a traceback: a damaged tokenizer under
--dry-run or as --tokenizer, a seed past 2**32 - 1, λ and temperatures whose product overflows,
and format specs in a cid-audit template."""

from __future__ import annotations

import shutil

import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid.data.cid_audit import check_template
from biaslens.models import BackendConfig, load_model
from biaslens.models.requests import ContrastiveGenerateRequest
from tests.test_cli import run_cli


def one_line_error(code: int, err: str) -> str:
    assert code != 0 and "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def damaged_tokenizer(tiny_models, tmp_path):
    folder = tmp_path / "llama"
    shutil.copytree(tiny_models["llama"], folder)
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {}}')
    return folder


def test_a_damaged_tokenizer_under_dry_run_is_one_line(damaged_tokenizer, monkeypatch, capsys):
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "-m", str(damaged_tokenizer), "--dry-run"
    )
    assert "cannot load the tokenizer" in one_line_error(code, err)


def test_a_damaged_tokenizer_given_as_tokenizer_is_one_line(served, damaged_tokenizer):
    config = BackendConfig(backend="openai", base_url=served["url"],
                           tokenizer=str(damaged_tokenizer))  # fmt: skip
    with pytest.raises(BiaslensError, match="cannot load the tokenizer"):
        load_model("tiny-llama", config)


@pytest.mark.parametrize("seed", ["4294967296", "18446744073709551616"])
def test_a_seed_past_the_range_every_generator_takes_is_one_line(
    seed, tiny_models, monkeypatch, capsys, tmp_path
):
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "-m", str(tiny_models["llama"]), "--limit", "1",
        "--seed", seed, "-o", str(tmp_path / "run"),
    )  # fmt: skip
    assert "seed" in one_line_error(code, err) and "4294967295" in err
    assert not (tmp_path / "run").exists()


def test_the_largest_seed_runs(tiny_models, tmp_path):
    import biaslens

    result = biaslens.run(
        "sib-mgc", model=str(tiny_models["llama"]), limit=1, w_kinds=("dates",),
        seed=2**32 - 1, output=tmp_path / "run", device="cpu",
    )  # fmt: skip
    assert result.summary["settings"]["seed"] == 2**32 - 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lam": 1e31}, "λ must be <= 1e\\+30"),
        ({"lam": float("inf")}, "λ must be <= 1e\\+30"),
        ({"lam": float("nan")}, "λ must be >= 0"),
        ({"lam": 5.0, "do_sample": True, "temperature": 1e-7}, "temperature must be .* from 1e-06"),
        ({"lam": 5.0, "do_sample": True, "temperature": 1e308}, "temperature .* to 1e\\+06"),
        ({"lam": 5.0, "seed": -1}, "seed must be an integer from 0 to 2\\*\\*32 - 1"),
    ],
)
def test_cid_requests_out_of_range_are_refused(options, message):
    with pytest.raises(BiaslensError, match=message):
        ContrastiveGenerateRequest("In 1901, she", "In 1901, he", **options)


def test_the_extremes_in_range_sample_without_overflow(tiny_backends):
    """λ = 1e30 at temperature 1e-6: λ·Δ/T stays finite, so the draw is a real draw (before,
    λ = 1e300 ended in 'probability tensor contains either inf, nan')."""
    request = ContrastiveGenerateRequest(
        "In 1901, she", "In 1901, he", lam=1e30, max_new_tokens=3, do_sample=True,
        temperature=1e-6, seed=1,
    )  # fmt: skip
    greedy = ContrastiveGenerateRequest("In 1901, she", "In 1901, he", lam=1e30, max_new_tokens=3)
    sampled, argmax = tiny_backends["llama"].contrastive_generate([request, greedy])
    assert sampled.text == argmax.text  # at T = 1e-6 a draw is the arg-max
    hottest = ContrastiveGenerateRequest(
        "In 1901, she", "In 1901, he", lam=1e30, max_new_tokens=3, do_sample=True,
        temperature=1e6, seed=1,
    )  # fmt: skip
    [drawn] = tiny_backends["llama"].contrastive_generate([hottest])  # no inf/NaN in the draw
    assert drawn.text


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{name:q}, a developer, failed {his} test because {he}", r"slot \{name:q\} has a format"),
        ("{name!r}, a developer, failed because {he}", r"slot \{name!r\} has a format"),
        ("{name:>99999999}, a developer", r"slot \{name:>99999999\} has a format"),
        ("{name.__class__}, a developer", r"slot \{name.__class__\} reads an attribute"),
    ],
)
def test_format_specs_in_a_template_are_refused(template, message):
    with pytest.raises(BiaslensError, match=message):
        check_template(template, "templates.yaml: template 'x'")
