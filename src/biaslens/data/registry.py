"""Datasets biaslens knows about, for ``biaslens datasets list``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    method: str
    size: str
    source: str
    available: str


DATASETS: dict[str, DatasetInfo] = {
    "mgc": DatasetInfo(
        "mgc",
        "SIB Method 1",
        "3000 sentences (30 dates + 20 places) x 10 verbs x 6 life stages",
        "SIB paper, Appendix D (built in)",
        "built in",
    ),
    "winogender": DatasetInfo(
        "winogender",
        "SIB Method 2",
        "120 templates, 60 occupations; extended set 480 sentences; Simplified set 153 "
        "(51 occupations x female/male/unmarked, data file in the package)",
        "rudinger/winogender-schemas @ 1c7f8b4 (MIT)",
        "biaslens datasets download winogender, or --data-dir",
    ),
    "unqover": DatasetInfo(
        "unqover",
        "UnQover",
        "word lists: religion 77,000, ethnicity 147,000, gender 2,744,000, nationality "
        "2,308,464 examples (x 2 questions)",
        "allenai/unqover @ 3e47969 (Apache-2.0)",
        "biaslens datasets download unqover, or --data-dir",
    ),
    "lei": DatasetInfo(
        "lei",
        "LEI",
        "interventions (religion, ethnicity, gender); religion train 64/256/1024/4096 and "
        "noniid dev/test, ethnicity and gender noniid test (2,400 contexts each); "
        "5,432 specified-context examples",
        "allenai/ethical-interventions @ 6c499c6 (Apache-2.0)",
        "biaslens datasets download lei, or --data-dir",
    ),
    "sib-simplified": DatasetInfo(
        "sib-simplified",
        "SIB Method 2 (--preset paper)",
        "the reference Simplified set: 48 occupations x female/male/unspecified = 144",
        "2dot71mily/sib_paper @ 812af8c (no license stated; fetched, never shipped)",
        "biaslens datasets download sib-simplified, or --data-dir",
    ),
    "sib-outputs": DatasetInfo(
        "sib-outputs",
        "biaslens metrics sib-detect; sib-mgc's known models on a run's own frames",
        "the SIB paper's released outputs: Method 2 of 11 models (24,075 CSV files) and Method "
        "1 of 12 (282)",
        "2dot71mily/sib_paper @ 812af8c (no license stated; fetched, never shipped)",
        "biaslens datasets download sib-outputs, or --data-dir",
    ),
}
