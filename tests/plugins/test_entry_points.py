"""A method and a backend added from outside biaslens: a small package (``tests/fixtures/
plugin_package``) is installed with pip and its entry points give ``biaslens run pronoun-share``
and ``--backend fixed``, from the command line and from Python, with no change to biaslens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from biaslens.common import plugins
from biaslens.errors import BiaslensError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "plugin_package"


def expected_shares(occupations: list[str], cap: float = 0.45) -> list[float]:
    """The fixed backend's rule, written out: p(" she") = 0.02 and p(" he") = 0.06 per letter
    of the prompt's second word (the occupation), each capped at ``cap`` (the backend's
    ``--fixed-cap``, 0.45 by default); share = she / (she + he)."""
    shares = []
    for occupation in occupations:
        she = min(0.02 * len(occupation), cap)
        he = min(0.06 * len(occupation), cap)
        shares.append(she / (she + he))
    return shares


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """The plug-in package installed by pip into a folder of its own (offline, no deps)."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(FIXTURE, root / "source")
    site = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(source)],
        check=True,
    )  # fmt: skip
    assert list(site.glob("biaslens_plugin_example-*.dist-info/entry_points.txt"))
    return site


def run_python(site: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "BIASLENS_REQUEST_CACHE_DIR": str(tmp_path / "cache"),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True
    )


def test_the_plugin_method_runs_on_the_plugin_backend_from_the_command_line(plugin_site, tmp_path):
    listed = run_python(plugin_site, tmp_path, "-m", "biaslens", "run", "--help")
    assert listed.returncode == 0 and "pronoun-share" in listed.stdout
    done = run_python(
        plugin_site, tmp_path, "-m", "biaslens", "run", "pronoun-share", "--backend", "fixed",
        "--model", "any-name", "--limit", "3", "--output", "out",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shares = pd.read_csv(tmp_path / "out" / "shares.csv")
    occupations = ["nurse", "engineer", "teacher"]
    assert shares["occupation"].tolist() == occupations
    assert shares["share_she"].tolist() == pytest.approx(expected_shares(occupations))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["model"]["backend"] == "fixed" and summary["method"] == "pronoun-share"
    mean = sum(expected_shares(occupations)) / 3
    assert summary["metrics"]["mean_share_she"] == pytest.approx(mean)
    assert (tmp_path / "out" / "report.html").is_file()
    again = run_python(
        plugin_site, tmp_path, "-m", "biaslens", "run", "pronoun-share", "--backend", "fixed",
        "--model", "any-name", "--limit", "3", "--output", "out",
    )  # fmt: skip
    assert "0 computed, 3 reused" in again.stdout
    # the plug-in's own command, declared in its MethodSpec like a built-in method's
    shown = run_python(plugin_site, tmp_path, "-m", "biaslens", "metrics", "pronoun-share", "out")
    assert shown.returncode == 0, shown.stderr
    assert f"mean share of she: {mean:.4f}" in shown.stdout


def test_the_plugin_method_runs_from_python(plugin_site, tmp_path):
    code = (
        "import biaslens\n"
        "r = biaslens.run('pronoun-share', model='m', backend='fixed', limit=2, output='py')\n"
        "print(repr(float(r['shares']['share_she'].mean())))\n"
        "print(list(biaslens.settings('pronoun-share')['setting']))\n"
    )
    done = run_python(plugin_site, tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    mean, settings = done.stdout.strip().splitlines()[-2:]
    assert float(mean) == pytest.approx(sum(expected_shares(["nurse", "engineer"])) / 2)
    assert "limit" in settings


def test_the_plugin_backend_owns_its_option(plugin_site, tmp_path):
    """``--fixed-cap``, declared by the plug-in backend only, is in every model command's help,
    changes the answers (and so the cache key) on its backend, and is refused on another."""
    listed = run_python(plugin_site, tmp_path, "-m", "biaslens", "run", "sib-mgc", "--help")
    assert "--fixed-cap" in listed.stdout and "the most probability one word gets" in listed.stdout
    occupations = ["nurse", "engineer", "teacher"]  # 5 to 8 letters: capped at 0.3 from 5
    done = run_python(
        plugin_site, tmp_path, "-m", "biaslens", "run", "pronoun-share", "--backend", "fixed",
        "--fixed-cap", "0.3", "--model", "m", "--limit", "3", "--output", "capped",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr and "3 computed, 0 reused" in done.stdout
    shares = pd.read_csv(tmp_path / "capped" / "shares.csv")["share_she"].tolist()
    assert shares == pytest.approx(expected_shares(occupations, cap=0.3))
    assert shares != pytest.approx(expected_shares(occupations))
    summary = json.loads((tmp_path / "capped" / "summary.json").read_text())
    assert summary["backend"] == {"backend": "fixed", "fixed_cap": 0.3}
    code = (
        "import biaslens\n"
        "r = biaslens.run('pronoun-share', model='m', backend='fixed', fixed_cap=0.25, limit=1,"
        " output='py')\n"
        "print(repr(float(r['shares']['share_she'][0])))\n"
    )
    done = run_python(plugin_site, tmp_path, "-c", code)
    assert float(done.stdout.strip().splitlines()[-1]) == pytest.approx(
        expected_shares(["nurse"], cap=0.25)[0]
    )
    refused = run_python(
        plugin_site, tmp_path, "-m", "biaslens", "run", "sib-mgc", "--fixed-cap", "0.3",
        "--output", "mgc",
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--fixed-cap does not apply to the hf backend" in refused.stderr
    assert "it needs --backend fixed" in refused.stderr
    bad = run_python(
        plugin_site, tmp_path, "-m", "biaslens", "run", "pronoun-share", "--backend", "fixed",
        "--fixed-cap", "0.9", "--model", "m", "--output", "bad",
    )  # fmt: skip
    assert bad.returncode == 2 and "--fixed-cap must be in (0, 0.5], got 0.9" in bad.stderr
    planned = run_python(
        plugin_site, tmp_path, "-m", "biaslens", "run", "pronoun-share", "--backend", "fixed",
        "--model", "m", "--dry-run", "--output", "plan",
    )  # fmt: skip
    assert planned.returncode != 0 and "Traceback" not in planned.stderr
    assert "--dry-run cannot plan a run on the fixed backend: it declares no planner" in (
        planned.stderr
    )


@pytest.fixture
def broken_plugins(tmp_path, monkeypatch):
    """An installed distribution (its metadata folder, as pip writes it) whose entry points are
    broken: a method module that does not exist, a backend that is not a RegisteredBackend,
    and a backend that takes a built-in's name."""
    info = tmp_path / "broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[biaslens.methods]\nbroken = no_such_module_for_biaslens\n\n"
        "[biaslens.backends]\nnot-a-backend = biaslens.models.registry:DEFAULT_BACKEND\n"
        "hf = biaslens.models.registry:BACKENDS\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.refresh()
    yield
    monkeypatch.undo()
    plugins.refresh()


def test_a_broken_plugin_is_named_and_leaves_the_rest_working(broken_plugins, capsys):
    from biaslens.framework.registry import get_method, methods
    from biaslens.models.registry import get_backend

    assert "sib-mgc" in methods() and "broken" not in methods()
    warned = capsys.readouterr().err
    assert warned.count("'broken'") == 1 and "ModuleNotFoundError" in warned
    assert "broken-plugin 0.1" in warned
    with pytest.raises(BiaslensError, match="could not be loaded: ModuleNotFoundError"):
        get_method("broken")
    with pytest.raises(BiaslensError, match="must name a RegisteredBackend"):
        get_backend("not-a-backend")
    assert get_backend("hf").loader == "biaslens.models.backends.hf:load_hf"
    with pytest.raises(BiaslensError, match="unknown backend 'nothing'"):
        get_backend("nothing")
    get_backend("hf")
    warned += capsys.readouterr().err
    assert warned.count("plug-in 'hf': it takes a built-in backend's name") == 1
