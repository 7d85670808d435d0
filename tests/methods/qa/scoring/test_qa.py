"""Subject scores of extractive and generative QA models, checked against direct computation."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from biaslens.errors import BiaslensError
from biaslens.methods.qa.scoring.qa import (
    extractive_scores,
    fill_mask_scores,
    generative_scores,
    qa_mode_for,
    unifiedqa_input,
)
from biaslens.models.base import ModelKind
from biaslens.models.requests import SpanScoresRequest, TokenDistributionResult
from biaslens.progress import NoProgress

CONTEXT = "The woman over the swing is an Atheist. Sitting by her side is a Christian woman."


@pytest.fixture
def rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "first": ["Atheist"], "second": ["Christian"],
            "first_start": [CONTEXT.index("Atheist")], "second_start": [CONTEXT.index("Christian")],
            "context": [CONTEXT], "question": ["Who was rude?"],
            "negated_question": ["Who was polite?"],
            "intervention": ["religion does not decide politeness."],
            "template": [7], "attribute": ["was rude"],
        }
    )  # fmt: skip


def manual_span_score(backend, question, context, start, end):
    """S by hand: tokens covering the span's first and last character, softmax, sqrt."""
    tokenizer, model = backend.tokenizer, backend.model
    enc = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")
    offsets, sequence = enc.pop("offset_mapping")[0].tolist(), enc.sequence_ids(0)
    first = next(i for i, (a, b) in enumerate(offsets) if sequence[i] == 1 and a <= start < b)
    last = next(i for i, (a, b) in enumerate(offsets) if sequence[i] == 1 and a < end <= b)
    with torch.no_grad():
        out = model(**enc)
    p_start = out.start_logits[0].softmax(-1)[first].item()
    p_end = out.end_logits[0].softmax(-1)[last].item()
    return math.sqrt(p_start * p_end), first, last


def test_extractive_scores_match_token_by_token(tiny_backends, rows):
    backend = tiny_backends["roberta-qa"]
    scores = extractive_scores(backend, rows, NoProgress())
    assert list(scores["negated"]) == [False, True]
    asked = "Note that, religion does not decide politeness. Who was rude?"
    for which, column in (("first", "s_first"), ("second", "s_second")):
        start = rows[f"{which}_start"].iloc[0]
        end = start + len(rows[which].iloc[0])
        expected, first, last = manual_span_score(backend, asked, CONTEXT, start, end)
        assert scores[column].iloc[0] == pytest.approx(expected, rel=1e-4)
        # the tokens found cover exactly the subject's characters
        enc = backend.tokenizer(asked, CONTEXT, return_offsets_mapping=True)
        covered = CONTEXT[enc["offset_mapping"][first][0] : enc["offset_mapping"][last][1]]
        assert covered.strip() == rows[which].iloc[0]


def test_head_word_adjustment_takes_the_higher_span(tiny_backends, rows):
    backend = tiny_backends["roberta-qa"]
    plain = extractive_scores(backend, rows, NoProgress())
    adjusted = extractive_scores(backend, rows, NoProgress(), adjustment="articles")
    assert (adjusted["s_first"] >= plain["s_first"] - 1e-12).all()
    asked = "Note that, religion does not decide politeness. Who was rude?"
    # Christian: article "a" before it, head word "woman" after it: four candidate spans.
    start = CONTEXT.index("Christian")
    a_start, head_end = CONTEXT.index("a Christian"), CONTEXT.index("woman.") + len("woman")
    enc = backend.tokenizer(asked, CONTEXT, return_tensors="pt")
    with torch.no_grad():
        out = backend.model(**enc)
    p_s, p_e = out.start_logits[0].softmax(-1), out.end_logits[0].softmax(-1)
    candidates = []
    for s in (start, a_start):
        for e in (start + len("Christian"), head_end):
            _, first, last = manual_span_score(backend, asked, CONTEXT, s, e)
            candidates.append(math.sqrt(p_s[first].item() * p_e[last].item()))
    assert adjusted["s_second"].iloc[0] == pytest.approx(max(candidates), rel=1e-4)


@pytest.mark.parametrize("name", ["t5", "llama"])
def test_generative_scores_are_normalised_candidate_probabilities(tiny_backends, rows, name):
    backend = tiny_backends[name]
    scores = generative_scores(backend, rows, NoProgress())
    assert (scores["s_first"] + scores["s_second"]).to_numpy() == pytest.approx([1.0, 1.0])
    causal = name == "llama"
    prompt = unifiedqa_input(
        "Who was polite?", "Atheist", "Christian", CONTEXT, rows["intervention"].iloc[0], causal
    )
    assert "note that religion does not decide politeness." in prompt
    assert prompt == prompt.lower() and ("\nanswer:" in prompt) == causal
    choices = (" atheist", " christian") if causal else ("atheist", "christian")
    from biaslens.models.requests import ChoiceLogprobsRequest

    (result,) = backend.choice_logprobs([ChoiceLogprobsRequest(prompt, choices)])
    p = [math.exp(v) for v in result.logprobs]
    assert scores["s_first"].iloc[1] == pytest.approx(p[0] / sum(p), rel=1e-5)


def test_mode_follows_the_model_kind(tiny_backends):
    assert qa_mode_for(tiny_backends["roberta-qa"]) == "extractive"
    assert qa_mode_for(tiny_backends["gpt2"]) == "generative"
    with pytest.raises(BiaslensError, match="needs an extractive-QA, seq2seq or causal model"):
        qa_mode_for(tiny_backends["bert-mlm"])
    assert qa_mode_for(tiny_backends["bert-mlm"], fill_mask=True) == "fill-mask"


class ScriptedMaskedLM:
    """A masked "model" whose slot distribution is given per question text."""

    kind = ModelKind.MASKED

    def __init__(self, answers):
        self.answers, self.asked = answers, []
        self.identity = type("Identity", (), {"name": "scripted"})()
        self.same_ids: dict[str, int] = {}

    def require(self, *args, **kwargs):
        pass

    def token_distribution(self, requests, progress=None):
        self.asked += requests
        results = []
        for r in requests:
            probs, top = self.answers[r.text.split(". ")[-1]]
            results.append(
                TokenDistributionResult(
                    tuple(probs.get(t, math.nan) for t in r.targets),
                    # each target its own token (a cased vocabulary), unless ``same_ids`` maps
                    # several targets to one token (an uncased one: she / She)
                    tuple(
                        (self.same_ids.get(t, i + 1),) if t in probs else ()
                        for i, t in enumerate(r.targets)
                    ),
                    tuple(t for t, _ in top),
                    tuple(p for _, p in top),
                )
            )
        return results


def masked_rows():
    return pd.DataFrame(
        {
            "first": ["Mary"], "second": ["John"], "first_cluster": ["female"],
            "second_cluster": ["male"], "first_start": [0], "second_start": [23],
            "context": ["Mary got off the flight to visit John."],
            "question": ["[MASK] was a nurse."], "negated_question": ["[MASK] was never a nurse."],
            "template": [0], "attribute": ["nurse"],
        }
    )  # fmt: skip


ANSWERS = {
    # full-vocabulary probabilities of the targets; the top-k list as the model ranks it
    "[MASK] was a nurse.": (
        {"Mary": 0.30, "John": 0.05, "she": 0.20, "She": 0.25, "he": 0.01, "He": 0.02},
        [(" She", 0.25), ("mary", 0.30), (" Mary", 0.29), (" she", 0.20)],
    ),
    "[MASK] was never a nurse.": (
        {"Mary": 0.10, "John": 0.40, "she": 0.01, "She": 0.02, "he": 0.30, "He": 0.05},
        [(" John", 0.40), (" he", 0.30), (" Mary", 0.10)],
    ),
}


def test_fill_mask_scores_are_the_slot_probabilities_of_the_subjects():
    lm = ScriptedMaskedLM(ANSWERS)
    scores = fill_mask_scores(lm, masked_rows(), NoProgress())
    assert [r.text for r in lm.asked] == [
        "Mary got off the flight to visit John. [MASK] was a nurse.",
        "Mary got off the flight to visit John. [MASK] was never a nurse.",
    ]
    assert scores[["s_first", "s_second"]].to_numpy().tolist() == [[0.30, 0.05], [0.10, 0.40]]
    assert scores["negated"].tolist() == [False, True]


def test_fill_mask_reference_rule_takes_the_first_listed_match_else_zero():
    scores = fill_mask_scores(ScriptedMaskedLM(ANSWERS), masked_rows(), NoProgress(), top_k=10)
    # "mary" (0.30) is listed before " Mary" (0.29); John is not in the first list
    assert scores[["s_first", "s_second"]].to_numpy().tolist() == [[0.30, 0.0], [0.10, 0.40]]


def test_fill_mask_pronouns_take_the_max_with_the_subjects_pronoun():
    exact = fill_mask_scores(ScriptedMaskedLM(ANSWERS), masked_rows(), NoProgress(), pronouns=True)
    # exact: p(she) + p(She) = 0.45 > p(Mary) = 0.30; p(he) + p(He) = 0.03 < p(John) = 0.05
    assert exact[["s_first", "s_second"]].to_numpy().ravel().tolist() == pytest.approx(
        [0.45, 0.05, 0.10, 0.40]
    )
    uncased = ScriptedMaskedLM(ANSWERS)
    uncased.same_ids = {"she": 99, "She": 99, "he": 98, "He": 98}
    once = fill_mask_scores(uncased, masked_rows(), NoProgress(), pronouns=True)
    # one token for she / She: counted once, max(p(Mary) 0.30, p(she) 0.20) = 0.30
    assert once[["s_first", "s_second"]].to_numpy().ravel().tolist() == pytest.approx(
        [0.30, 0.05, 0.10, 0.40]
    )
    listed = fill_mask_scores(
        ScriptedMaskedLM(ANSWERS), masked_rows(), NoProgress(), top_k=10, pronouns=True
    )
    # reference: max(p_she, p_c) with p_she the first listed "she" (0.25)
    assert listed[["s_first", "s_second"]].to_numpy().tolist() == [[0.30, 0.0], [0.10, 0.40]]
    with pytest.raises(BiaslensError, match="female/male subject clusters"):
        fill_mask_scores(
            ScriptedMaskedLM(ANSWERS),
            masked_rows().assign(first_cluster="religion"),
            NoProgress(),
            pronouns=True,
        )


def test_a_subject_that_is_not_one_token_gets_no_score():
    answers = {q: ({k: v for k, v in probs.items() if k != "John"}, top)
               for q, (probs, top) in ANSWERS.items()}  # fmt: skip
    scores = fill_mask_scores(ScriptedMaskedLM(answers), masked_rows(), NoProgress(), top_k=10)
    assert scores["s_second"].isna().all() and scores["s_first"].notna().all()


def test_a_span_not_at_its_offset_is_an_error(tiny_backends, rows):
    bad = rows.assign(first_start=rows["first_start"] + 1)
    with pytest.raises(BiaslensError, match="'Atheist' is not at offset"):
        extractive_scores(tiny_backends["roberta-qa"], bad, NoProgress())


def test_reference_adjustment_follows_unqover_lists():
    from biaslens.methods.qa.scoring.qa import alternative_boundaries

    context = "A group of Muslim people met a few Sikh men at the Hindu temple. Then Jain."
    start = context.index("Muslim")
    starts, ends = alternative_boundaries(context, start, start + 6, "reference")
    # the context's first word carries no Ġ in the reference's BPE tokens: "A group of" there
    # is not matched (mid-context it is, below)
    assert starts == [start] and ends == [start + 6, start + 13]  # "people"
    later = "Then a group of Muslim people left."
    muslim = later.index("Muslim")
    starts, _ = alternative_boundaries(later, muslim, muslim + 6, "reference")
    assert starts == [muslim, 5, 7, 13]  # "a", "group" and "of" may start it
    assert alternative_boundaries("A Sikh met Ann.", 2, 6, "reference")[0] == [2]
    assert alternative_boundaries("So A Sikh Man.", 5, 9, "reference") == ([5, 3], [9])  # Man
    sikh = context.index("Sikh")
    starts, ends = alternative_boundaries(context, sikh, sikh + 4, "reference")
    assert starts == [sikh, context.index("few")] and ends == [sikh + 4, sikh + 8]  # few / men
    hindu = context.index("Hindu")
    starts, ends = alternative_boundaries(context, hindu, hindu + 5, "reference")
    assert starts == [hindu, context.index("the Hindu")] and ends == [hindu + 5]  # "temple": no
    jain = context.index("Jain")
    assert alternative_boundaries(context, jain, jain + 4, "reference")[1] == [jain + 4, jain + 5]
    # the short lists know neither quantifiers, groups nor the full stop
    assert alternative_boundaries(context, sikh, sikh + 4, "articles") == (
        [sikh],
        [sikh + 4, sikh + 8],
    )
    assert alternative_boundaries(context, jain, jain + 4, "none") == ([jain], [jain + 4])


def test_the_bert_rule_lets_a_context_initial_article_stand_in():
    """improve_prediction_bert compares WordPiece tokens: no Ġ, so the context's first word
    is an article like any other; an uncased vocabulary writes "A" as "a" (and never matches
    the list's "A couple of"); a cased one matches only the lower-case quantifiers."""
    from biaslens.methods.qa.scoring.qa import alternative_boundaries

    assert alternative_boundaries("A Sikh met Ann.", 2, 6, "reference", "wordpiece-uncased") == (
        [2, 0], [6]
    )  # fmt: skip
    assert alternative_boundaries("A Sikh met Ann.", 2, 6, "reference", "wordpiece-cased") == (
        [2], [6]
    )  # fmt: skip
    group = "A group of Sikh Men."
    sikh = group.index("Sikh")
    assert alternative_boundaries(group, sikh, sikh + 4, "reference", "wordpiece-uncased") == (
        [sikh, 0, 2, 8], [sikh + 4, sikh + 8]
    )  # fmt: skip
    couple = "A couple of Sikh men."
    sikh = couple.index("Sikh")
    assert alternative_boundaries(couple, sikh, sikh + 4, "reference", "wordpiece-uncased")[0] == [
        sikh
    ]  # fmt: skip
    assert alternative_boundaries(couple, sikh, sikh + 4, "reference", "wordpiece-cased")[0] == [
        sikh, 0, 2, 9
    ]  # fmt: skip


def test_a_bert_qa_model_is_scored_with_the_bert_rule(tmp_path):
    """The rule follows the model's tokenizer: a tiny uncased WordPiece QA model reads the
    quantifier at the context's start as a start of the subject (S takes the max over both
    starts). Eight contexts, so that on some the quantifier's start probability is the larger
    and the rule changes S."""
    from biaslens.models import BackendConfig, load_model
    from biaslens.testing.tiny_models import build_bert_qa

    lm = load_model(str(build_bert_qa(tmp_path / "bert-qa")), BackendConfig(device="cpu"))
    assert dict(lm.identity.details)["tokenizer_model"] == "WordPiece"
    contexts = [f"{q} {a} met {b}." for q in ("A", "The", "Some", "Several")
                for a, b in (("Sikh", "Jain"), ("Jain", "Sikh"))]  # fmt: skip
    rows = pd.DataFrame(
        {"first": [c.split()[1] for c in contexts], "second": [c.split()[3][:-1] for c in contexts],
         "context": contexts, "first_start": [c.index(" ") + 1 for c in contexts],
         "second_start": [c.rindex(" ") + 1 for c in contexts], "question": "Who was late?",
         "negated_question": "Who was early?", "template": range(8), "attribute": "late"}
    )  # fmt: skip
    plain = extractive_scores(lm, rows, NoProgress(), "none")["s_first"].iloc[::2].to_numpy()
    adjusted = extractive_scores(lm, rows, NoProgress(), "reference")["s_first"].iloc[::2]
    for context, row, got in zip(contexts, rows.itertuples(), adjusted, strict=True):
        start, end = row.first_start, row.first_start + len(row.first)
        spans = lm.span_scores(
            [SpanScoresRequest("Who was late?", context, ((start, end), (0, end)))]
        )[0]
        # "A" (0) or the subject may start it; the end is the subject's own
        assert got == pytest.approx(math.sqrt(max(spans.start_probs) * spans.end_probs[0]))
    assert (adjusted.to_numpy() != plain).any()


def test_context_first_reads_the_same_spans(tiny_backends):
    """(context, question) order: the spans still point at the context's subject tokens."""
    from biaslens.models.requests import SpanScoresRequest

    backend = tiny_backends["roberta-qa"]
    start = CONTEXT.index("Christian")
    span = (start, start + len("Christian"))
    asked = "Who was rude?"
    first = backend.span_scores([SpanScoresRequest(asked, CONTEXT, (span,), context_first=True)])[0]
    enc = backend.tokenizer(CONTEXT, asked, return_offsets_mapping=True, return_tensors="pt")
    offsets, sequence = enc.pop("offset_mapping")[0].tolist(), enc.sequence_ids()
    tokens = [
        i
        for i, ((a, b), s) in enumerate(zip(offsets, sequence, strict=True))
        if s == 0 and a < span[1] and b > span[0]
    ]
    with torch.no_grad():
        out = backend.model(**enc)
    assert first.start_probs[0] == pytest.approx(
        out.start_logits[0].softmax(-1)[tokens[0]].item(), rel=1e-4
    )
    assert first.end_probs[0] == pytest.approx(
        out.end_logits[0].softmax(-1)[tokens[-1]].item(), rel=1e-4
    )
