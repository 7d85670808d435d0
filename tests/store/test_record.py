"""summary.json through its typed models: a run's summary reads back as a RunSummary whose
estimates are Estimates; the schema in the docs is the one the models generate; a wrong type
is one line naming the field and its kinds; a non-finite number reads as missing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from biaslens.errors import BiaslensError
from biaslens.store import summary as record

DOCS = Path(__file__).resolve().parents[2] / "docs" / "summary.schema.json"


def summary(**changes):
    base = {
        "format_version": 1,
        "method": "sib-toy",
        "settings": {"n": 5},
        "metrics": {"slope": 0.5},
        "model": {"name": "m", "kind": "causal-lm", "num_parameters": 10, "dtype": "float32"},
        "estimates": [
            {"metric": "slope", "labels": {"prompt": "A"}, "value": 0.5, "ci_low": 0.25,
             "ci_high": 0.75, "ci_level": 0.95, "n": 30, "extra_field": "kept"}
        ],
        "notes": ["one"],
    }  # fmt: skip
    return {**base, **changes}


def test_the_documented_schema_is_the_generated_one():
    assert json.loads(DOCS.read_text(encoding="utf-8")) == record.summary_schema(), (
        "regenerate: biaslens schema --json > docs/summary.schema.json"
    )
    fields = record.summary_schema()["$defs"]["Estimate"]["properties"]
    assert all(field.get("description") for field in fields.values())
    assert {"value", "ci_low", "ci_high", "ci_level", "n", "estimand"} <= set(fields)


def test_a_summary_reads_as_typed_models_and_keeps_what_it_does_not_type():
    read = record.read(Path("s.json"), summary())
    assert isinstance(read.estimates[0], record.Estimate)
    assert isinstance(read.model, record.ModelRecord) and read.model.num_parameters == 10
    assert read.estimates[0].ci_high - read.estimates[0].ci_low == pytest.approx(0.5)
    assert read.model.model_extra == {"dtype": "float32"}
    assert record.written(summary()) == summary()  # written as given, nothing added


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"estimates": [{"metric": "m", "value": "0.5"}]},
         "estimates[0].value must be a number or null, got str '0.5'"),
        ({"estimates": [{"metric": "m", "value": True}]},
         "estimates[0].value must be a number or null, got bool True"),
        ({"estimates": [{"metric": "m", "labels": [1]}]},
         r"estimates[0].labels must be an object or null, got list [1]"),
        ({"requests": {"cached": "3"}}, "requests.cached must be a number, got str '3'"),
        ({"model": {"name": 5}}, "model.name must be text, got int 5"),
        ({"metrics": []}, "metrics must be an object, got list []"),
    ],
)  # fmt: skip
def test_a_wrong_type_is_one_line_naming_the_field(changes, message):
    with pytest.raises(BiaslensError) as refused:
        record.read(Path("s.json"), summary(**changes))
    assert str(refused.value) == f"s.json: {message}"


def test_a_non_finite_number_reads_as_missing():
    given = summary()
    given["estimates"][0].update(value=math.nan, ci_low=-math.inf)
    read = record.read(Path("s.json"), given).estimates[0]
    assert read.value is None and read.ci_low is None and read.ci_high == 0.75
