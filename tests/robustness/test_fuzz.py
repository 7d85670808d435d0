"""Fuzzing the parsers of user files: whatever the bytes, a clean result or a ``BiaslensError``,
never another exception. Inputs mix valid structure (so that the fuzzer reaches deep into each
parser) with arbitrary text and bytes."""

from __future__ import annotations

import json
import string
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biaslens.errors import BiaslensError
from biaslens.methods.cid import ratings
from biaslens.methods.cid.data import cid_audit, perturbations
from biaslens.methods.qa.data import lei, unqover, unqover_predictions

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
words = st.text(alphabet=string.ascii_letters + " |[]:-_#.,'\t\n", max_size=40)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    words,
)


def _outcome(parse, data: bytes):
    """Run ``parse`` on a file holding ``data``: a value, or a BiaslensError."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input"
        path.write_bytes(data)
        try:
            return parse(path)
        except BiaslensError as error:
            assert str(error).strip() and "\n" not in str(error).strip()
            return error


answers = st.fixed_dictionaries({"text": words, "start": numbers, "end": numbers})
questions = st.fixed_dictionaries(
    {"question": words, "pred": words, "ans0": answers, "ans1": answers}
)
keys = st.lists(words, min_size=6, max_size=10).map("|".join)
predictions = st.dictionaries(
    keys,
    st.one_of(st.fixed_dictionaries({"context": words, "q0": questions, "q1": questions}), numbers),
    max_size=4,
)


@FUZZ
@given(st.one_of(predictions.map(lambda d: json.dumps(d).encode()), st.binary(max_size=300)))
def test_unqover_predictions(data):
    result = _outcome(unqover_predictions.read_predictions, data)
    if isinstance(result, pd.DataFrame):
        assert result[["s_first", "s_second"]].stack().between(0, 1).all()


list_lines = st.lists(st.one_of(words, texts), max_size=12).map("\n".join)


@FUZZ
@given(st.one_of(list_lines.map(str.encode), st.binary(max_size=300)))
def test_word_lists(data):
    for parse in (unqover.parse_slots, unqover.parse_subjects, unqover.parse_activities):
        _outcome(parse, data)


yaml_values = st.recursive(
    st.one_of(words, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(words, inner, max_size=4)),
    max_leaves=12,
)


@FUZZ
@given(
    st.one_of(
        yaml_values.map(lambda v: json.dumps(v).encode()),  # JSON is YAML
        st.dictionaries(
            words, st.fixed_dictionaries({"gender": words, "names": st.lists(words)})
        ).map(lambda v: json.dumps(v).encode()),
        list_lines.map(str.encode),
        st.binary(max_size=300),
    )
)
def test_cid_yaml_files(data):
    _outcome(cid_audit.load_templates, data)
    _outcome(cid_audit.load_name_groups, data)


EXPORTED = pd.DataFrame(
    {
        "id": [0, 1],
        "group": ["a", "b"],
        "lam": [0.0, 5.0],
        "continuation": ["x", ""],
        "count": [2, 1],
    }
)
rows = st.lists(
    st.tuples(st.sampled_from(["0", "1", "2", "x", ""]), st.sampled_from(["x", "", "y"]), words),
    max_size=4,
)


@FUZZ
@given(
    st.one_of(
        rows.map(
            lambda r: ("id,continuation,biased\n" + "\n".join(",".join(t) for t in r)).encode()
        ),
        list_lines.map(str.encode),
        st.binary(max_size=300),
    )
)
def test_ratings_csv(data):
    result = _outcome(lambda p: ratings.read_ratings(p, EXPORTED), data)
    if isinstance(result, pd.DataFrame):
        assert set(result["biased"]) <= {0, 1}


tsv_lines = st.lists(st.lists(words, max_size=4).map("\t".join), max_size=8).map("\n".join)


@FUZZ
@given(st.one_of(tsv_lines.map(str.encode), st.binary(max_size=300)))
def test_tsv_and_text_files(data):
    _outcome(perturbations.load_semantic_pairs, b"type\toriginal\tperturbed\n" + data)
    _outcome(perturbations.load_semantic_pairs, data)
    _outcome(perturbations.load_synonyms, data)
    _outcome(perturbations.load_sentences, data)
    _outcome(lei.read_specifying_sentences, data)


squad_like = st.fixed_dictionaries(
    {
        "data": st.lists(
            st.fixed_dictionaries(
                {
                    "paragraphs": st.lists(
                        st.fixed_dictionaries(
                            {
                                "context": words,
                                "key": keys,
                                "intervention": words,
                                "qas": st.lists(yaml_values, max_size=2),
                            }
                        ),
                        max_size=2,
                    )
                }
            ),
            max_size=2,
        )
    }
)


@FUZZ
@given(st.one_of(squad_like.map(lambda v: json.dumps(v).encode()), st.binary(max_size=300)))
def test_lei_split_files(data):
    _outcome(lei.read_split, data)


@pytest.mark.parametrize("data", [b"", b"\x00" * 10, b"{}", b"[]", b"null", b"1e999"])
def test_degenerate_files(data):
    for parse in (
        unqover_predictions.read_predictions,
        lei.read_split,
        cid_audit.load_templates,
        unqover.parse_slots,
        perturbations.load_sentences,
    ):
        _outcome(parse, data)
