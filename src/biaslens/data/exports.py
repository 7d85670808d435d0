"""The probe sets biaslens generates, as tables others can load (``biaslens datasets export``).

Each entry builds the exact rows a run reads, in the order it reads them, and says where they
come from and under which license. The writing (formats, card, atomic folder) is
:mod:`biaslens.data.export_writer`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biaslens.data import cid_audit, lei, mgc, sources, winogender
from biaslens.data.unqover import DOMAINS, load_question_set
from biaslens.errors import BiaslensError


@dataclass(frozen=True)
class ExportableSet:
    """A generated probe set: ``chunks(data_dir)`` yields its rows in order."""

    name: str
    description: str
    source: str
    license: str
    how: str
    chunks: Callable[[Path | None], Iterator[pd.DataFrame]]


def _one(build: Callable[[Path | None], pd.DataFrame]):
    return lambda data_dir: iter([build(data_dir)])


def _unqover(domain: str):
    def chunks(data_dir):
        root = sources.locate("unqover", data_dir) / "word_lists"
        yield from load_question_set(domain, root).iter_examples()

    return chunks


def _lei_interventions(domain: str):
    def build(data_dir):
        folder = sources.locate("lei", data_dir)
        return lei.load_interventions(folder / "interventions" / f"{domain}_interventions.json")

    return _one(build)


def _lei_split(name: str):
    def build(data_dir):
        return lei.read_split(lei.split_path(name, sources.locate("lei", data_dir)))

    return _one(build)


def _cid_names(_data_dir) -> pd.DataFrame:
    """Every template × ordered pair of name groups × name pair, as cid-audit fills them."""
    groups, templates = cid_audit.load_name_groups(), cid_audit.load_templates()
    parts = []
    for (key, template), (a, b) in itertools.product(
        templates.items(), itertools.permutations(groups.values(), 2)
    ):
        pairs = cid_audit.audit_pairs(a, b, template)
        parts.append(pairs.assign(template=key, group_a=a.name, group_b=b.name))
    return pd.concat(parts, ignore_index=True)


SIB = "Underspecification in pronoun resolution (SIB), https://github.com/2dot71mily/sib_paper"
UNQOVER = "allenai/unqover @ 3e47969 word lists"
LEI = "allenai/ethical-interventions @ 6c499c6"

EXPORTS: dict[str, ExportableSet] = {
    "mgc": ExportableSet(
        "mgc", "the Masked Gender Challenge: 3000 gender-neutral sentences (SIB Section 4.1)",
        SIB, "Apache-2.0 (biaslens)", "built in: In {W}, [MASK] {verb} {life stage}. over the "
        "reference code's 30-date grid and 20 places (App. D)",
        _one(lambda _: mgc.build_mgc()),
    ),
    "winogender-extended": ExportableSet(
        "winogender-extended", "the extended Winogender set of SIB Method 2 (480 sentences)",
        "rudinger/winogender-schemas @ 1c7f8b4", "MIT",
        "Winogender's templates with the participant and both pronoun forms (Section 5)",
        _one(lambda d: winogender.build_extended(sources.locate("winogender", d))),
    ),
    "sib-simplified": ExportableSet(
        "sib-simplified", "biaslens's Simplified set of SIB Method 2 (51 occupations)",
        "biaslens (rewrite of the SIB paper's Simplified set)", "Apache-2.0 (biaslens)",
        "one sentence per occupation and female / male / unspecified answer",
        _one(lambda _: winogender.build_simplified()),
    ),
    **{
        f"unqover-{domain}": ExportableSet(
            f"unqover-{domain}", f"every UnQover {domain} example, with its key (both subject "
            "orders, both questions)", UNQOVER, "Apache-2.0",
            "the slot templates × subject pairs × activities of UnQover's word lists",
            _unqover(domain),
        )
        for domain in DOMAINS
    },
    **{
        f"lei-interventions-{domain}": ExportableSet(
            f"lei-interventions-{domain}", f"LEI's {domain} intervention sentences by type and "
            "category", LEI, "Apache-2.0", "the release's intervention file, one row per "
            "sentence", _lei_interventions(domain),
        )
        for domain in ("religion", "ethnicity", "gender")
    },
    **{
        f"lei-{split.replace('/', '-')}": ExportableSet(
            f"lei-{split.replace('/', '-')}", f"the LEI split {split} (contexts, questions, "
            "interventions, stored zero-shot probabilities)", LEI, "Apache-2.0",
            "the release's SQuAD-format split, one row per paragraph and question pair",
            _lei_split(split),
        )
        for split in lei.SPLITS
    },
    "cid-names": ExportableSet(
        "cid-names", "the CID audit's name-pair prompts (both directions)",
        "biaslens (the CID paper's templates and name groups)", "Apache-2.0 (biaslens)",
        "every template × ordered pair of name groups × name pair",
        _one(_cid_names),
    ),
}  # fmt: skip
"""Every exportable set, by name."""

NOT_EXPORTABLE = {
    "simplified-reference": "the SIB authors' Simplified file has no license: biaslens fetches "
    "it for a run and never redistributes it (export sib-simplified, biaslens's own)",
}


def exportable(name: str) -> ExportableSet:
    """The set ``name``, or one line naming those that can be exported."""
    if name in NOT_EXPORTABLE:
        raise BiaslensError(f"{name} cannot be exported: {NOT_EXPORTABLE[name]}")
    if name not in EXPORTS:
        raise BiaslensError(f"unknown set {name!r}; exportable: {', '.join(EXPORTS)}")
    return EXPORTS[name]
