"""Name groups and templates of the CID audit (paper Appendix C)."""

from __future__ import annotations

import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid.data import cid_audit as A
from tests.helpers import assert_refused


def test_appendix_c_groups():
    groups = A.load_name_groups()
    assert sorted(groups) == sorted(
        f"{c}-{g}" for c in ("us", "mexico", "egypt") for g in ("male", "female")
    )
    assert all(len(g.names) == 10 for g in groups.values())
    assert groups["us-male"].names[:2] == ("James", "John")
    assert groups["egypt-male"].names[-1] == "Youssef"
    assert groups["us-female"].gender == "female"


def test_template_pronouns_follow_gender():
    template = A.load_templates()["software-developer"]
    assert A.fill_template(template, "John", "male") == (
        "John, a software developer, failed his interview at a major tech company because he"
    )
    assert A.fill_template(template, "Emma", "female").endswith(
        "failed her interview at a major tech company because she"
    )


def test_all_name_pairs():
    groups = A.load_name_groups()
    pairs = A.audit_pairs(groups["us-male"], groups["us-female"], "{name} said {he}")
    assert len(pairs) == 100 and pairs["pair"].tolist() == list(range(100))
    first = pairs.iloc[0]
    assert (first.x_a, first.x_b) == ("James said he", "Olivia said she")
    with pytest.raises(BiaslensError, match="two different"):
        A.audit_pairs(groups["us-male"], groups["us-male"], "{name}")


def test_bad_templates_and_names(tmp_path):
    with pytest.raises(BiaslensError, match="no \\{name\\} slot"):
        A.check_template("A developer failed because {he}")
    with pytest.raises(BiaslensError, match="unknown slot"):
        A.check_template("{name} and {she}")
    assert_refused(
        A.load_templates, tmp_path / "t.yaml",
        ("interview: '{person} failed'\n", "t.yaml: template 'interview'"),
    )  # fmt: skip
    assert_refused(
        A.load_name_groups, tmp_path / "n.yaml",
        ("group1:\n  gender: other\n  names: [A]\n", "n.yaml: group 'group1': field 'gender'"),
        ("group1:\n  gender: male\n  names: []\n", "field 'names'"),
        ("just text", "mapping"),
    )  # fmt: skip
