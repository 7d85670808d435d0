"""Build the small dataset fixtures under ``tests/fixtures/datasets`` from the full public data.

The test suite runs on a fresh clone without the full benchmark data: these fixtures stand in
for it. They keep the layout of the full data folder (``NAME/FILE``) and every file biaslens
reads, with the large LEI split files cut to a deterministic subsample that still holds every
intervention type and category (both subject orders of a context stay together).

    python scripts/make_test_data.py ../shared/datasets

Word lists, interventions and Winogender files are small and copied whole, with their licenses.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "fixtures" / "datasets"
sys.path.insert(0, str(ROOT / "src"))

from biaslens.data.sources import REMOTE  # noqa: E402

SPLIT_FRACTION = 40  # keep about 1 in 40 context pairs of a large split
SPLIT_WHOLE_BELOW = 120_000  # bytes: train_64 and train_256 are kept whole
SPECIFIED_KEEP = 60  # specified-context examples kept


def _bucket(text: str, modulo: int) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % modulo


def _pair_key(key: str) -> str:
    """The key without the subject order: both orders of a context share it."""
    parts = key.split("|")
    return "|".join(sorted(parts[:2]) + parts[2:])


def subsample_split(source: Path, target: Path) -> None:
    raw = json.loads(source.read_text(encoding="utf-8"))
    articles = raw["data"]
    kept, strata = [], set()
    for article in articles:
        paragraph = article["paragraphs"][0]
        key = paragraph["key"]
        stratum = (paragraph.get("intervention"), key.split("|")[3])
        if _bucket(_pair_key(key), SPLIT_FRACTION) == 0:
            kept.append(article)
            strata.add(stratum)
    chosen_pairs = {_pair_key(a["paragraphs"][0]["key"]) for a in kept}
    for article in articles:  # one pair for every stratum the hash missed
        paragraph = article["paragraphs"][0]
        key = paragraph["key"]
        stratum = (paragraph.get("intervention"), key.split("|")[3])
        if stratum not in strata:
            strata.add(stratum)
            chosen_pairs.add(_pair_key(key))
    kept = [a for a in articles if _pair_key(a["paragraphs"][0]["key"]) in chosen_pairs]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({**raw, "data": kept}, indent=None), encoding="utf-8")


def subsample_specified(source: Path, target: Path) -> None:
    raw = json.loads(source.read_text(encoding="utf-8"))

    def pair(key: str) -> str:  # both subject orders of a context share it
        parts = key.split("|")
        return "|".join(sorted(parts[2:4]) + parts[4:])

    pairs = sorted({pair(k) for k in raw}, key=lambda p: hashlib.sha256(p.encode()).hexdigest())
    chosen = set(pairs[: SPECIFIED_KEEP // 2])
    keys = [k for k in raw if pair(k) in chosen]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({k: raw[k] for k in keys}), encoding="utf-8")


def main(full: Path) -> None:
    shutil.rmtree(TARGET, ignore_errors=True)
    for name, spec in REMOTE.items():
        if not (full / name / "LICENSE").is_file():
            continue  # no license to redistribute it under: tests write their own stand-ins
        for local in spec.files:
            source, target = full / name / local, TARGET / name / local
            target.parent.mkdir(parents=True, exist_ok=True)
            if local.endswith("_squad.json") and source.stat().st_size > SPLIT_WHOLE_BELOW:
                subsample_split(source, target)
            elif local.startswith("data/specified/"):
                subsample_specified(source, target)
            else:
                shutil.copyfile(source, target)
        shutil.copyfile(full / name / "LICENSE", TARGET / name / "LICENSE")
    (TARGET / "README.md").write_text(
        "Small stand-ins for the public benchmark data, built by `scripts/make_test_data.py` "
        "from the full files (same layout and licenses: see each folder's LICENSE). Large LEI "
        "split files are deterministic subsamples that keep every intervention type and "
        "category; everything else is copied whole.\n",
        encoding="utf-8",
    )
    total = sum(p.stat().st_size for p in TARGET.rglob("*") if p.is_file())
    print(f"wrote {TARGET} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/make_test_data.py FULL_DATA_DIR")
    main(Path(sys.argv[1]))
