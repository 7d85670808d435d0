"""The help a new user reads: options under headings, one default style, summaries that end,
and a near miss of a command's name answered with the name."""

from __future__ import annotations

import re

from tests.test_cli import run_cli


def test_a_method_commands_options_are_grouped_with_one_default_style(monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, "run", "sib-mgc", "--help")
    assert code == 0
    headings = [line[:-1] for line in out.splitlines() if re.fullmatch(r"[A-Z][a-z ]+:", line)]
    assert headings[:1] == ["Reading the results"] or "Method" in headings
    order = [h for h in headings if h in ("Method", "Data", "Model and backend", "Run and output")]
    assert order == ["Method", "Data", "Model and backend", "Run and output"], headings
    assert "Default: " not in out and "[default: A]" in out
    limit = out[out.index("--limit") :].split("\n  -")[0]
    assert "sentence frames" in limit.lower() and "[default: all]" in limit
    method = out[out.index("\nMethod:") : out.index("\nData:")]
    assert "--backend" not in method and "--output" not in method


def test_command_summaries_end_where_their_sentence_ends(monkeypatch, capsys):
    for args in (("run", "--help"), ("--help",)):
        code, out, _ = run_cli(monkeypatch, capsys, *args)
        assert code == 0
        listed = out.split("Commands:", 1)[1]
        assert "..." not in listed and "(App.\n" not in listed, listed


def test_a_mistyped_command_gets_the_name_it_is_close_to(monkeypatch, capsys):
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mcg")
    assert code == 2 and "Did you mean 'sib-mgc'?" in err
    code, _, err = run_cli(monkeypatch, capsys, "audti")
    assert code == 2 and "Did you mean 'audit'?" in err
    code, _, err = run_cli(monkeypatch, capsys, "run", "zzzz")
    assert code == 2 and "No such command 'zzzz'." in err and "Did you mean" not in err


def test_a_missing_data_dir_is_refused_before_the_model_loads(monkeypatch, capsys, tmp_path):
    import biaslens.models.loader as loader

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before --data-dir was checked")

    monkeypatch.setattr(loader, "load_model", never)
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-detect", "--data-dir",
                           str(tmp_path / "nonexistent"))  # fmt: skip
    assert code == 2 and "--data-dir" in err and "no such folder" in err
