"""Name groups and templates of the CID audit (paper Appendix C)."""

from __future__ import annotations

import pytest

from biaslens.data import cid_audit as A
from biaslens.errors import BiaslensError


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
    templates = tmp_path / "t.yaml"
    templates.write_text("interview: '{person} failed'\n")
    with pytest.raises(BiaslensError, match="t.yaml: template 'interview'"):
        A.load_templates(templates)
    names = tmp_path / "n.yaml"
    names.write_text("group1:\n  gender: other\n  names: [A]\n")
    with pytest.raises(BiaslensError, match="n.yaml: group 'group1': field 'gender'"):
        A.load_name_groups(names)
    names.write_text("group1:\n  gender: male\n  names: []\n")
    with pytest.raises(BiaslensError, match="field 'names'"):
        A.load_name_groups(names)
    names.write_text("just text")
    with pytest.raises(BiaslensError, match="mapping"):
        A.load_name_groups(names)
