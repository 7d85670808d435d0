"""A run's outputs change together, and a write the file system refuses is never taken for a
damaged cache: a rerun killed between its first new table and its summary reads as incomplete
(never as a finished mix of two models' tables), an output changed after the run is named, and a
full disk (a file size limit, here) ends in one line with the request cache and its answers kept.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from biaslens.common import atomic
from biaslens.errors import BiaslensError
from biaslens.methods.sib.mgc.settings import make_settings
from biaslens.models import BackendConfig
from biaslens.report.html import write_report
from biaslens.store.result import RunResult
from biaslens.store.run import RunStore
from tests.helpers import run_mgc

CPU = BackendConfig(device="cpu", batch_size=16)


@contextmanager
def file_size_limit(nbytes: int):
    """Writes past ``nbytes`` in any file fail with EFBIG, as on a nearly full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@pytest.fixture
def model(tiny_models, tmp_path) -> Path:
    """A private copy of the tiny causal model, whose weights a test may change."""
    return Path(shutil.copytree(tiny_models["llama"], tmp_path / "model"))


def _mgc(model: Path, output: Path, backend: BackendConfig = CPU, **options):
    settings = make_settings(model=str(model), limit=1, w_kinds=("dates",))
    return run_mgc(settings, output, backend, **options)


def _change_weights(model: Path) -> None:
    weights = load_file(model / "model.safetensors")
    name = next(n for n in weights if "lm_head" in n or "embed" in n)
    generator = torch.Generator().manual_seed(7)
    weights[name] = weights[name] + torch.randn(weights[name].shape, generator=generator)
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})


def _cached_answers(run: Path) -> int:
    with sqlite3.connect(run / "requests.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


class Killed(BaseException):
    """Stands for SIGKILL: nothing after the point it is raised runs."""


def _killed_before_summary(monkeypatch):
    def kill(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(RunStore, "write_summary", kill)


def test_a_rerun_killed_after_new_tables_reads_as_incomplete_not_as_a_mix(
    model, tmp_path, monkeypatch
):
    run = tmp_path / "run"
    first = _mgc(model, run)
    old_fits = (run / "fits.csv").read_bytes()
    _change_weights(model)
    with monkeypatch.context() as patch:
        _killed_before_summary(patch)
        with pytest.raises(Killed):
            _mgc(model, run)
    assert (run / "fits.csv").read_bytes() != old_fits  # the new model's table is in place
    assert not (run / "summary.json").exists() and not (run / "report.html").exists()
    with pytest.raises(BiaslensError, match="run is incomplete .*run the same command again"):
        RunResult.load(run)
    with pytest.raises(BiaslensError, match="incomplete"):
        write_report([run], tmp_path / "report.html")
    again = _mgc(model, run)
    assert again.cache_stats["computed"] == 0  # the killed attempt's answers were kept
    loaded = RunResult.load(run)
    assert loaded.fits.equals(again.fits) and not loaded.fits.equals(first.fits)


def test_the_summary_names_every_output_with_its_size_and_digest(model, tmp_path):
    import hashlib

    run = tmp_path / "run"
    _mgc(model, run)
    recorded = json.loads((run / "summary.json").read_text())["outputs"]
    on_disk = {
        str(p.relative_to(run)) for p in run.rglob("*") if p.suffix in (".csv", ".parquet", ".png")
    }
    assert set(recorded) == on_disk and {"fits.csv", "samples.parquet"} <= on_disk
    for name, facts in recorded.items():
        data = (run / name).read_bytes()
        assert facts == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda run: (run / "fits.csv").write_text("a,b\n1,2\n"), "fits.csv changed after"),
        (lambda run: (run / "samples.parquet").unlink(), "samples.parquet is missing"),
        (lambda run: next((run / "plots").glob("*.png")).write_bytes(b"x"), "changed after"),
    ],
    ids=["edited table", "deleted samples", "replaced plot"],
)
def test_an_output_changed_after_the_run_is_named_not_reported(model, tmp_path, change, message):
    run = tmp_path / "run"
    _mgc(model, run)
    change(run)
    with pytest.raises(BiaslensError, match=message):
        RunResult.load(run)
    with pytest.raises(BiaslensError, match=message):
        write_report([run], tmp_path / "report.html")
    assert _mgc(model, run).cache_stats["computed"] == 0  # a rerun rebuilds them
    RunResult.load(run)


@pytest.mark.parametrize("name", ["../outside.csv", "/etc/passwd", "plots/../../x.png", ""])
def test_an_output_name_outside_the_run_folder_is_refused(model, tmp_path, name):
    run = tmp_path / "run"
    _mgc(model, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["outputs"][name] = {"bytes": 1, "sha256": "0" * 64}
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(BiaslensError, match="outside the run folder|not a relative file name"):
        RunResult.load(run)


def test_a_resume_on_a_full_disk_keeps_the_cache_where_it_is(model, tmp_path):
    run = tmp_path / "run"
    with pytest.raises(BiaslensError, match="--max-requests"):
        _mgc(model, run, BackendConfig(device="cpu", batch_size=16, max_requests=10), no_cache=True)
    before = (run / "requests.sqlite").read_bytes()
    with file_size_limit(4096), pytest.raises(BiaslensError) as refused:
        _mgc(model, run, no_cache=True)
    message = str(refused.value)
    assert (
        "\n" not in message
        and "requests.sqlite" in message
        and "answers it holds are kept" in message
    )
    assert not list(run.glob("*.corrupt-*"))  # a refused write is not damage
    assert (run / "requests.sqlite").read_bytes() == before
    assert _cached_answers(run) == 10
    resumed = _mgc(model, run, no_cache=True)
    assert resumed.cache_stats == {"cached": 10, "computed": 20}


def test_a_fresh_run_on_a_full_disk_is_one_line_and_the_next_one_runs(model, tmp_path):
    run = tmp_path / "run"
    with file_size_limit(4096), pytest.raises(BiaslensError, match="request cache"):
        _mgc(model, run)
    assert not list(run.glob("*.corrupt-*"))
    assert _mgc(model, run).cache_stats == {"cached": 0, "computed": 30}


def test_an_output_the_disk_refuses_leaves_the_old_one_and_an_incomplete_run(model, tmp_path):
    run = tmp_path / "run"
    _mgc(model, run)
    plots = {p: p.read_bytes() for p in (run / "plots").glob("*.png")}
    limit = 32768 + 8192  # room for SQLite's shared-memory file and the tables, not the plot
    assert max(len(data) for data in plots.values()) > limit
    with file_size_limit(limit), pytest.raises(BiaslensError, match="cannot write .*png: File"):
        _mgc(model, run)
    assert all(path.read_bytes() == data for path, data in plots.items())
    assert not list(run.rglob(".*.tmp"))
    with pytest.raises(BiaslensError, match="incomplete"):
        RunResult.load(run)
    assert _mgc(model, run).cache_stats["computed"] == 0


def test_a_refused_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("kept\n")
    with file_size_limit(1024), pytest.raises(BiaslensError) as refused:
        atomic.write_bytes(path, b"x" * 4096)
    assert str(refused.value).startswith(f"cannot write {path}: File too large; nothing was")
    assert path.read_text() == "kept\n" and [p.name for p in tmp_path.iterdir()] == ["table.csv"]


@pytest.mark.parametrize(
    ("code", "damage"),
    [(11, True), (26, True), (267, True), (10, False), (13, False), (14, False), (4874, False)],
    ids=["corrupt", "notadb", "corrupt-vtab", "ioerr", "full", "cantopen", "ioerr-shmsize"],
)
def test_only_sqlite_damage_codes_count_as_damage(code, damage):
    from biaslens.store.cache_faults import is_damage

    error = sqlite3.OperationalError("some message")
    error.sqlite_errorcode = code
    assert is_damage(error) is damage
