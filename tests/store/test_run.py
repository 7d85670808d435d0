import hashlib
import json

import pandas as pd
import pytest
import yaml

from biaslens.common import atomic
from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.store.run import FORMAT_VERSION, RunStore, dataset_hash


def _digest(folder):
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.odd_run_folder
def test_run_directory_layout_and_summary(tmp_path):
    store = RunStore(
        tmp_path / "run", "sib-mgc", {"model": "m", "mode": "exact"}, {"device": "cpu"}
    )
    store.write_samples(pd.DataFrame({"a": [1, 2]}))
    store.write_table("fits", pd.DataFrame({"slope": [0.5]}))
    store.write_summary({"x": 1}, model={"name": "m"})
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert config == {
        "format_version": FORMAT_VERSION,
        "method": "sib-mgc",
        "settings": {"model": "m", "mode": "exact"},
        "runtime": {"device": "cpu"},
    }
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"] == {"x": 1} and summary["model"] == {"name": "m"}
    assert summary["versions"]["torch"] and "git_revision" in summary
    assert pd.read_parquet(tmp_path / "run" / "samples.parquet")["a"].tolist() == [1, 2]
    fits = pd.read_csv(tmp_path / "run" / "fits.csv")
    assert fits.to_dict(orient="records") == [{"model": "m", "method": "sib-mgc", "slope": 0.5}]
    store.close()


def test_same_settings_reopen_and_runtime_may_change(tmp_path):
    with RunStore(tmp_path, "sib-mgc", {"model": "m"}, {"batch_size": 8}) as first:
        first.write_summary({"x": 1})
    with RunStore(tmp_path, "sib-mgc", {"model": "m"}, {"batch_size": "auto"}) as again:
        again.open()
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert config["settings"] == {"model": "m"}
    assert config["runtime"] == {"batch_size": "auto"}  # the resumption's own, recorded
    assert json.loads((tmp_path / "summary.json").read_text())["metrics"] == {"x": 1}  # kept


def test_different_config_is_refused_and_nothing_is_touched(tmp_path):
    store = RunStore(tmp_path, "sib-mgc", {"model": "m", "mode": "exact"}, {})
    store.write_summary({"x": 1})
    store.close()
    before = _digest(tmp_path)
    with pytest.raises(ConfigMismatchError, match=r"different config \(mode: 'exact' -> 'paper'\)"):
        RunStore(tmp_path, "sib-mgc", {"model": "m", "mode": "paper"}, {})
    with pytest.raises(ConfigMismatchError, match="holds a sib-mgc run, not sib-detect"):
        RunStore(tmp_path, "sib-detect", {"model": "m", "mode": "exact"}, {})
    assert _digest(tmp_path) == before


def test_non_run_directory_and_newer_format_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(BiaslensError, match="not empty and holds no biaslens run"):
        RunStore(tmp_path, "sib-mgc", {}, {})
    assert (tmp_path / "notes.txt").read_text() == "mine"
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / "config.yaml").write_text(
        yaml.safe_dump({"format_version": 99, "method": "sib-mgc", "settings": {}})
    )
    with pytest.raises(BiaslensError, match="newer than this biaslens understands"):
        RunStore(newer, "sib-mgc", {}, {})
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.yaml").write_text("just: [a, broken")
    with pytest.raises(BiaslensError, match="cannot read the run configuration"):
        RunStore(broken, "sib-mgc", {}, {})


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "summary.json"
    atomic.write_json(target, {"done": True})

    def failing(handle):
        handle.write(b"{partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic.write_atomic(target, failing)
    assert json.loads(target.read_text()) == {"done": True}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_dataset_hash_depends_on_content():
    a = pd.DataFrame({"s": ["x", "y"]})
    assert dataset_hash(a) == dataset_hash(a.copy())
    assert dataset_hash(a) != dataset_hash(pd.DataFrame({"s": ["x", "z"]}))
