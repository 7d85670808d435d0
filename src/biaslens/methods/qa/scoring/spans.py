"""UnQover's span adjustment: the neighbouring words that may stand in for a subject's
boundaries in extractive QA (``qa_hf/predict.py``, ``improve_prediction_*``).

``articles``: a preceding article and a following head word. ``reference``: the reference
code's lists, compared as that code compares tokens, which depends on the model's tokenizer:

* byte-level BPE (RoBERTa, ``improve_prediction_roberta``): case-sensitively, every entry
  carrying the word-boundary marker ``Ġ``, so a word at the very start of the context
  (tokenized without it) never matches;
* WordPiece (BERT, DistilBERT, ``improve_prediction_bert``): without the marker, so a
  context-initial article does stand in; an uncased vocabulary compares lower-cased words
  (and then never matches the list's ``A couple of``).
"""

from __future__ import annotations

from typing import Literal

SpanAdjustment = Literal["none", "articles", "reference"]
SpanRule = Literal["bpe", "wordpiece-cased", "wordpiece-uncased"]
"""How the reference compares its lists: the model's tokenizer (:func:`span_rule`)."""

ARTICLES = ("a", "an", "the", "A", "An", "The")
HEAD_WORDS = ("man", "woman", "men", "women", "boy", "girl", "boys", "girls", "person", "people")
REFERENCE_QUANTIFIERS = ("a", "an", "the", "some", "few", "several")
REFERENCE_QUANTIFIERS += tuple(q.capitalize() for q in REFERENCE_QUANTIFIERS)
REFERENCE_GROUPS = tuple(
    (article, noun, "of") for article in ("a", "A") for noun in ("group", "team", "couple")
)
REFERENCE_SUFFIXES = (
    "man",
    "woman",
    "boy",
    "girl",
    "child",
    "kid",
    "person",
    "folk",
    "people",
    "couple",
    "men",
    "women",
    "boys",
    "girls",
    "children",
    "kids",
    "persons",
    "folks",
    "city",
    "country",
    "cities",
    "countries",
)
"""UnQover's lists of ``improve_prediction_roberta``, without their ``Ġ``."""
BERT_QUANTIFIERS = ("an", "a", "the", "some", "few", "several")
BERT_GROUPS = (("a", "group", "of"), ("a", "team", "of"), ("A", "couple", "of"))
"""``improve_prediction_bert``'s lists (its suffixes are the RoBERTa ones)."""


def span_rule(details: dict) -> SpanRule:
    """The reference's comparison for a model, from its identity's details (the tokenizer's
    ``tokenizer_model`` and ``lowercases``); BPE where they are not recorded."""
    if details.get("tokenizer_model") != "WordPiece":
        return "bpe"
    return "wordpiece-uncased" if details.get("lowercases") == "True" else "wordpiece-cased"


def _neighbour_spans(context: str, start: int, end: int) -> tuple[int | None, int | None]:
    """Start of a preceding article and end of a following head word, if present."""
    before = context[:start].rstrip(" ")
    article = before.rsplit(" ", 1)[-1]
    article_start = len(before) - len(article) if article in ARTICLES and before else None
    after = context[end:]
    head = after.lstrip(" ").split(" ", 1)[0].rstrip(".,;:!?")
    head_end = (
        end + (len(after) - len(after.lstrip(" "))) + len(head) if head in HEAD_WORDS else None
    )
    if head_end is not None and head_end == end:
        head_end = None
    return article_start, head_end


def _words_before(context: str, start: int, count: int) -> list[tuple[str, int]]:
    """The ``count`` words before ``start`` (text, start offset), nearest last."""
    words = []
    position = start
    for _ in range(count):
        before = context[:position].rstrip(" ")
        if not before:
            break
        word = before.rsplit(" ", 1)[-1]
        position = len(before) - len(word)
        words.insert(0, (word, position))
    return words


def alternative_boundaries(
    context: str, start: int, end: int, adjustment: SpanAdjustment, rule: SpanRule = "bpe"
) -> tuple[list[int], list[int]]:
    """Character offsets that may stand in for the subject's start and for its end."""
    starts, ends = [start], [end]
    if adjustment == "articles":
        article_start, head_end = _neighbour_spans(context, start, end)
        starts += [article_start] if article_start is not None else []
        ends += [head_end] if head_end is not None else []
    elif adjustment == "reference":
        bpe = rule == "bpe"
        quantifiers, groups = (
            (REFERENCE_QUANTIFIERS, REFERENCE_GROUPS) if bpe else (BERT_QUANTIFIERS, BERT_GROUPS)
        )

        def word(text: str) -> str:
            return text.lower() if rule == "wordpiece-uncased" else text

        previous = [(word(w), offset) for w, offset in _words_before(context, start, 3)]
        # BPE: the context's first word has no Ġ and matches nothing; WordPiece has no marker
        if previous and previous[-1][0] in quantifiers and (previous[-1][1] > 0 or not bpe):
            starts.append(previous[-1][1])
        if (
            len(previous) == 3
            and tuple(w for w, _ in previous) in groups
            and (previous[0][1] > 0 or not bpe)
        ):
            starts += [offset for _, offset in previous]  # max over p_start of all four
        after = context[end:]
        if after.startswith("."):
            ends.append(end + 1)
        else:
            gap = len(after) - len(after.lstrip(" "))
            following = after.lstrip(" ").split(" ", 1)[0].rstrip(".,;:!?")
            if gap and word(following) in REFERENCE_SUFFIXES:
                ends.append(end + gap + len(following))
    return list(dict.fromkeys(starts)), list(dict.fromkeys(ends))
