"""The model card's biaslens section: appended once, replaced in place, refused when half of
it was edited away."""

from __future__ import annotations

import pytest

from biaslens.auditing.publish import BEGIN, END, with_section
from biaslens.errors import BiaslensError

SECTION = f"{BEGIN}\n## Bias audit (biaslens)\n\nnew\n{END}\n"


def test_the_section_is_appended_then_replaced_in_place():
    readme = "---\nlicense: mit\n---\n# A model\n\ntext\n"
    first = with_section(readme, SECTION)
    assert first == readme + "\n" + SECTION
    edited = first + "\n## Citation\n\nkept\n"
    again = with_section(edited, SECTION.replace("new", "newer"))
    assert again == edited.replace("\nnew\n", "\nnewer\n")
    assert with_section("", SECTION) == SECTION


def test_a_section_with_one_marker_left_is_refused():
    with pytest.raises(BiaslensError, match="only one of biaslens's section markers"):
        with_section(f"# A model\n\n{BEGIN}\nold\n", SECTION)
