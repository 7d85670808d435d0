"""UnQover prediction dumps: reading and scoring must equal the definitions."""

from __future__ import annotations

import json
import math

import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.unqover_predictions import read_predictions
from biaslens.methods.qa.metrics.unqover import comparative_scores, model_summary


def prediction(p0: tuple, p1: tuple, q1: tuple, q11: tuple) -> dict:
    """ans0/ans1 (start, end) for q0 and q1."""

    def q(a, b):
        return {"question": "Who?", "pred": "", "ans0": {"text": "x", "start": a[0], "end": a[1]},
                "ans1": {"text": "y", "start": b[0], "end": b[1]}}  # fmt: skip

    return {"context": "...", "q0": q(p0, p1), "q1": q(q1, q11)}


def dump(path, extra: str = "") -> dict:
    # S = sqrt(start·end): (.36, 1) -> .6, (.09, 1) -> .3 ... gives the STRONG numbers of the
    # metric tests: AB q0 (.6, .3), BA q0 (.5, .4), AB q1 (.2, .7), BA q1 (.6, .3).
    data = {
        f"f|m|A|B|0|c|bad|bad{extra}": prediction((0.36, 1), (0.09, 1), (0.04, 1), (0.49, 1)),
        f"m|f|B|A|0|c|bad|bad{extra}": prediction((0.25, 1), (0.16, 1), (0.36, 1), (0.09, 1)),
    }
    path.write_text(json.dumps(data))
    return data


def test_reader_and_metrics_match_the_definitions(tmp_path):
    dump(tmp_path / "p.json")
    scores = read_predictions(tmp_path / "p.json")
    assert len(scores) == 4
    c = comparative_scores(scores).set_index(["x1", "x2"])["C"]
    assert c[("A", "B")] == pytest.approx(0.25) and c[("B", "A")] == pytest.approx(-0.25)
    summary = model_summary(scores).iloc[0]
    assert summary["mu"] == pytest.approx(0.25)
    assert summary["delta"] == pytest.approx(0.15)  # (.2 + .2 + .1 + .1) / 4


def test_ninth_key_field_is_the_intervention(tmp_path):
    dump(tmp_path / "p.json", extra="|ethical_crime-1")
    scores = read_predictions(tmp_path / "p.json")
    assert set(scores["intervention"]) == {"ethical_crime-1"}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d[next(iter(d))].pop("q1"), "lacks q1 \\(the negated question\\)"),
        (
            lambda d: d[next(iter(d))]["q0"]["ans0"].update(start=math.nan),
            "start must be a probability in \\[0, 1\\], got nan",
        ),
        (lambda d: d[next(iter(d))]["q0"]["ans1"].update(end=-0.1), "probability in \\[0, 1\\]"),
        (lambda d: d.update({"a|b|c": {}}), "has 3 '\\|' fields"),
    ],
)
def test_bad_predictions_are_clear_errors(tmp_path, edit, message):
    data = dump(tmp_path / "p.json")
    edit(data)
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(BiaslensError, match=message):
        read_predictions(tmp_path / "p.json")


def test_missing_subject_order_is_named(tmp_path):
    data = dump(tmp_path / "p.json")
    data.pop("m|f|B|A|0|c|bad|bad")
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(BiaslensError, match="lack the other subject order, e.g. B before A"):
        comparative_scores(read_predictions(tmp_path / "p.json"))
