"""A JSON object read member by member equals json.load, with block ends anywhere."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biaslens.common import json_stream
from biaslens.common.json_stream import iter_object_members
from biaslens.errors import BiaslensError

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(json_stream, "BLOCK_BYTES", 3)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(), values, max_size=6), st.sampled_from([None, 0, 2]))
def test_members_equal_json_load(tmp_path_factory, data, indent):
    path = tmp_path_factory.mktemp("j") / "d.json"
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False), encoding="utf-8")
    original = json_stream.BLOCK_BYTES
    json_stream.BLOCK_BYTES = 3  # block ends inside keys, numbers and multi-byte characters
    try:
        assert dict(iter_object_members(path, "test file")) == data
    finally:
        json_stream.BLOCK_BYTES = original


def test_a_number_cut_by_a_block_end_is_read_whole(tmp_path, small_blocks):
    path = tmp_path / "d.json"
    path.write_text('{"a": 1234567, "b": -0.125e3, "c": "ü€𝄞"}')
    assert list(iter_object_members(path, "f")) == [("a", 1234567), ("b", -125.0), ("c", "ü€𝄞")]


def test_a_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "d.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert list(iter_object_members(path, "f")) == [("a", 1)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", r"d.json:1: .*expected an object"),
        ('{"a": 1}\n\n[]', r"d.json:3: .*extra data"),
        ('{"a": 1\n "b": 2}', r"d.json:2: .*expected ',' or '}'"),
        ('{\n"a": 1,\n\n"b": tru}', r"d.json:4: .*Expecting value"),
        ('{"a" 1}', r"d.json:1: .*expected ':'"),
        ("{1: 2}", r"d.json:1: .*expected a quoted key"),
        ('{"a": "open', r"d.json:1: .*Unterminated string"),
        ('{"a": 1,', r"expected a quoted key"),
        ("", r"expected an object"),
        ('{"a": 1, "b": 2, "a": 3}', r"gives the key 'a' more than once"),
    ],
)
def test_bad_json_names_the_line(tmp_path, small_blocks, text, message):
    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(BiaslensError, match=message):
        list(iter_object_members(path, "f"))


def test_binary_bytes_name_their_line(tmp_path):
    path = tmp_path / "d.json"
    path.write_bytes(b'{"a": 1,\n"b": "\xff\xfe"}')
    with pytest.raises(BiaslensError, match=r"d.json:2: not UTF-8 text"):
        list(iter_object_members(path, "f"))


def test_a_member_over_the_bound_is_refused_not_read_to_the_end(tmp_path, monkeypatch):
    monkeypatch.setattr(json_stream, "BLOCK_BYTES", 16)
    monkeypatch.setattr(json_stream, "MAX_MEMBER_CHARS", 100)
    path = tmp_path / "d.json"
    path.write_text('{"a": [' + "1, " * 1000 + "oops]}")
    read = []
    monkeypatch.setattr(json_stream._Buffer, "more", _counting(json_stream._Buffer.more, read))
    with pytest.raises(BiaslensError, match="d.json:1: .*Expecting value"):
        list(iter_object_members(path, "f"))
    assert len(read) * 16 < 300  # stopped near the bound, not at the file's end (3 kB)


def _counting(method, calls):
    def more(self):
        calls.append(1)
        return method(self)

    return more
