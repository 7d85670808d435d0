"""Every reader of a user file: binary bytes, a folder, a missing file -> one clear error that
names the file (and the line where it can), never a UnicodeDecodeError or OSError traceback."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid import ratings
from biaslens.methods.cid.data import cid_audit, perturbations
from biaslens.methods.qa.data import lei, squad, unqover, unqover_predictions
from biaslens.methods.sib.data import winogender as W
from biaslens.methods.sib.mgc.compare import read_models_file
from biaslens.store.result import RunResult

BINARY = b"first line\n\xff\xfe\x00\x81binary\n"

EXPORTED = pd.DataFrame(
    {"id": [0], "group": ["g"], "lam": [0.0], "continuation": ["x"], "count": [1]}
)

READERS = {
    "unqover predictions (JSON)": lambda p: unqover_predictions.read_predictions(p),
    "LEI split (JSON)": lambda p: lei.read_split(p),
    "SQuAD file (JSON)": lambda p: squad.read_squad(p),
    "specifying sentences (TSV)": lambda p: lei.read_specifying_sentences(p),
    "word list": lambda p: unqover.parse_subjects(p),
    "slot templates": lambda p: unqover.parse_slots(p),
    "activities": lambda p: unqover.parse_activities(p),
    "name groups (YAML)": lambda p: cid_audit.load_name_groups(p),
    "CID templates (YAML)": lambda p: cid_audit.load_templates(p),
    "CID sentences": lambda p: perturbations.load_sentences(p),
    "semantic pairs (TSV)": lambda p: perturbations.load_semantic_pairs(p),
    "synonyms (TSV)": lambda p: perturbations.load_synonyms(p),
    "ratings (CSV)": lambda p: ratings.read_ratings(p, EXPORTED),
    "models file": lambda p: read_models_file(p),
    "Simplified templates (TSV)": lambda p: W.load_simplified_templates(p),
    "Winogender templates (TSV)": lambda p: W.load_templates(_as_folder(p, W.TEMPLATES_FILE)),
    "Winogender statistics (TSV)": lambda p: W.load_occupation_stats(_as_folder(p, W.STATS_FILE)),
    "run summary": lambda p: RunResult.load(_as_run(p)),
}


def _as_folder(path: Path, name: str) -> Path:
    """A folder holding ``path``'s content under the dataset's file name."""
    folder = path.parent / f"{path.name}-folder"
    folder.mkdir(exist_ok=True)
    target = folder / name
    if path.is_dir():
        target.mkdir(exist_ok=True)
    elif path.exists():
        target.write_bytes(path.read_bytes())
    return folder


def _as_run(path: Path) -> Path:
    folder = path.parent / f"{path.name}-run"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text("format_version: 1\nmethod: sib-toy\nsettings: {}\n")
    if path.is_file():
        (folder / "summary.json").write_bytes(path.read_bytes())
    elif path.is_dir():
        (folder / "summary.json").mkdir(exist_ok=True)
    return folder


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_binary_content_names_the_file_and_line(reader, tmp_path):
    path = tmp_path / "input"
    path.write_bytes(BINARY)
    with pytest.raises(BiaslensError) as error:
        reader(path)
    message = str(error.value)
    assert "input" in message, message
    assert ":2: not UTF-8 text" in message, message


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_a_folder_given_as_the_file_is_a_clear_error(reader, tmp_path):
    path = tmp_path / "input"
    path.mkdir()
    with pytest.raises(BiaslensError, match="is a folder, not a file|not found|no such|incomplete"):
        reader(path)


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_a_missing_file_is_a_clear_error(reader, tmp_path):
    with pytest.raises(BiaslensError, match="not found|incomplete|no such"):
        reader(tmp_path / "missing")
