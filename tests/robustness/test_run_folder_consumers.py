"""Run folders read as untrusted input by every consumer (``compare``, ``load_runs``, the
report) through one typed reader: a field of the wrong type skips the folder with a warning
naming it and the field, never a traceback; a non-finite number is missing, never ``nan`` in a
table of numbers; two runs of one model in folders of one name keep both columns; 300 runs
give a readable table and no giant plot."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings

import pandas as pd
import pytest

import biaslens
from biaslens.methods.sib.toy import make_settings as toy_settings
from biaslens.report.runs_frame import MAX_WIDE_COLUMNS, comparison_table
from tests.helpers import run_toy


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy") / "run"
    run_toy(toy_settings(n=500), folder)
    return folder


ESTIMATES = [
    {"table": "toy", "metric": "effect", "symbol": "β", "value": 0.25, "ci_low": 0.1,
     "ci_high": 0.4, "ci_level": 0.95, "n": 40, "labels": {"arm": "a"}},
    {"table": "toy", "metric": "effect", "symbol": "β", "value": -0.05, "ci_low": -0.2,
     "ci_high": 0.1, "ci_level": 0.95, "n": 40, "labels": {"arm": "b"}},
]  # fmt: skip
"""Headline values as a run writes them (the toy run itself has none: it has no interval)."""


def copy_run(source, target, **changes):
    shutil.copytree(source, target)
    path = target / "summary.json"
    summary = {**json.loads(path.read_text()), "estimates": ESTIMATES}
    for key, value in changes.items():
        if value is KeyError:
            summary.pop(key, None)
        else:
            summary[key] = value
    path.write_text(json.dumps(summary))
    return target


def compare(*args):
    return subprocess.run(
        [sys.executable, "-m", "biaslens", "compare", *map(str, args)],
        capture_output=True, text=True, timeout=600, env={"COLUMNS": "200", **_env()},
    )  # fmt: skip


def _env():
    import os

    return dict(os.environ)


HOSTILE = {
    "model-as-text": ({"model": "just-a-name"}, None),
    "estimates-number": ({"estimates": 5}, "estimates must be a list or null"),
    "estimates-of-text": ({"estimates": ["x"]}, "estimates[0] must be an object"),
    "value-text": ({"estimates": [{"metric": "m", "value": "abc"}]}, "estimates[0].value"),
    "no-method": ({"method": KeyError}, "no method"),
    "labels-list": ({"estimates": [{"metric": "m", "labels": [1]}]}, "estimates[0].labels"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_summary_is_skipped_with_its_folder_and_field_named(toy_run, tmp_path, case):
    changes, field = HOSTILE[case]
    bad = copy_run(toy_run, tmp_path / "bad", **changes)
    good = copy_run(toy_run, tmp_path / "good")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = biaslens.load_runs([bad, good])  # a list, as a user would pass one
    assert set(frame["run"]) == ({str(good)} if field else {str(good), str(bad)})
    if field:
        assert any(str(bad) in str(w.message) and field in str(w.message) for w in caught)
    done = compare(bad, good, "-o", tmp_path / "cmp")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    if field:
        assert field in done.stderr and str(bad) in done.stderr
    else:  # a model given as its name alone reads as that name
        assert "just-a-name" in done.stdout


def test_non_finite_values_are_missing_not_nan(toy_run, tmp_path):
    estimates = [{**e, "value": float("nan"), "ci_low": float("inf")} for e in ESTIMATES]
    run = copy_run(toy_run, tmp_path / "nan", estimates=estimates)
    frame = biaslens.load_runs(run)
    assert frame["value"].isna().all() and frame["ci_low"].isna().all()
    done = compare(run, "-o", tmp_path / "cmp")
    assert done.returncode == 0, done.stderr
    assert "nan" not in done.stdout.lower().replace("nan_", "") and "inf" not in done.stdout


def test_two_runs_in_folders_of_one_name_keep_both_columns(toy_run, tmp_path):
    first = copy_run(toy_run, tmp_path / "a" / "run")
    second = copy_run(toy_run, tmp_path / "b" / "run")
    table = comparison_table(biaslens.load_runs(first, second))
    columns = [c for c in table.columns if c not in ("method", "symbol", "labels")]
    assert len(columns) == 2 and any("a/run" in c for c in columns), columns
    assert any("b/run" in c for c in columns)


def test_three_hundred_runs_give_a_long_capped_table_and_no_giant_plot(toy_run, tmp_path):
    root = tmp_path / "many"
    summary = json.loads((toy_run / "summary.json").read_text())
    for i in range(300):
        model = {**(summary.get("model") or {}), "name": f"model-{i:03d}"}
        copy_run(toy_run, root / f"run-{i:03d}", model=model)
    frame = biaslens.load_runs(root)
    assert frame["model"].nunique() == 300
    table = comparison_table(frame)
    assert list(table.columns) == ["method", "symbol", "labels", "model", "value"]
    assert frame["model"].nunique() > MAX_WIDE_COLUMNS
    done = compare(root, "-o", tmp_path / "cmp")
    assert done.returncode == 0, done.stderr
    assert "all in compare.csv" in done.stdout and "plot: none" in done.stdout
    assert len(done.stdout.encode()) < 40_000, len(done.stdout)
    assert not (tmp_path / "cmp" / "compare.png").exists()
    assert len(pd.read_csv(tmp_path / "cmp" / "compare.csv")) == len(frame)


def test_a_report_of_a_glob_skips_an_interrupted_run_with_a_line(toy_run, tmp_path):
    from biaslens.report.html import write_report

    good = copy_run(toy_run, tmp_path / "runs" / "good")
    broken = copy_run(toy_run, tmp_path / "runs" / "interrupted")
    (broken / "summary.json").unlink()  # stopped before it finished
    with pytest.warns(UserWarning, match=f"skipped {broken}"):
        page = write_report([good, broken], tmp_path / "report.html")
    assert page.is_file() and "good" in page.read_text()
    with pytest.raises(biaslens.BiaslensError, match="summary"):
        write_report([broken], tmp_path / "alone.html")  # one run given alone: an error
    folders = sorted(str(p) for p in (tmp_path / "runs").glob("*"))
    done = subprocess.run(
        [sys.executable, "-m", "biaslens", "report", *folders, "-o", str(tmp_path / "cli.html")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and "skipped" in done.stderr and "interrupted" in done.stderr
