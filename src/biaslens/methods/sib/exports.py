"""SIB's probe sets, as ``biaslens datasets export`` writes them."""

from __future__ import annotations

from biaslens.data import sources
from biaslens.data.exports import ExportableSet, one_table, register_sets
from biaslens.methods.sib.data import mgc, winogender

SIB = "Underspecification in pronoun resolution (SIB), https://github.com/2dot71mily/sib_paper"

register_sets(
    ExportableSet(
        "mgc",
        "the Masked Gender Challenge: 3000 gender-neutral sentences (SIB Section 4.1)",
        SIB,
        "Apache-2.0 (biaslens)",
        "built in: In {W}, [MASK] {verb} {life stage}. over the reference code's 30-date grid "
        "and 20 places (App. D)",
        one_table(lambda _: mgc.build_mgc()),
    ),
    ExportableSet(
        "winogender-extended",
        "the extended Winogender set of SIB Method 2 (480 sentences)",
        "rudinger/winogender-schemas @ 1c7f8b4",
        "MIT",
        "Winogender's templates with the participant and both pronoun forms (Section 5)",
        one_table(lambda d: winogender.build_extended(sources.locate("winogender", d))),
    ),
    ExportableSet(
        "sib-simplified",
        "biaslens's Simplified set of SIB Method 2 (51 occupations)",
        "biaslens (rewrite of the SIB paper's Simplified set)",
        "Apache-2.0 (biaslens)",
        "one sentence per occupation and female / male / unspecified answer",
        one_table(lambda _: winogender.build_simplified()),
    ),
)
