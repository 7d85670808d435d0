"""The command line: useful help, one-line errors with a non-zero exit, no traceback."""

from __future__ import annotations

import json
import sys

import pytest

from biaslens import cli
from tests.helpers import message_lines, shared_cache_file


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``biaslens ARGS`` in this process, as a process of its own would run it (its once-per-
    process notes not yet said)."""
    from biaslens.cli import params

    monkeypatch.setattr(params, "_notes", [])
    monkeypatch.setattr(sys, "argv", ["biaslens", *args])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("run", "--help"),
        ("run", "sib-mgc", "--help"),
        ("models", "--help"),
        ("datasets", "--help"),
    ],
)
def test_help_is_useful(args, monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, *args)
    assert code == 0 and "Usage" in out
    if args[-2:] == ("sib-mgc", "--help"):
        for option in (
            "--model",
            "--device",
            "--batch-size",
            "--limit",
            "--output",
            "--seed",
            "--scoring",
            "--prompt",
            "--backend",
            "--preset",
        ):
            assert option in out


def test_models_and_datasets_list(monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, "models", "list")
    assert (
        code == 0
        and "smollm2-135m-instruct" in out
        and "default" in out
        and "all-minilm-l6-v2" in out
    )
    code, out, _ = run_cli(monkeypatch, capsys, "datasets", "list")
    assert code == 0 and "mgc" in out


def _one_line_error(code, err, expected):
    assert code == 2
    assert "Traceback" not in err
    lines = message_lines(err)
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert expected in err.replace("\n", " ")


def test_bad_inputs_are_one_line_errors(tiny_models, tmp_path, monkeypatch, capsys):
    cases = [
        (("--model", str(tmp_path / "nope")), "unknown model"),
        (("--model", str(tiny_models["roberta-qa"])), "extractive-QA model"),
        (("--model", str(tiny_models["bert-mlm"]), "--prompt", "A"), "--prompt applies to causal"),
        (("--limit", "-1"), "--limit: "),
        (("--batch-size", "0"), "--batch-size must be >= 1"),
    ]
    for i, (args, expected) in enumerate(cases):
        out_dir = tmp_path / f"out{i}"
        code, _, err = run_cli(
            monkeypatch, capsys, "run", "sib-mgc", "--output", str(out_dir), *args
        )
        _one_line_error(code, err, expected)


def test_run_then_rerun_and_config_clash(tiny_models, tmp_path, monkeypatch, capsys):
    out_dir = tmp_path / "run"
    base = (
        "run",
        "sib-mgc",
        "--model",
        str(tiny_models["llama"]),
        "--limit",
        "1",
        "--w",
        "dates",
        "--output",
        str(out_dir),
        "--device",
        "cpu",
    )
    code, out, _ = run_cli(monkeypatch, capsys, *base)
    assert code == 0 and "30 computed, 0 reused" in out and "mgc_dates.png" in out
    code, out, _ = run_cli(monkeypatch, capsys, *base, "--batch-size", "4")
    assert code == 0 and "0 computed, 30 reused" in out
    before = (out_dir / "summary.json").read_bytes()
    code, _, err = run_cli(monkeypatch, capsys, *base, "--scoring", "paper")
    _one_line_error(code, err, "holds a run with a different config")
    assert (out_dir / "summary.json").read_bytes() == before


def test_masked_model_without_mask_token_via_cli(tiny_models, tmp_path, monkeypatch, capsys):
    import shutil

    from transformers import AutoTokenizer

    folder = tmp_path / "nomask"
    shutil.copytree(tiny_models["bert-mlm"], folder)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.mask_token = None
    tok.save_pretrained(folder)
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "run",
        "sib-mgc",
        "--model",
        str(folder),
        "--output",
        str(tmp_path / "o"),
        "--limit",
        "1",
    )
    _one_line_error(code, err, "neither a mask token")
    assert not (tmp_path / "o").exists()


def test_span_denoiser_and_unqover_commands(
    tiny_models, unqover_data, tmp_path, monkeypatch, capsys
):
    code, out, _ = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--model", str(tiny_models["t5-denoiser"]),
        "--model-kind", "masked", "--input-prefix", "[NLU] ", "--limit", "1",
        "--output", str(tmp_path / "mgc"),
    )  # fmt: skip
    assert code == 0
    summary = json.loads((tmp_path / "mgc" / "summary.json").read_text())
    assert summary["backend"]["model_kind"] == "masked"
    assert summary["backend"]["input_prefix"] == "[NLU] "
    assert summary["model"]["kind"] == "masked-lm"
    code, out, _ = run_cli(
        monkeypatch, capsys, "run", "unqover", "--model", str(tiny_models["roberta-qa"]),
        "--data-dir", str(unqover_data), "--limit", "12", "--preset", "paper",
        "--output", str(tmp_path / "uq"),
    )  # fmt: skip
    assert code == 0 and "UnQover model-level bias" in out
    assert "span_adjustment: reference" in (tmp_path / "uq" / "config.yaml").read_text()


def test_sib_toy_and_detect_commands(tiny_models, tmp_path, monkeypatch, capsys):
    from .conftest import DATA

    code, out, _ = run_cli(
        monkeypatch, capsys, "run", "sib-toy", "--n", "2000", "-o", str(tmp_path / "toy")
    )
    assert (
        code == 0
        and "unspecified" in out
        and (tmp_path / "toy" / "plots" / "toy_scm.png").is_file()
    )
    args = ("run", "sib-detect", "--model", str(tiny_models["llama"]), "--limit", "2",
            "--data-dir", str(DATA), "-o", str(tmp_path / "det"), "--device", "cpu")  # fmt: skip
    code, out, _ = run_cli(monkeypatch, capsys, *args, "--show-occupation", "accountant")
    assert code == 0 and "extended" in out and "simplified" in out and "TPR" in out
    assert "The accountant said that [MASK] could help with tax preparation." in out
    code, _, err = run_cli(monkeypatch, capsys, *args, "--threshold", "-1")
    _one_line_error(code, err, "--threshold: ")
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-detect", "--data-dir",
                           str(tmp_path / "none"), "-o", str(tmp_path / "d2"))  # fmt: skip
    _one_line_error(code, err, "no such folder; `biaslens datasets download NAME --data-dir")
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--models-file", str(tmp_path / "nope.txt")
    )
    _one_line_error(code, err, "nope.txt not found")


def test_datasets_download_command(tmp_path, monkeypatch, capsys):
    from biaslens.data import sources

    from .conftest import DATA

    original = sources.REMOTE["winogender"]
    local = sources.RemoteDataset(
        original.name,
        (DATA / "winogender").as_uri(),
        original.files,
        original.license,
    )
    monkeypatch.setitem(sources.REMOTE, "winogender", local)
    code, out, _ = run_cli(
        monkeypatch, capsys, "datasets", "download", "winogender", "--data-dir", str(tmp_path)
    )
    assert code == 0 and (tmp_path / "winogender" / "templates.tsv").is_file()


def test_cid_command_with_a_lambda_list(tiny_models, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)  # the default run folder goes under the working directory
    code, out, _ = run_cli(
        monkeypatch, capsys, "cid", "--model", str(tiny_models["llama"]),
        "--x", "The doctor said that", "--x-prime", "The nurse said that",
        "--lam", "0", "5", "50", "--max-new-tokens", "4",
    )  # fmt: skip
    assert code == 0
    assert "CID(x; x')" in out and "CID(x'; x)" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [r.split("│")[1].strip() for r in rows] == ["0", "5", "50"]


def test_cid_command_defaults_are_the_cid_settings_defaults(
    tiny_models, monkeypatch, capsys, tmp_path
):
    """Without --lam, --top-k or --max-new-tokens, `biaslens cid` decodes as cid-audit does
    by default (DecodingSettings), not with defaults of its own."""
    import biaslens.models.loader as registry
    from biaslens.methods.cid.scoring.contrastive import DecodingSettings
    from biaslens.models.requests import ContrastiveGenerateResult

    lm = registry.load_model(str(tiny_models["llama"]))
    asked = []

    def recording(requests, progress=None):
        asked.extend(requests)
        return [ContrastiveGenerateResult("x", 1, "length") for _ in requests]

    monkeypatch.setattr(lm, "contrastive_generate", recording)
    monkeypatch.setattr(registry, "load_model", lambda *a, **k: lm)
    monkeypatch.chdir(tmp_path)  # the default run folder goes under the working directory
    code, _, _ = run_cli(monkeypatch, capsys, "cid", "--model", "any", "--x", "a b",
                         "--x-prime", "c d")  # fmt: skip
    defaults = DecodingSettings()
    assert code == 0 and {r.lam for r in asked} == set(defaults.lams)
    budget = {(r.max_new_tokens, r.top_k) for r in asked}
    assert budget == {(defaults.max_new_tokens, defaults.top_k)}


def test_multi_value_options_take_space_separated_values():
    import click

    from biaslens.cli import app

    def parsed(path, *args):
        command = app
        for word in path:
            command = command.get_command(None, word)
        return command.make_context(path[-1], list(args)).params

    pair = ("--x", "a", "--x-prime", "b")
    assert parsed(["cid"], "--lam", "0", "5", "50", *pair)["lam"] == (0.0, 5.0, 50.0)
    assert parsed(["cid"], "--lam", "1", "--lam", "2", *pair)["lam"] == (1.0, 2.0)
    with pytest.raises(click.UsageError):  # --x takes one value
        parsed(["cid"], "--x", "5", "6", "--x-prime", "b")
    mgc = parsed(["run", "sib-mgc"], "--prompt", "A", "B", "--w", "dates")
    assert mgc["prompt"] == ("A", "B") and mgc["w"] == ("dates",)
    for spelling in (["-p", "A", "B"], ["-pA", "B"], ["--prompt=A", "B"]):
        assert parsed(["run", "sib-mgc"], *spelling)["prompt"] == ("A", "B"), spelling
    # a list option of one command is not one of another
    with pytest.raises(click.UsageError):
        parsed(["run", "lei-eval"], "--model", "a", "b")
    assert parsed(["run", "sib-mgc"], "--model", "a", "b")["model"] == ("a", "b")


def test_cid_bad_inputs_are_one_line_errors(tiny_models, tmp_path, monkeypatch, capsys):
    llama = str(tiny_models["llama"])
    cases = [
        (("cid", "--model", llama, "--x", "a", "--x-prime", "b", "--lam", "-1"), "λ must be >= 0"),
        (("cid", "--model", llama, "--x", "", "--x-prime", "b"), "non-empty"),
        (("cid", "--model", llama, "--x", "a", "--x-prime", "b", "--top-k-tokens", "0"), "top_k"),
        (
            ("cid", "--model", str(tiny_models["bert-mlm"]), "--x", "a", "--x-prime", "b"),
            "cannot answer contrastive_generate",
        ),
        (("run", "cid-audit", "--groups", "us-male", "nowhere"), "unknown name group"),
        (("cid-ratings", str(tmp_path), str(tmp_path / "r.csv")), "not a biaslens run directory"),
    ]
    for args, expected in cases:
        code, _, err = run_cli(monkeypatch, capsys, *args)
        _one_line_error(code, err, expected)


def test_cid_audit_and_sensitivity_commands(tiny_models, tmp_path, monkeypatch, capsys):
    names = tmp_path / "names.yaml"
    names.write_text(
        "a:\n  gender: male\n  names: [John, James]\nb:\n  gender: female\n  names: [Emma]\n"
    )
    run = tmp_path / "audit"
    code, out, _ = run_cli(
        monkeypatch, capsys, "run", "cid-audit", "--model", str(tiny_models["llama"]),
        "--names-file", str(names), "--groups", "a", "b", "--lam", "0", "5",
        "--max-new-tokens", "4", "--output", str(run),
    )  # fmt: skip
    assert code == 0 and "ratings_to_fill.csv" in out.replace("\n", "")
    import pandas as pd

    exported = pd.read_csv(run / "ratings_to_fill.csv", keep_default_na=False)
    exported.assign(biased=1).to_csv(tmp_path / "rated.csv", index=False)
    code, out, _ = run_cli(
        monkeypatch, capsys, "cid-ratings", str(run), str(tmp_path / "rated.csv")
    )
    assert code == 0 and "1.00" in out
    from biaslens import load_run

    loaded = load_run(run)  # the imported ratings are outputs of the run, in its report
    assert loaded.biased_fraction["fraction_biased"].eq(1.0).all()
    assert {"ratings", "biased_fraction"} <= set(loaded.tables)
    assert "biased_fraction" in (run / "report.html").read_text()
    code, out, _ = run_cli(
        monkeypatch, capsys, "run", "cid-sensitivity", "--model", str(tiny_models["llama"]),
        "--type", "gender", "--variants", "1", "--lam", "0", "50", "--max-new-tokens", "3",
        "--output", str(tmp_path / "sens"),
    )  # fmt: skip
    assert code == 0 and "λ*" in out and "monotonicity" in out


@pytest.mark.parametrize(
    ("method", "model", "extra"),
    [
        ("sib-mgc", "llama", ("--limit", "1")),
        ("unqover", "roberta-qa", ("--limit", "12")),
    ],
)
def test_max_requests_stops_cleanly_and_the_rerun_goes_on(
    method, model, extra, tiny_models, unqover_data, tmp_path, monkeypatch, capsys
):
    from biaslens.store.cache import RequestCache

    out = tmp_path / "run"
    args = ["run", method, "--model", str(tiny_models[model]), *extra]
    args += ["--data-dir", str(unqover_data)] if method == "unqover" else []
    args += ["-o", str(out)]
    code, _, err = run_cli(monkeypatch, capsys, *args, "--max-requests", "7")
    _one_line_error(code, err, "stopped after 7 new request(s) (--max-requests)")
    assert not (out / "summary.json").exists()
    cache = RequestCache(shared_cache_file())
    assert cache.count() == 7
    cache.close()
    code, _, _ = run_cli(monkeypatch, capsys, *args)
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"]["cached"] == 7 and summary["requests"]["computed"] > 0
    fresh = tmp_path / "fresh"
    code, _, _ = run_cli(monkeypatch, capsys, *args[:-1], str(fresh), "--no-cache")
    assert code == 0
    fresh_metrics = json.loads((fresh / "summary.json").read_text())["metrics"]
    assert _numbers(fresh_metrics) == pytest.approx(
        _numbers(summary["metrics"]), rel=1e-3, abs=1e-5
    )


def _numbers(value) -> list[float]:
    """Every number in a JSON value, in order (batches of other sizes differ in the last
    digits)."""
    if isinstance(value, dict):
        return [x for key in sorted(value) for x in _numbers(value[key])]
    if isinstance(value, list):
        return [x for item in value for x in _numbers(item)]
    return [float(value)] if isinstance(value, (int, float)) and value == value else []
