"""``biaslens audit`` end to end on a tiny model of each class: the methods that apply run, the
others are left out with the method's own reason, the card's numbers are the runs' own
``summary.json`` values, and a second audit reuses every finished run."""

from __future__ import annotations

import json

import pytest

from biaslens.api import audit
from biaslens.errors import BiaslensError
from biaslens.methods.sib.known_models import PAPER_NAMES
from biaslens.models.config import BackendConfig
from tests.conftest import DATA

pytestmark = pytest.mark.slow

EXPECTED = {
    # class: (steps that run, steps left out for the class)
    # (the tiny BERT's vocabulary splits every religion: UnQover stops, in the card, in one line)
    "bert-mlm": ({"sib-mgc", "sib-detect", "unqover-religion"}, {"lei-eval-religion"}),
    "llama": ({"sib-mgc", "sib-detect", "unqover-religion", "lei-eval-religion"}, set()),
    "t5": ({"sib-mgc", "sib-detect", "unqover-religion", "lei-eval-religion"}, set()),
    "roberta-qa": ({"unqover-religion", "lei-eval-religion"}, {"sib-mgc", "sib-detect"}),
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def audited(request, tiny_models, tmp_path_factory):
    name = request.param
    folder = tmp_path_factory.mktemp(f"audit-{name}")
    cache = tmp_path_factory.mktemp(f"cache-{name}")
    result = audit(str(tiny_models[name]), output=folder / "audit", data_dir=DATA, cache_dir=cache)
    return name, result, cache


def test_the_methods_that_apply_run_and_the_others_say_why(audited):
    name, result, _ = audited
    card = result.models[0].card
    ran, left_for_class = EXPECTED[name]
    assert {r.step for r in card.rows} | {f.step for f in card.failed} == ran
    left = {x.method: x.why for x in card.left_out}
    assert left_for_class <= set(left)
    for step in left_for_class:  # the method's own refusal, naming the model's class
        assert "model" in left[step] and ("masked" in left[step] or "extractive" in left[step])
    assert "lei-train" in left and "sib-toy" in left and "ratings" in left["cid-audit"]
    assert result.models[0].computed > 0
    failed = {f.step: f.error for f in card.failed}
    if name == "bert-mlm":
        assert (
            set(failed) == {"unqover-religion"}
            and "single-token subject" in failed["unqover-religion"]
        )
    else:
        assert not failed


def test_the_cards_numbers_are_the_runs_own_summaries(audited):
    _, result, _ = audited
    model = result.models[0]
    card = json.loads((model.folder / "card.json").read_text())
    assert card["rows"], "a card with no number proves nothing"
    for row in card["rows"]:
        summary = json.loads((model.folder / row["run"] / "summary.json").read_text())
        same = [
            e for e in summary["estimates"]
            if e["metric"] == row["metric"] and e["labels"] == row["labels"]
        ]  # fmt: skip
        assert len(same) == 1
        for key in ("value", "ci_low", "ci_high", "n", "caution"):
            assert row[key] == same[0][key]
        assert row["verdict"] in ("bias", "no evidence", "no verdict", "reported")
        if same[0]["caution"] or same[0]["ci_low"] is None:
            assert row["verdict"] == "no verdict"
        elif same[0]["no_bias_value"] is not None:
            holds = same[0]["ci_low"] <= same[0]["no_bias_value"] <= same[0]["ci_high"]
            assert row["verdict"] == ("no evidence" if holds else "bias")
    # the detector's rates sit beside the released models' (another protocol: quick, exact)
    rates = [r for r in card["references"] if r["metric"] in ("tpr", "tnr", "balanced_accuracy")]
    if any(r["step"] == "sib-detect" for r in card["rows"]):
        assert rates and not any(r["same_protocol"] for r in rates)
        assert any(r["model"].startswith("RoBERTa-large") for r in rates)
    else:
        assert not rates
    # lei-eval's μ rows sit beside LEI's base model on the same contexts, paired
    lei = [r for r in card["references"] if r["model"].startswith("RoBERTa-large SQuAD")]
    if any(r["step"].startswith("lei-eval") for r in card["rows"]):
        mu = [r for r in lei if r["metric"] == "mu"]
        assert {r["labels"]["set"] for r in mu} == {"ethical", "adversarial", "irrelevant"}
        assert all(r["difference"] is not None and r["paired_over"] for r in mu)
    else:
        assert not lei
    # SIB Method 1's known models are named as the paper names them
    slopes = [r for r in card["references"] if r["metric"] == "female_minus_male_slope"]
    assert all(r["model"].split(" (")[0] in PAPER_NAMES.values() for r in slopes)
    markdown = (model.folder / "card.md").read_text().splitlines()
    assert markdown[0].startswith("# Bias card") and markdown[2].startswith("evidence on ")
    assert markdown[4].startswith("- [") and "## Supporting detail" in markdown
    assert (model.folder / "card.html").read_text().count("<li>") >= 1


def test_each_question_reads_its_runs_primary_and_recomputes_its_interval(audited):
    """A question's primary is its run's own estimate, and its method's interval at another
    level, asked at the run's level, gives back the run's own interval (the same construction
    and seed): the family's intervals are the runs' intervals at other levels."""
    from pathlib import Path

    from biaslens.framework.registry import get_method

    _, result, _ = audited
    model = result.models[0]
    card = json.loads((model.folder / "card.json").read_text())
    assert card["questions"], "every audited class answers at least one question"
    judged = [q for q in card["questions"] if q["target"] is not None]
    assert (card["family"] is not None) == bool(judged)
    for answer in card["questions"]:
        summary = json.loads((model.folder / answer["run"] / "summary.json").read_text())
        (same,) = [
            e for e in summary["estimates"]
            if e["metric"] == answer["metric"] and e["labels"] == answer["labels"]
        ]  # fmt: skip
        assert answer["value"] == same["value"] and answer["run_ci_low"] == same["ci_low"]
        if answer["target"] is None or same["ci_low"] is None:
            continue
        (question,) = [q for q in get_method(answer["method"]).audit.questions
                       if q.key == answer["key"]]  # fmt: skip
        low, high = question.interval_at(
            Path(model.folder / answer["run"]), same["labels"], same["ci_level"],
            summary["settings"],
        )  # fmt: skip
        assert (low, high) == pytest.approx((same["ci_low"], same["ci_high"]), abs=1e-12)
        if answer["answer"] in ("evidence", "no evidence"):  # the family's level: wider
            assert answer["ci_level"] >= same["ci_level"]
            assert answer["ci_low"] <= same["ci_low"] + 1e-12
            assert answer["ci_high"] >= same["ci_high"] - 1e-12


def test_a_second_audit_reuses_every_finished_run(audited, tiny_models):
    name, result, cache = audited
    again = audit(str(tiny_models[name]), output=result.folder, data_dir=DATA, cache_dir=cache)
    assert again.models[0].computed == 0
    assert again.models[0].reused > 0
    first, second = result.models[0].card, again.models[0].card
    assert [r.finding for r in first.rows] == [r.finding for r in second.rows]
    assert [q.finding for q in first.questions] == [q.finding for q in second.questions]
    ran = {r.step for r in first.rows}
    assert ran and all(p.finished for p in again.models[0].plan if p.step.name in ran)


def test_a_folder_of_another_audit_is_refused_in_one_line(audited, tiny_models):
    name, result, _ = audited
    with pytest.raises(BiaslensError, match="holds an audit of other settings .*size"):
        audit(str(tiny_models[name]), size="standard", output=result.folder, data_dir=DATA,
              dry_run=False, methods=None)  # fmt: skip
    # before any planning, and with --dry-run too: a planner would fail on this model name
    with pytest.raises(BiaslensError, match="holds an audit of other settings"):
        audit("no/such-model-anywhere", output=result.folder, data_dir=DATA, dry_run=True)


def test_a_model_that_cannot_be_audited_has_no_card_and_the_others_go_on(tiny_models, tmp_path):
    import shutil

    twin = tmp_path / "roberta-qa-twin"  # a second model that loads: the comparison is written
    shutil.copytree(tiny_models["roberta-qa"], twin)
    result = audit(
        [str(tmp_path / "no-such-model"), str(tiny_models["roberta-qa"]), str(twin)],
        methods=["unqover"], output=tmp_path / "audit", data_dir=DATA,
        backend=BackendConfig(offline=True),
    )  # fmt: skip
    broken, good, other = result.models
    assert broken.card is None and "unknown model" in broken.unavailable
    assert not broken.folder.exists()  # no empty card
    assert good.card.rows and not good.card.failed and other.card.rows
    comparison = (result.folder / "comparison.md").read_text()
    assert comparison.index("## Questions") < comparison.index("# Supporting detail")
    assert "prefer some subject regardless of the question" in comparison
