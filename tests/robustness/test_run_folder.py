"""The run folder under faults: a damaged cache, two processes, killed writes, the umask."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.sib.mgc.settings import make_settings
from biaslens.methods.sib.toy import make_settings as toy_settings
from biaslens.models import BackendConfig
from biaslens.store.run import RunStore
from tests.helpers import run_mgc, run_toy

CPU = BackendConfig(device="cpu", batch_size=16)


def _mgc(tiny_models, output):
    """A run that keeps its answers in its own folder (the shared cache is the same code)."""
    settings = make_settings(model=str(tiny_models["llama"]), limit=1, w_kinds=("dates",))
    return run_mgc(settings, output, CPU, no_cache=True)


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 3]),
        lambda p: p.write_bytes(b"this is not a database" * 100),
        lambda p: p.write_bytes(b"SQLite format 3\x00" + os.urandom(4096)),
    ],
    ids=["truncated", "garbage", "bad-pages"],
)
def test_a_damaged_cache_is_moved_aside_and_rebuilt(damage, tiny_models, tmp_path):
    first = _mgc(tiny_models, tmp_path)
    cache = tmp_path / "requests.sqlite"
    with sqlite3.connect(cache) as db:  # fold the WAL in, so that the file holds the data
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage(cache)
    with pytest.warns(UserWarning, match="request cache is damaged"):
        again = _mgc(tiny_models, tmp_path)
    assert again.cache_stats == {"cached": 0, "computed": 30}
    assert again.fits.equals(first.fits)
    assert list(tmp_path.glob("requests.sqlite.corrupt-*"))
    assert _mgc(tiny_models, tmp_path).cache_stats == {"cached": 30, "computed": 0}


def test_an_unreadable_stored_answer_is_recomputed(tiny_models, tmp_path):
    first = _mgc(tiny_models, tmp_path)
    with sqlite3.connect(tmp_path / "requests.sqlite") as db:
        db.execute("UPDATE responses SET value = '{\"garbage\": 1}'")
    again = _mgc(tiny_models, tmp_path)
    assert again.cache_stats == {"cached": 0, "computed": 30}
    assert again.fits.equals(first.fits)


def test_a_second_process_on_the_same_folder_is_refused(tmp_path):
    first = RunStore(tmp_path / "run", "sib-toy", {"n": 1}, {}).open()
    try:
        with pytest.raises(
            BiaslensError, match=rf"in use by another biaslens process \(pid {os.getpid()}\)"
        ):
            RunStore(tmp_path / "run", "sib-toy", {"n": 1}, {}).open()
    finally:
        first.close()
    RunStore(tmp_path / "run", "sib-toy", {"n": 1}, {}).open().close()  # free again


def test_a_killed_write_leaves_no_temporary_file_on_the_next_run(tmp_path):
    settings = toy_settings(n=500)
    run_toy(settings, tmp_path)
    stale = tmp_path / ".summary.json.abc123.tmp"
    stale.write_text("{half")
    (tmp_path / "plots" / ".toy_scm.png.x.tmp").write_bytes(b"\x89PNG")
    run_toy(settings, tmp_path)
    assert not list(tmp_path.rglob("*.tmp"))
    assert json.loads((tmp_path / "summary.json").read_text())["method"] == "sib-toy"


def test_run_files_follow_the_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        run_toy(toy_settings(n=500), tmp_path)
    finally:
        os.umask(previous)
    for name in ("summary.json", "config.yaml", "toy_summary.csv", "plots/toy_scm.png"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o640, name


def test_summary_is_strict_json_without_nan_or_infinity(tmp_path):
    store = RunStore(tmp_path, "sib-toy", {}, {})
    store.write_summary({"a": float("nan"), "b": [float("inf"), 1.0], "c": {"d": float("-inf")}})
    store.close()
    text = (tmp_path / "summary.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    loaded = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard {c}"))
    assert loaded["metrics"] == {"a": None, "b": [None, 1.0], "c": {"d": None}}


def test_a_folder_that_cannot_be_created_is_a_clear_error():
    with pytest.raises(BiaslensError, match="cannot create run folder /proc/biaslens-test/run"):
        RunStore("/proc/biaslens-test/run", "sib-toy", {}, {}).open()
