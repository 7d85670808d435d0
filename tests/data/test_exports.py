"""Probe sets exported where others load them: every format read back with `datasets`, the card
and checksum, refusals, and an interrupted export that leaves nothing that loads."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from biaslens.data import exports
from biaslens.data.export_writer import export_samples, export_set
from biaslens.errors import BiaslensError
from biaslens.framework.registry import exportable_sets
from biaslens.methods.qa.data import lei
from biaslens.methods.sib.data import mgc
from tests.conftest import DATA

ALL = exportable_sets()
SETS = ["mgc", "winogender-extended", "sib-simplified", "unqover-religion",
        "lei-interventions-religion", "lei-religion-train_64", "cid-names"]  # fmt: skip


def load(folder, fmt: str, cache) -> pd.DataFrame:
    """The exported set as `datasets` reads it."""
    import datasets

    if fmt == "hf":
        return datasets.load_from_disk(str(folder / "data")).to_pandas()
    kind, name = ("parquet", "train.parquet") if fmt == "parquet" else ("json", "train.jsonl")
    ways = [  # every usual way of loading a folder laid out as a hub dataset repo
        dict(path=kind, data_files=str(folder / "data" / name)),
        dict(path=kind, data_dir=str(folder)),
        dict(path=str(folder)),
    ]
    frames = [
        datasets.load_dataset(**way, split="train", cache_dir=str(cache / str(i))).to_pandas()
        for i, way in enumerate(ways)
    ]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])
    return frames[0]


def comparable(frame: pd.DataFrame) -> list[dict]:
    """Rows as plain values (JSON turns ints in object columns and NaN into other types)."""
    return json.loads(frame.to_json(orient="records"))


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "hf"])
@pytest.mark.parametrize("name", SETS)
def test_a_set_reads_back_as_the_rows_a_run_uses(name, fmt, tmp_path):
    done = export_set(exports.exportable(name, ALL), tmp_path / "out", fmt, DATA)
    expected = pd.concat(list(ALL[name].chunks(DATA)), ignore_index=True)
    got = load(tmp_path / "out", fmt, tmp_path / "cache")
    assert done.rows == len(expected) == len(got) > 0
    assert list(got.columns) == [str(c) for c in expected.columns]
    assert comparable(got) == comparable(expected)
    meta = json.loads((tmp_path / "out" / "biaslens.json").read_text())
    data = tmp_path / "out" / meta["data"]
    if data.is_dir():  # one "name<TAB>sha256" line per file, in name order
        files = sorted(p for p in data.rglob("*") if p.is_file())
        lines = "".join(
            f"{p.relative_to(data).as_posix()}\t{hashlib.sha256(p.read_bytes()).hexdigest()}\n"
            for p in files
        )
        digest = hashlib.sha256(lines.encode()).hexdigest()
    else:
        digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert meta["sha256"] == digest == done.sha256
    card = (tmp_path / "out" / "README.md").read_text()
    assert card.startswith("---\nlicense: ") and digest in card
    assert ALL[name].source in card


def test_the_exported_rows_are_the_builders_in_order(tmp_path):
    """What a run reads: MGC from its template, a LEI split as read_split gives it."""
    export_set(exports.exportable("mgc", ALL), tmp_path / "mgc", "jsonl")
    lines = (tmp_path / "mgc" / "data" / "train.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert len(lines) == 3000 and first["sentence"] == "In 1801, [MASK] was a child."
    assert [json.loads(line)["id"] for line in lines] == list(mgc.build_mgc()["id"])
    export_set(exports.exportable("lei-religion-train_64", ALL), tmp_path / "lei", "parquet", DATA)
    split = lei.read_split(lei.split_path("religion/train_64", DATA / "lei"))
    assert list(pd.read_parquet(tmp_path / "lei" / "data" / "train.parquet")["key"]) == list(
        split["key"]
    )


def test_bad_requests_are_one_line(tmp_path):
    with pytest.raises(BiaslensError, match="unknown set 'nope'; exportable: cid-names, unqover-"):
        exports.exportable("nope", ALL)
    with pytest.raises(BiaslensError, match="no license"):
        exports.exportable("simplified-reference", ALL)
    with pytest.raises(BiaslensError, match="unknown format 'csv'"):
        export_set(exports.exportable("mgc", ALL), tmp_path / "x", "csv")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(BiaslensError, match="exists and is not empty: pass --overwrite"):
        export_set(exports.exportable("mgc", ALL), tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    done = export_set(exports.exportable("mgc", ALL), tmp_path / "full", overwrite=True)
    assert done.rows == 3000 and not (tmp_path / "full" / "keep.txt").exists()


def test_an_interrupted_export_leaves_nothing_that_loads(tmp_path, monkeypatch):
    entry = exports.exportable("mgc", ALL)

    def broken(_data_dir):
        yield mgc.build_mgc().head(10)
        raise KeyboardInterrupt

    failing = exports.ExportableSet(**{**entry.__dict__, "chunks": broken})
    with pytest.raises(KeyboardInterrupt):
        export_set(failing, tmp_path / "new")
    assert list(tmp_path.iterdir()) == []  # neither the set nor its staging folder
    export_set(entry, tmp_path / "old")
    before = (tmp_path / "old" / "data" / "train.parquet").read_bytes()
    with pytest.raises(KeyboardInterrupt):
        export_set(failing, tmp_path / "old", overwrite=True)
    assert (
        tmp_path / "old" / "data" / "train.parquet"
    ).read_bytes() == before  # the finished set stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]


def test_a_runs_samples_as_json_lines(tiny_models, tmp_path):
    import biaslens

    result = biaslens.run(
        "sib-mgc", str(tiny_models["llama"]), output=tmp_path / "run", w_kinds=("dates",),
        limit=1, report=False, device="cpu",
    )  # fmt: skip
    rows = export_samples(result.run_dir, tmp_path / "samples.jsonl")
    records = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert rows == len(records) == len(samples)
    assert [r["input"] for r in records] == list(samples["input"])
    assert [r["p_female"] for r in records] == pytest.approx(list(samples["p_female"]))
    with pytest.raises(BiaslensError, match="exists: pass --overwrite"):
        export_samples(result.run_dir, tmp_path / "samples.jsonl")
    with pytest.raises(BiaslensError, match="no samples.parquet"):
        export_samples(tmp_path, tmp_path / "other.jsonl")


def test_the_cli_exports_and_lists(monkeypatch, capsys, tmp_path):
    from tests.test_cli import run_cli

    code, out, _ = run_cli(monkeypatch, capsys, "datasets", "exportable")
    assert code == 0 and "unqover-religion" in out and "cid-names" in out
    code, out, _ = run_cli(monkeypatch, capsys, "datasets", "export", "sib-simplified",
                           str(tmp_path / "s"), "--format", "jsonl")  # fmt: skip
    assert code == 0 and "153 rows" in out
    code, _, err = run_cli(monkeypatch, capsys, "datasets", "export", "sib-simplified",
                           str(tmp_path / "s"))  # fmt: skip
    assert code != 0 and "pass --overwrite" in err
