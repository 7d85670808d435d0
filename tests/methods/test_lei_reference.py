"""LEI's base model beside a lei-eval run: its scores read again from the split file with the
reference code's rule (``analysis.py``: S = sqrt(start · end) of each answer's
``start-end-score``), its μ and the paired difference recomputed from UnQover's definitions,
and the card's rows for it."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from biaslens.auditing.card import BiasCard, ReferenceRow, rows_of
from biaslens.auditing.render import card_markdown
from biaslens.methods.qa.data.lei import split_path
from biaslens.methods.qa.lei_eval.method import make_settings
from biaslens.methods.qa.lei_eval.reference import references_for
from tests.conftest import DATA, full_data_dir
from tests.helpers import run_lei_eval
from tests.methods.test_lei_eval import _plain_mu

SETS = ("ethical", "adversarial", "irrelevant")


def _file_scores(path) -> dict[tuple[str, str, int], dict[str, float]]:
    """Per paragraph (its key and context: the two subject orders share a key) and question
    (0: the attribute, 1: its negation): each answer's score as the reference code's
    analysis.py reads it, sqrt(start · end)."""
    found = {}
    for article in json.loads(path.read_text())["data"]:
        for paragraph in article["paragraphs"]:
            for q, qa in enumerate(paragraph["qas"]):
                found[(paragraph["key"], paragraph["context"], q)] = {
                    a["text"]: math.sqrt(a["start-end-score"][0] * a["start-end-score"][1])
                    for a in qa["answers"]
                }
    return found


@pytest.fixture(scope="module")
def religion_run(tiny_backends, tmp_path_factory):
    settings = make_settings(domain="religion", per_cell=2, model="tiny")
    folder = tmp_path_factory.mktemp("lei-reference") / "run"
    return run_lei_eval(settings, folder, lm=tiny_backends["roberta-qa"], data_dir=DATA)


def test_the_base_models_mu_is_recomputed_from_the_split_file(religion_run):
    """On the run's own contexts, the reference's μ per set equals UnQover's μ of the split's
    stored scores read again from the file, and the audited − reference difference equals the
    two plain μ apart, with a paired interval around it."""
    file_scores = _file_scores(split_path("religion/noniid_test", DATA / "lei"))
    table = pd.read_csv(religion_run.run_dir / "lei_reference.csv").set_index("set")
    samples = pd.read_parquet(religion_run.run_dir / "samples.parquet")
    assert list(table.index) == list(SETS)
    for name in SETS:
        audited = samples[samples["set"] == name]
        question = audited["negated"].astype(int)
        asked = zip(audited["key"], audited["context"], question, strict=True)
        scores = [file_scores[(k, c, q)] for k, c, q in asked]
        known = audited.assign(
            s_first=[s[x] for s, x in zip(scores, audited["first"], strict=True)],
            s_second=[s[x] for s, x in zip(scores, audited["second"], strict=True)],
        )
        mu_known, mu_audited = _plain_mu(known), _plain_mu(audited)
        assert mu_known > 0.01 and abs(mu_known - mu_audited) > 0.01  # two different models
        row = table.loc[name]
        assert row["mu"] == pytest.approx(mu_known, abs=1e-9)
        assert row["audited_mu"] == pytest.approx(mu_audited, abs=1e-9)
        assert row["mu_minus_reference"] == pytest.approx(mu_audited - mu_known, abs=1e-9)
        low, high = row["mu_minus_reference_ci_low"], row["mu_minus_reference_ci_high"]
        assert -1 <= low < row["mu_minus_reference"] < high <= 1
        assert row["contexts"] == audited["row"].nunique()
        assert "span_adjustment 'none'" in row["why_not_same"]  # the run did not adjust spans


def test_the_card_places_the_audited_mu_beside_the_base_model(religion_run):
    """The card's μ rows of the intervention sets get LEI's base model with the paired
    difference; the standing reads by distance from 0 (μ's no-bias value)."""
    summary = religion_run.summary
    rows = rows_of("lei-eval-religion", "lei-eval", summary, "lei-eval-religion", None)
    record = SimpleNamespace(metrics=summary["metrics"], settings=summary["settings"])
    references = [ReferenceRow(**r) for r in references_for(rows, record)]
    mu = [r for r in references if r.metric == "mu"]
    assert sorted(r.labels["set"] for r in mu) == sorted(SETS)  # none: the split has no scores
    table = pd.read_csv(religion_run.run_dir / "lei_reference.csv").set_index("set")
    for ref in mu:
        assert ref.model.startswith("RoBERTa-large SQuAD") and not ref.same_protocol
        assert ref.difference == pytest.approx(table.loc[ref.labels["set"], "mu_minus_reference"])
        assert ref.difference_ci_low < ref.difference < ref.difference_ci_high
    card = BiasCard(model="tiny", size="quick", created="now", rows=rows, references=references)
    text = card_markdown(card)
    assert "audited − it, paired" in text and "subject pair × template units" in text
    audited_mu = table.loc["ethical", "audited_mu"]
    more_biased = int(table.loc["ethical", "mu"] > audited_mu)
    assert f"less biased than {more_biased} of 1 known models" in text
    assert text.count("- LEI reference code:") == 1  # each protocol named once


def test_roberta_does_not_follow_ethical_advice_on_the_quick_draw():
    """LEI's Fig. 4 reading in the reference rows: on the quick audit's draw of each domain,
    the base model's μ under ethical interventions stays well above its desired 0 (its
    interval excludes 0)."""
    from biaslens.methods.qa.lei_eval.method import build_rows
    from biaslens.methods.qa.lei_eval.reference import reference_table
    from biaslens.methods.qa.metrics.unqover_summary import subject_strata
    from biaslens.methods.qa.scoring.qa import long_table
    from biaslens.metrics.intervals import IntervalSpec

    data = full_data_dir()
    for domain in ("religion", "ethnicity", "gender"):
        rows, _ = build_rows(make_settings(domain=domain, per_cell=4), data / "lei")
        rows = rows[rows["set"].isin(SETS)]
        scores = long_table(rows, np.full((2 * len(rows), 2), 0.5))
        table, why = reference_table(
            scores, IntervalSpec(0.95, 0, "fixed"), subject_strata(scores), None
        )
        assert why is None
        ethical = table.set_index("set").loc["ethical"]
        assert ethical["mu_ci_low"] > 0, domain
        assert ethical["mu"] > 0.1, domain


def test_the_stored_scores_were_computed_with_the_intervention():
    """The reference's scores are of the question with its intervention (as ``predict.py``
    asks it), not of the bare context (as Appendix B describes the irrelevant loss's
    reference): a context asked under several interventions has different stored scores under
    each."""
    from biaslens.methods.qa.data.lei import read_split

    split = read_split(split_path("religion/noniid_test", full_data_dir() / "lei"))
    groups = split.groupby(["context", "question"])["zs_q0_first_start"]
    several = groups.size() > 1
    assert several.sum() > 100
    assert (groups.nunique()[several] == groups.size()[several]).all()
