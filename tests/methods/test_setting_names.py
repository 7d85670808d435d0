"""The Python API speaks the command line's names: ``biaslens.run(method, qa_mode=...)`` is
``--qa-mode``, ``lam=5`` is ``--lam 5``; an unknown name gets the nearest ones; and
``biaslens.settings(method)`` lists what ``biaslens run METHOD --help`` shows."""

from __future__ import annotations

import pytest

import biaslens
from biaslens.errors import BiaslensError
from biaslens.framework.registry import get_method, methods


@pytest.mark.parametrize(
    ("method", "cli_names", "keywords"),
    [
        ("unqover", {"qa_mode": "extractive"}, {"mode": "extractive"}),
        ("sib-mgc", {"w": ("places",)}, {"w_kinds": ("places",)}),
        ("sib-mgc", {"prompt": "B"}, {"prompts": ("B",)}),
        ("sib-mgc", {"scoring": "paper"}, {"mode": "paper"}),
        ("cid-audit", {"lam": 5.0}, {"lams": (5.0,)}),
        ("lei-eval", {"qa_mode": "generative"}, {"mode": "generative"}),
        ("sib-detect", {"set": "simplified"}, {"sets": ("simplified",)}),
    ],
)
def test_a_cli_name_builds_the_same_settings_as_the_keyword(method, cli_names, keywords):
    spec = get_method(method)
    by_name = spec.build_settings(**cli_names)
    assert by_name == spec.build_settings(**keywords)
    assert by_name != spec.build_settings()  # the name reached the setting


def test_every_option_of_every_method_is_accepted_by_its_flag_name():
    from biaslens.framework.names import flag_names, keywords_from_names, setting_keywords

    for spec in methods().values():
        for option in spec.options:
            if option.display or option.sets is not None:
                continue
            for name in set(flag_names(option)) - setting_keywords(spec):  # a keyword wins
                translated = keywords_from_names(spec, {name: None})
                assert list(translated) == [option.keyword.partition(".")[0]], (spec.name, name)


@pytest.mark.parametrize(
    ("method", "name", "suggested"),
    [
        ("unqover", "qa_mod", "'qa_mode'"),
        ("sib-mgc", "w_kind", "'w_kinds'"),
        ("cid-audit", "lamda", "'lam'"),
        ("sib-mgc", "batchsize", "'batch_size'"),
    ],
)
def test_an_unknown_name_gets_the_nearest_ones(method, name, suggested):
    with pytest.raises(BiaslensError, match=f"has no setting '{name}'; did you mean .*{suggested}"):
        get_method(method).build_settings(**{name: 1})


def test_a_name_with_nothing_near_lists_where_to_look():
    with pytest.raises(BiaslensError, match=r"no setting 'zzz' \(biaslens.settings\('unqover'\)"):
        biaslens.run("unqover", zzz=1)


def test_settings_lists_each_flag_with_its_default_and_help():
    table = biaslens.settings("sib-mgc")
    assert list(table.columns) == ["setting", "flag", "type", "default", "help"]
    row = table.set_index("flag").loc["--w"]
    assert row["setting"] == "w_kinds" and row["type"] == "str (several)"
    assert row["default"] == "dates places" and row["help"]
    assert table.set_index("flag").loc["--limit", "type"] == "int"


@pytest.mark.parametrize("method", ["sib-mgc", "sib-detect", "unqover", "lei-eval"])
def test_limit_zero_means_all_in_every_method_and_is_recorded_as_not_given(method):
    spec = get_method(method)
    assert spec.build_settings(limit=0).limit is None
    assert spec.build_settings(limit=0).recorded()["limit"] is None
    assert spec.build_settings(limit=3).limit == 3
    with pytest.raises(BiaslensError, match="invalid limit"):
        spec.build_settings(limit=-1)
