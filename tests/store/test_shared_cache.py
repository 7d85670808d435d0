"""The request cache is shared across run folders: another ``--limit``, ``--output`` or method
reuses every answer an earlier run of the same model computed; ``--no-cache`` keeps a run's
answers in its own folder; concurrent runs write the same cache file safely."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from tests.helpers import shared_cache_file
from tests.test_cli import run_cli


def _stored(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def _mgc_args(model, limit: int) -> list[str]:
    return ["run", "sib-mgc", "--model", str(model), "--w", "dates", "--limit", str(limit)]


def test_another_limit_in_the_default_folder_reuses_the_first_runs_answers(
    tiny_models, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(monkeypatch, capsys, *_mgc_args(tiny_models["llama"], 1))
    assert code == 0 and "requests: 30 computed, 0 reused" in out
    code, out, _ = run_cli(monkeypatch, capsys, *_mgc_args(tiny_models["llama"], 2))
    assert code == 0, out
    assert "requests: 30 computed, 30 reused" in out  # the first sentence's 30, asked again
    folders = sorted(p.name for p in (tmp_path / "runs" / "sib-mgc").iterdir())
    assert len(folders) == 2  # the second run went to its own folder, the first is intact
    summaries = [
        json.loads((tmp_path / "runs" / "sib-mgc" / f / "summary.json").read_text())
        for f in folders
    ]
    assert {s["settings"]["limit"] for s in summaries} == {1, 2}
    assert not list((tmp_path / "runs").rglob("requests.sqlite"))
    assert _stored(shared_cache_file()) == 60
    assert all(s["request_cache"] == str(shared_cache_file()) for s in summaries)


def test_another_output_reuses_everything_and_no_cache_reuses_nothing(
    tiny_models, tmp_path, monkeypatch, capsys
):
    args = _mgc_args(tiny_models["llama"], 1)
    assert run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / "a"))[0] == 0
    code, out, _ = run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / "b"))
    assert code == 0 and "requests: 0 computed, 30 reused" in out
    shared = shared_cache_file()
    before = shared.read_bytes()
    code, out, _ = run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / "c"), "--no-cache")
    assert code == 0 and "requests: 30 computed, 0 reused" in out
    assert _stored(tmp_path / "c" / "requests.sqlite") == 30  # the run still resumes
    assert shared.read_bytes() == before
    code, out, _ = run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / "c"), "--no-cache")
    assert "requests: 0 computed, 30 reused" in out


def test_cache_dir_chooses_the_folder(tiny_models, tmp_path, monkeypatch, capsys):
    args = _mgc_args(tiny_models["llama"], 1)
    chosen = tmp_path / "my-cache"
    out = str(tmp_path / "a")
    assert run_cli(monkeypatch, capsys, *args, "-o", out, "--cache-dir", str(chosen))[0] == 0
    files = list(chosen.glob("*.sqlite"))
    assert len(files) == 1 and files[0].name.startswith("llama-") and _stored(files[0]) == 30
    assert not list(tmp_path.glob("request-cache*/*.sqlite"))


def test_other_models_never_share_a_file(tiny_models, tmp_path, monkeypatch, capsys):
    for name in ("llama", "gpt2"):
        args = _mgc_args(tiny_models[name], 1)
        code, out, _ = run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / name))
        assert code == 0 and "requests: 30 computed, 0 reused" in out
    folder = os.environ["BIASLENS_REQUEST_CACHE_DIR"]
    names = sorted(p.split("-")[0] for p in os.listdir(folder) if p.endswith(".sqlite"))
    assert names == ["gpt2", "llama"]


def test_concurrent_runs_share_the_cache_safely(tiny_models, tmp_path):
    """Two processes fill the same cache at once (different --limit, different folders); both
    finish, and a third run finds every answer."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-m", "biaslens.cli", *_mgc_args(tiny_models["llama"], 2)[:-1]]
    processes = [
        subprocess.Popen(
            [*base, limit, "-o", str(tmp_path / f"run{limit}"), "--batch-size", "2"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for limit in ("2", "3")
    ]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    assert _stored(shared_cache_file()) == 90
    again = subprocess.run(
        [*base, "3", "-o", str(tmp_path / "again")], env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and "requests: 0 computed, 90 reused" in again.stdout
