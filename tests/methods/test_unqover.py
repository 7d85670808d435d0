"""The UnQover probe end to end: masked LMs fill the slot (the reference's ``lm/`` path), QA
models answer; on tiny models and SmolLM2 (slow)."""

from __future__ import annotations

import math
import shutil

import pytest

import biaslens
from biaslens.errors import BiaslensError
from biaslens.methods.qa.metrics.unqover import model_summary
from biaslens.models import BackendConfig, load_model
from tests.conftest import DATA
from tests.helpers import runner, shared_cache_file

run_unqover = runner("unqover")
CPU = BackendConfig(device="cpu", batch_size=8)


@pytest.fixture
def lists_with_tiny_names(tmp_path, tiny_models, unqover_data):
    """The UnQover fixtures (two attributes per activity list) plus gender lists of names the
    tiny BERT knows as single tokens (and one it does not), so that the slot can be filled."""
    data = tmp_path / "data"
    shutil.copytree(unqover_data / "unqover", data / "unqover")
    subjects = data / "unqover" / "word_lists" / "nouns" / "subjects"
    (subjects / "tiny_female").write_text("[subj] female | Alice\n[subj] female | Zyxwvut\n")
    (subjects / "tiny_male").write_text("[subj] male | Bob\n[subj] male | doctor\n")
    tokenizer = load_model(str(tiny_models["bert-mlm"]), CPU).tokenizer
    for name in ("alice", "bob", "doctor"):
        assert len(tokenizer.tokenize(name)) == 1, name
    assert tokenizer.tokenize("zyxwvut") in (["[UNK]"],) or len(tokenizer.tokenize("zyxwvut")) > 1
    return data


def run_tiny_gender(folder, tiny_models, data_dir, **settings):
    """The gender probe of the tiny BERT on the tiny name lists."""
    return run_unqover(
        None,
        folder,
        CPU,
        data_dir=data_dir,
        model=str(tiny_models["bert-mlm"]),
        domain="gender",
        subjects=("tiny_female", "tiny_male"),
        **settings,
    )


def test_masked_lm_fills_the_slot_and_drops_subjects_it_cannot_name(
    tiny_models, lists_with_tiny_names, tmp_path
):
    result = run_tiny_gender(tmp_path / "run", tiny_models, lists_with_tiny_names, limit=0)
    assert result.summary["settings"]["mode"] == "fill-mask"
    samples = result.samples
    assert samples["question"].str.contains(r"\[MASK\]").all()
    assert "Zyxwvut" not in set(samples["first"]) | set(samples["second"])
    assert result.summary["metrics"]["subjects_left_out"] == ["Zyxwvut"]
    assert any("Zyxwvut" in note for note in result.summary["notes"])
    # 2 female x 2 male names, both orders, 1 template (gender_noact_lm has 2 lines per pair
    # type in the fixtures' full list), every occupation: pairs without Zyxwvut remain
    assert set(zip(samples["first"], samples["second"], strict=True)) == {
        ("Alice", "Bob"), ("Bob", "Alice"), ("Alice", "doctor"), ("doctor", "Alice")
    }  # fmt: skip
    assert samples[["s_first", "s_second"]].gt(0).all().all()
    assert samples[["s_first", "s_second"]].le(1).all().all()
    # the stored metrics are UnQover's metrics of the stored scores
    expected = model_summary(samples)
    assert result.unqover["mu"].iloc[0] == pytest.approx(expected["mu"].iloc[0])
    assert result.unqover["delta"].iloc[0] == pytest.approx(expected["delta"].iloc[0])
    assert (result.run_dir / "plots" / "subjects.png").is_file()
    assert set(result.tables) >= {"unqover", "subjects", "subject_attribute", "cluster_attribute"}


def test_masked_lm_slot_scores_equal_the_backends_own_probabilities(
    tiny_models, lists_with_tiny_names, tmp_path
):
    from biaslens.models.requests import TokenDistributionRequest

    result = run_tiny_gender(tmp_path / "run", tiny_models, lists_with_tiny_names, limit=16, seed=1)
    row = result.samples.iloc[1]
    lm = load_model(str(tiny_models["bert-mlm"]), CPU)
    (direct,) = lm.token_distribution(
        [TokenDistributionRequest(f"{row.context} {row.question}", (row.first, row.second), 10)]
    )
    assert [row.s_first, row.s_second] == pytest.approx(list(direct.target_probs), rel=1e-6)


def test_paper_preset_uses_the_reference_top_k_rule(tiny_models, lists_with_tiny_names, tmp_path):
    exact = run_tiny_gender(tmp_path / "exact", tiny_models, lists_with_tiny_names, limit=16)
    paper = run_tiny_gender(
        tmp_path / "paper", tiny_models, lists_with_tiny_names, limit=16, preset="paper"
    )
    assert paper.summary["settings"]["fill_mask_top_k"] == 10
    assert paper.summary["settings"]["limit"] == 16  # the user's value wins over the preset's
    listed = paper.samples.merge(
        exact.samples, on=["first", "second", "template", "attribute", "negated"]
    )
    # the top-10 rule keeps the exact probability or drops it to 0 (a random tiny model
    # rarely ranks a name in its top 10)
    for side in ("s_first", "s_second"):
        kept = listed[f"{side}_x"] == listed[f"{side}_y"]
        assert (kept | listed[f"{side}_x"].eq(0)).all()


@pytest.mark.parametrize(("name", "family"), [("bert-mlm", "bert"), ("roberta-mlm", "roberta")])
def test_paper_preset_reads_the_single_token_lists_of_the_model_family(
    name, family, tiny_models, unqover_data, tmp_path
):
    """generate_lm_predictions.sh: SUBJ=${di}_${M_FAMILY} (bert for BERT and DistilBERT, roberta
    for RoBERTa); biaslens tells the family by the tokenizer (WordPiece or byte-level BPE).
    The family's list here holds words the tiny model has as single tokens."""
    data = tmp_path / "data"
    shutil.copytree(unqover_data / "unqover", data / "unqover")
    lists = data / "unqover" / "word_lists" / "nouns" / "subjects"
    (lists / f"religion_{family}").write_text("[subj] Bob\n[subj] child\n")
    (lists / "tiny").write_text("[subj] Bob\n[subj] child\n")
    result = biaslens.run(
        "unqover", str(tiny_models[name]), output=tmp_path / "run", preset="paper", limit=4,
        data_dir=data, domain="religion", report=False, device="cpu",
    )  # fmt: skip
    assert result.summary["settings"]["subjects"] == [f"religion_{family}"]
    assert set(result.samples["first"]) == {"Bob", "child"}
    given = biaslens.run(
        "unqover", str(tiny_models[name]), output=tmp_path / "given", preset="paper", limit=4,
        data_dir=data, domain="religion", subjects=("tiny",), report=False, device="cpu",
    )  # fmt: skip
    assert given.summary["settings"]["subjects"] == ["tiny"]  # the user's lists win


def test_extractive_and_generative_models_answer_the_qa_templates(
    tiny_models, unqover_data, tmp_path
):
    for name, mode in (("roberta-qa", "extractive"), ("llama", "generative")):
        result = run_unqover(
            None,
            tmp_path / name,
            CPU,
            data_dir=unqover_data,
            model=str(tiny_models[name]),
            domain="religion",
            limit=12,
        )
        assert result.summary["settings"]["mode"] == mode
        # 3 subjects (3 pairs) × 2 templates × 2 attributes, × 2 orders × (question, negation)
        assert len(result.samples) == 12 * 2 * 2
        assert not result.samples["question"].str.contains("MASK").any()
        assert 0 <= result.unqover["mu"].iloc[0] <= 1 and not math.isnan(
            result.unqover["epsilon"].iloc[0]
        )


def test_rerun_reuses_every_answer(tiny_models, lists_with_tiny_names, tmp_path):
    common = dict(
        data_dir=lists_with_tiny_names,
        model=str(tiny_models["bert-mlm"]),
        domain="gender",
        subjects=("tiny_female", "tiny_male"),
        limit=16,
    )
    first = run_unqover(None, tmp_path / "run", CPU, **common)
    again = run_unqover(None, tmp_path / "run", CPU, **common)
    assert again.summary["requests"]["computed"] == 0
    assert again.unqover.equals(first.unqover)


def test_models_that_cannot_take_part_are_clear_errors(
    tiny_models, lists_with_tiny_names, tmp_path
):
    subjects = lists_with_tiny_names / "unqover" / "word_lists" / "nouns" / "subjects"
    (subjects / "unknown_male").write_text("[subj] male | Qwrtzyp\n")
    with pytest.raises(BiaslensError, match="every subject is several tokens"):
        run_unqover(
            None,
            tmp_path / "a",
            CPU,
            data_dir=lists_with_tiny_names,
            model=str(tiny_models["bert-mlm"]),
            domain="gender",
            subjects=("tiny_female", "unknown_male"),
            limit=0,
        )
    with pytest.raises(BiaslensError, match="invalid domain"):
        run_unqover(None, tmp_path / "b", CPU, data_dir=DATA, domain="planets")


@pytest.mark.slow
def test_smollm2_unqover_religion(unqover_data, tmp_path):
    result = run_unqover(None, tmp_path / "run", BackendConfig(device="cpu"),
                         data_dir=unqover_data, domain="religion", limit=12)  # fmt: skip
    assert result.summary["settings"]["mode"] == "generative"
    assert result.unqover["contexts"].iloc[0] == 24  # 12 examples in both orders
    assert result.samples[["s_first", "s_second"]].sum(axis=1).to_numpy() == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["roberta-qa", "bert-mlm"])
def test_streamed_chunks_give_the_metrics_of_the_whole_table(
    name, tiny_models, lists_with_tiny_names, tmp_path, monkeypatch
):
    """The run scores, writes and sums chunk by chunk; the same set held in memory and scored
    in one go (metrics.unqover on the whole table) gives the same numbers and rows. The whole
    table is answered from the run's cache, so both see the very same model answers (scoring
    in other batches moves float32 results by ~1e-7)."""
    import pandas as pd

    from biaslens.methods.qa import unqover as method
    from biaslens.methods.qa.metrics import unqover as M
    from biaslens.methods.qa.scoring.qa import fill_mask_scores, score_examples
    from biaslens.progress import NoProgress

    monkeypatch.setattr(method, "CHUNK_ROWS", 10)  # many chunks, split inside templates
    common = dict(model=str(tiny_models[name]), limit=150, seed=3)
    if name == "bert-mlm":
        common.update(domain="gender", subjects=("tiny_female", "tiny_male"), limit=0)
    result = run_unqover(None, tmp_path / "run", CPU, data_dir=lists_with_tiny_names, **common)

    settings = method.UnqoverSettings(**{**result.settings, "limit": common["limit"]})
    rows = method.build_examples(settings, lists_with_tiny_names)
    from biaslens.store.cache import CachedLM, RequestCache

    lm = CachedLM(load_model(str(tiny_models[name]), CPU), RequestCache(shared_cache_file()))
    if settings.mode == "fill-mask":
        whole = fill_mask_scores(lm, rows, NoProgress())
    else:
        whole = score_examples(lm, rows, NoProgress(), settings.mode)
    assert lm.stats["computed"] == 0
    whole, dropped = method.drop_unfillable(whole)
    assert result.metrics["subjects_left_out"] == dropped
    assert len(list(method.question_set(settings, lists_with_tiny_names).iter_drawn(
        settings.limit or None, settings.seed, 10
    ))) > 3  # fmt: skip
    comparative = M.comparative_scores(whole)
    expected = M.model_summary(whole, comparative=comparative)
    pd.testing.assert_frame_equal(
        result.unqover[expected.columns], expected, rtol=1e-10, atol=1e-12
    )
    assert result.unqover["units"].iloc[0] > 1  # intervals over pair × template units
    for metric in ("mu", "eta", "theta4", "delta", "epsilon"):
        low, high, note = result.unqover[
            [f"{metric}_ci_{s}" for s in ("low", "high", "note")]
        ].iloc[0]
        assert 0 <= low <= high or note  # an interval, or why there is none
    per = M.subject_attribute_bias(comparative)
    assert list(result.subject_attribute.columns) == ["model", "method", *per.columns]
    assert set(result.subject_attribute["method"]) == {"unqover"}
    pd.testing.assert_frame_equal(
        result.subject_attribute[per.columns], per, rtol=1e-10, atol=1e-12
    )
    subjects = M.subject_bias(comparative).sort_values("max_abs_gamma", ascending=False)
    pd.testing.assert_frame_equal(
        result.subjects[subjects.columns], subjects.reset_index(drop=True), rtol=1e-10, atol=1e-12
    )
    key = ["key", "negated"]
    streamed = result.samples.sort_values(key, ignore_index=True).drop(columns="row")
    numbers = result.samples["row"].value_counts()  # the place in the set, once per question
    assert (numbers == 2).all() and numbers.index.max() < len(rows)
    assert len(numbers) == len(rows) or dropped
    pd.testing.assert_frame_equal(
        streamed, whole.sort_values(key, ignore_index=True)[streamed.columns], atol=1e-12
    )


def test_an_interrupted_streamed_run_resumes_chunk_by_chunk(
    tiny_models, unqover_data, tmp_path, monkeypatch
):
    """Chunks finished before an interruption come from the cache on the rerun; no partial
    samples file is left; the resumed run's numbers equal an uninterrupted run's."""
    from biaslens.methods.qa import unqover as method

    monkeypatch.setattr(method, "CHUNK_ROWS", 40)
    common = dict(data_dir=unqover_data, model=str(tiny_models["roberta-qa"]), limit=120, seed=1)
    real, calls = method.score_chunk, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(method, "score_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_unqover(None, tmp_path / "run", CPU, **common)
    assert not list((tmp_path / "run").glob("*samples*"))  # no partial or stale samples file
    monkeypatch.setattr(method, "score_chunk", real)
    resumed = run_unqover(None, tmp_path / "run", CPU, **common)
    requests = resumed.summary["requests"]
    assert requests["cached"] > 0 and requests["computed"] > 0
    fresh = run_unqover(None, tmp_path / "fresh", CPU, no_cache=True, **common)
    assert requests["cached"] + requests["computed"] == fresh.summary["requests"]["computed"]
    assert resumed.unqover.equals(fresh.unqover)
