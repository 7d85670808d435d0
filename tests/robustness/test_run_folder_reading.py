"""A run folder read as untrusted input by `report`, `load_run` and resume: regular files inside
it only, no YAML aliases, a bounded depth, the fields of the types biaslens writes; and `report
-o` never replaces a link, a FIFO or a device."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import pytest

from biaslens.common import atomic
from biaslens.errors import BiaslensError
from biaslens.methods.sib.toy import make_settings as toy_settings
from biaslens.report.html import write_report
from biaslens.store.result import RunResult
from tests.helpers import run_toy

SECRET = "content-from-outside-the-run-folder"


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "run"
    run_toy(toy_settings(n=500), folder)
    assert (folder / "summary.json").is_file()
    return folder


@pytest.fixture
def outside(tmp_path):
    path = tmp_path / "outside.png"
    path.write_text(SECRET)
    return path


@pytest.mark.parametrize("name", ["plots/toy_scm.png", "toy_summary.csv", "samples.parquet"])
def test_an_output_replaced_by_a_symbolic_link_is_refused_not_embedded(
    run, outside, tmp_path, name
):
    link = run / name
    link.unlink()
    link.symlink_to(outside)
    with pytest.raises(BiaslensError, match="is a symbolic link; biaslens does not follow"):
        write_report([run], tmp_path / "report.html")
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("name", ["plots/evil.png", "evil.csv", "evil.parquet"])
def test_a_file_the_summary_does_not_name_is_never_read(run, outside, tmp_path, name):
    link = run / name
    link.symlink_to(outside)
    loaded = RunResult.load(run)
    assert link not in loaded.plots
    assert "evil" not in loaded.tables and "evil" not in loaded.sample_tables
    write_report([run], tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert SECRET not in page and base64.b64encode(SECRET.encode()).decode()[:20] not in page


def test_a_symlinked_plots_folder_or_summary_is_refused(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (run / "plots").rename(elsewhere)
    (run / "plots").symlink_to(elsewhere)
    with pytest.raises(BiaslensError, match="plots is a symbolic link"):
        RunResult.load(run)
    (run / "plots").unlink()
    (elsewhere).rename(run / "plots")
    (run / "summary.json").rename(tmp_path / "summary.json")
    (run / "summary.json").symlink_to(tmp_path / "summary.json")
    with pytest.raises(BiaslensError, match="summary.json is a symbolic link"):
        RunResult.load(run)


def test_report_output_never_replaces_a_fifo_or_a_link(run, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(BiaslensError, match="not a regular file"):
        write_report([run], fifo)
    assert fifo.exists() and not fifo.is_file()
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    with pytest.raises(BiaslensError, match="is a symbolic link"):
        write_report([run], link)
    assert link.is_symlink() and target.read_text() == "keep me"


def test_atomic_writes_refuse_a_device():
    with pytest.raises(BiaslensError, match="not a regular file"):
        atomic.write_bytes(Path("/dev/null"), b"x")  # refused before any write


ALIAS_BOMB = "\n".join(
    ["format_version: 1", "method: sib-toy", "settings: {}", 'a: &a ["lol","lol","lol","lol"]']
    + [
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]  # fmt: skip
)


def test_a_yaml_alias_bomb_in_config_is_refused_at_once(run):
    (run / "config.yaml").write_text(ALIAS_BOMB)
    started = time.monotonic()
    with pytest.raises(BiaslensError, match=r"config.yaml: cannot read .*a YAML alias \(\*a\)"):
        RunResult.load(run)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("file", ["summary.json", "config.yaml"])
def test_a_deeply_nested_run_file_is_one_line(run, file):
    deep = "[" * 5000 + "]" * 5000
    text = f'{{"format_version": 1, "method": "sib-toy", "settings": {{}}, "x": {deep}}}'
    (run / file).write_text(text)
    with pytest.raises(BiaslensError, match=f"{file}: the .* nests deeper than 64 levels"):
        RunResult.load(run)


@pytest.mark.parametrize(
    ("file", "change", "message"),
    [
        ("summary.json", {"requests": "ab"}, "requests must be an object or null, got str 'ab'"),
        ("summary.json", {"notes": 5}, "notes must be a list or null, got int 5"),
        ("summary.json", {"metrics": []}, r"metrics must be an object, got list \[\]"),
        ("config.yaml", {"method": ["x"]}, "method must be text, got list"),
        ("config.yaml", {"settings": None}, "settings must be a mapping, got NoneType"),
    ],
)
def test_wrong_types_in_run_files_are_one_line(run, file, change, message):
    import yaml

    path = run / file
    loaded = (
        json.loads(path.read_text()) if file.endswith("json") else yaml.safe_load(path.read_text())
    )
    loaded.update(change)
    path.write_text(json.dumps(loaded) if file.endswith("json") else yaml.safe_dump(loaded))
    with pytest.raises(BiaslensError, match=message):
        RunResult.load(run)


def test_written_yaml_never_holds_an_alias(tmp_path):
    shared = ["A", "B"]
    atomic.write_yaml(tmp_path / "x.yaml", {"prompts": shared, "again": shared})
    text = (tmp_path / "x.yaml").read_text()
    assert "&" not in text and "*" not in text
