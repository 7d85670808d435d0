"""CID's probe set, as ``biaslens datasets export`` writes it."""

from __future__ import annotations

import itertools

import pandas as pd

from biaslens.data.exports import ExportableSet, one_table, register_sets
from biaslens.methods.cid.data import cid_audit


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


register_sets(
    ExportableSet(
        "cid-names",
        "the CID audit's name-pair prompts (both directions)",
        "biaslens (the CID paper's templates and name groups)",
        "Apache-2.0 (biaslens)",
        "every template × ordered pair of name groups × name pair",
        one_table(_cid_names),
    )
)
