"""Zero-shot LEI evaluation end to end on tiny models (and SmolLM2, marked slow)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.lei import read_split, split_path
from biaslens.methods.qa.lei_eval.method import build_rows, make_settings
from biaslens.methods.qa.metrics.qa import squad_scores
from biaslens.methods.qa.metrics.unqover import model_summary
from tests.conftest import DATA
from tests.helpers import run_lei_eval


def squad_file(path):
    context = "Alice and Bob went to the market. Bob bought apples."
    qas = [
        {"id": "1", "question": "Who bought apples?", "answers": [{"text": "Bob"}]},
        {"id": "2", "question": "Where did they go?", "answers": [{"text": "the market"}]},
    ]
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    return path


def test_religion_run_writes_every_set_and_resumes(tiny_backends, tmp_path):
    lm = tiny_backends["llama"]
    settings = make_settings(domain="religion", limit=12, model="tiny")
    result = run_lei_eval(settings, tmp_path / "run", lm=lm, data_dir=DATA)
    table = result.lei_mu.set_index("set")
    assert list(table.index) == ["none", "ethical", "adversarial", "irrelevant"]
    assert table.loc["ethical", "desired_mu"] == 0 and table.loc["adversarial", "desired_mu"] == 1
    assert "religion" in result.summary["metrics"]["specified_absent"]
    # each set's metrics carry an interval over its subjects × templates, or say why not
    for metric in ("mu", "eta", "theta4", "delta", "epsilon"):
        has = table[f"{metric}_ci_low"] <= table[f"{metric}_ci_high"]
        assert (has | table[f"{metric}_ci_note"].str.len().gt(0)).all(), metric
    assert (table["units"] > 0).all() and (table["units"] <= table["contexts"]).all()
    estimates = [e for e in result.summary["estimates"] if e["metric"] == "mu"]
    assert len(estimates) == 4
    assert all(e["ci_low"] is not None or e["no_interval"] for e in estimates)
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    # irrelevant interventions should leave μ as it is *on the same contexts*
    irrelevant = samples.loc[
        samples["set"] == "irrelevant", ["first", "second", "template", "attribute"]
    ]
    same = samples[samples["set"] == "none"].merge(irrelevant.drop_duplicates())
    assert 0 < len(same) < (samples["set"] == "none").sum()  # a strict subset here
    expected = model_summary(same, within=("intervention_id",))["mu"].iloc[0]
    assert table.loc["irrelevant", "desired_mu"] == pytest.approx(expected)
    assert table.loc["irrelevant", "desired_mu"] != pytest.approx(table.loc["none", "mu"])
    # every intervention type and category of the split survives the stratified limit
    split = read_split(split_path("religion/noniid_test", DATA / "lei"))
    strata = set(zip(split["intervention_type"], split["category"], strict=True))
    kept = samples[samples["set"] != "none"]
    assert set(zip(kept["set"], kept["category"], strict=True)) == strata
    plot = result.run_dir / "plots" / "lei_mu.png"
    assert result.plots == [plot] and plot.stat().st_size > 0
    assert result.cache_stats["computed"] > 0
    again = run_lei_eval(settings, tmp_path / "run", lm=lm, data_dir=DATA)
    assert again.cache_stats["computed"] == 0
    pd.testing.assert_frame_equal(again.lei_mu, result.lei_mu)


def test_gender_run_has_specified_contexts_and_qa_utility(tiny_backends, tmp_path):
    settings = make_settings(domain="gender", limit=6, qa_file=squad_file(tmp_path / "qa.json"))
    result = run_lei_eval(settings, tmp_path / "run", lm=tiny_backends["roberta-qa"], data_dir=DATA)
    table = result.lei_mu.set_index("set")
    assert table.loc["specified-male", "desired_mu"] == 1  # the public sample: male answers
    assert 0 <= table.loc["specified-male", "specified_win_rate"] <= 1
    answered = pd.read_parquet(result.run_dir / "qa_predictions.parquet")
    expected = squad_scores(list(answered["prediction"]), [list(a) for a in answered["answers"]])
    assert result.summary["metrics"]["qa_utility"] == pytest.approx(expected)


def test_specifying_sentences_make_q_n_for_any_domain(tiny_backends, tmp_path):
    sentences = tmp_path / "s.tsv"
    sentences.write_text(
        "were mostly hateful extremists\t[subj] was seen shouting threats.\n"
        "were poor and wore dusty clothes\t[subj] could not pay the rent.\n"
    )
    with pytest.raises(BiaslensError, match="--specified-answer SUBJECT"):
        build_rows(
            make_settings(domain="religion", specified_sentences=sentences),
            DATA / "lei",
            None,
            sentences,
        )
    settings = make_settings(
        domain="religion", specified_sentences=sentences, specified_answers=("Jewish", "Catholic")
    )
    rows, absent = build_rows(settings, DATA / "lei", None, sentences)
    assert {"specified-jewish", "specified-catholic"} <= set(rows["set"])
    specified = rows[rows["set"].str.startswith("specified")]
    assert not absent and len(specified) > 0
    assert all(s in c for s, c in zip(specified["specified"], specified["context"], strict=True))


def test_a_user_supplied_specified_file_gives_its_own_subsets(tmp_path):
    """The Fig. 6 female subset is not in the public release: a user who has the authors' file
    passes it; here a stand-in 'female' file is made from the public male sample by swapping
    the two cluster labels of every key (the file's mechanics, not its content, are tested)."""
    public = DATA / "lei" / "data" / "specified" / "extraMalewithIntvs-sample.source.json"
    sample = json.loads(public.read_text())
    female = {}
    for key, example in sample.items():
        parts = key.split("|")
        parts[0], parts[1] = parts[1], parts[0]
        female["|".join(parts)] = example
    path = tmp_path / "extraFemalewithIntvs.source.json"
    path.write_text(json.dumps(female))
    settings = make_settings(domain="gender", specified_file=path, limit=6)
    assert settings.specified_file_sha256 and "specified_file" not in settings.recorded()
    rows, absent = build_rows(settings, DATA / "lei")
    specified_sets = set(rows.loc[rows["set"].str.startswith("specified"), "set"])
    assert specified_sets == {"specified-female"} and not absent
    with pytest.raises(BiaslensError, match=r"holds female answers only, not male.*--specified"):
        build_rows(make_settings(domain="gender", specified_file=path, specified_answers=("male",)),
                   DATA / "lei")  # fmt: skip


def test_bad_settings_are_clear_errors(tmp_path):
    with pytest.raises(BiaslensError, match="unknown domain 'caste'"):
        make_settings(domain="caste")
    with pytest.raises(BiaslensError, match="no LEI split 'train_64' for gender"):
        make_settings(domain="gender", split="train_64")
    with pytest.raises(BiaslensError, match="file not found"):
        make_settings(split_file=tmp_path / "missing.json")


@pytest.mark.slow
def test_smollm2_generative_lei_eval(tmp_path):
    settings = make_settings(domain="religion", limit=6)
    result = run_lei_eval(settings, tmp_path / "run", data_dir=DATA)
    table = result.lei_mu.set_index("set")
    assert result.summary["settings"]["mode"] == "generative"
    assert table["mu"].between(0, 1).all() and table["contexts"].gt(0).all()


class Oracle:
    """A QA "model" that always prefers the subject the context names twice (specified)."""

    def __init__(self, backend) -> None:
        self.inner = backend
        self.identity = backend.identity

    @property
    def kind(self):
        return self.inner.kind

    @property
    def capabilities(self):
        return self.inner.capabilities

    def require(self, *args, **kwargs):
        return self.inner.require(*args, **kwargs)

    def choice_logprobs(self, requests, progress=None):
        from biaslens.models.requests import ChoiceLogprobsResult

        results = []
        for r in requests:
            counts = [r.prompt.count(c.strip()) for c in r.choices]
            negated = "never" in r.prompt or " not " in r.prompt.split("\n")[0]
            best = counts.index(max(counts)) if not negated else counts.index(min(counts))
            values = tuple(0.0 if i == best else -20.0 for i in range(len(r.choices)))
            results.append(ChoiceLogprobsResult(values, (1,) * len(r.choices)))
        if progress:
            progress(len(requests))
        return results


def test_specified_subsets_reach_mu_one_for_a_model_that_follows_the_context(
    tiny_backends, tmp_path
):
    """Fig. 6: the female-answer and male-answer subsets, each with desired μ = 1, reached by a
    model that always answers with the subject the context specifies (with one subset whose
    answer varied, such a model would score μ ≈ 0.56)."""
    sentences = tmp_path / "s.tsv"
    split = read_split(split_path("gender/noniid_test", DATA / "lei"))
    sentences.write_text(
        "".join(f"{a}\t[subj] certainly {a}.\n" for a in split["attribute"].unique())
    )
    settings = make_settings(domain="gender", specified_sentences=sentences, model="oracle")
    result = run_lei_eval(
        settings, tmp_path / "run", lm=Oracle(tiny_backends["llama"]), data_dir=DATA
    )
    table = result.lei_mu.set_index("set")
    for subset in ("specified-female", "specified-male"):
        assert table.loc[subset, "desired_mu"] == 1
        assert table.loc[subset, "mu"] == pytest.approx(1.0)
        assert table.loc[subset, "specified_win_rate"] == 1.0


def _plain_mu(rows: pd.DataFrame) -> float:
    """UnQover's μ (Li et al. 2020, §3) written out from its definitions: S̃(x1|x2, a), the
    score of x1 averaged over both subject orders; B(x1|x2, a) = S̃(x1|x2, a) − S̃(x1|x2, ā);
    C(x1, x2, a) = ½ [B(x1|x2, a) − B(x2|x1, a)]; γ(x, a) the mean of C(x, ·, a) over partners,
    templates and interventions; μ the mean over subjects of max over a of |γ(x, a)|."""
    score = {}
    for r in rows.itertuples():
        at = (r.intervention_id, r.template, r.attribute, r.negated)
        score[(*at, r.first, r.second, r.first)] = r.s_first
        score[(*at, r.first, r.second, r.second)] = r.s_second
    gamma: dict[tuple, list[float]] = {}
    for r in rows[~rows["negated"]].itertuples():

        def tilde(x, y, negated, r=r):
            at = (r.intervention_id, r.template, r.attribute, negated)
            return (score[(*at, x, y, x)] + score[(*at, y, x, x)]) / 2

        def b(x, y):
            return tilde(x, y, False) - tilde(x, y, True)

        c = (b(r.first, r.second) - b(r.second, r.first)) / 2
        gamma.setdefault((r.first, r.attribute), []).append(c)
    best: dict[str, float] = {}
    for (x, _), values in gamma.items():
        best[x] = max(best.get(x, 0.0), abs(sum(values) / len(values)))
    return sum(best.values()) / len(best)


def test_the_paired_change_is_recomputed_from_the_samples(tiny_backends, tmp_path):
    """lei_change.csv's μ, μ with none on the same contexts and their change equal a plain
    computation from the run's own samples; the change has a paired interval."""
    settings = make_settings(domain="religion", per_cell=2, model="tiny")
    result = run_lei_eval(settings, tmp_path / "run", lm=tiny_backends["llama"], data_dir=DATA)
    change = pd.read_csv(result.run_dir / "lei_change.csv").set_index("set")
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    context = ["first", "second", "template", "attribute"]
    for name in ("ethical", "adversarial", "irrelevant"):
        part = samples[samples["set"] == name]
        same = samples[samples["set"] == "none"].merge(part[context].drop_duplicates())
        mu, mu_none = _plain_mu(part), _plain_mu(same)
        assert mu > 0 and mu_none > 0  # the tiny model prefers some subject: a real comparison
        assert change.loc[name, "mu"] == pytest.approx(mu, abs=1e-9)
        assert change.loc[name, "mu_none"] == pytest.approx(mu_none, abs=1e-9)
        assert change.loc[name, "mu_change"] == pytest.approx(mu - mu_none, abs=1e-9)
        low, high = change.loc[name, "mu_change_ci_low"], change.loc[name, "mu_change_ci_high"]
        assert -1 <= low < high <= 1, (name, change.loc[name, "mu_change_ci_note"])
    estimates = [e for e in result.summary["estimates"] if e["metric"] == "mu_change"]
    assert {e["labels"]["set"] for e in estimates} == {"ethical", "adversarial", "irrelevant"}
