"""Tiny models that put pronouns where the paper's top-5 rules look.

A seeded random model almost never ranks a pronoun among its top 5 at the slot, so a test of
top-5 scoring on it compares 0 with 0. A copy of it is changed so that each of she, he and they
is among the top 5 for about a third of the inputs: by a constant added to the pronoun's output
bias (BERT, RoBERTa, BART), or, where the head has no bias (T5), by exchanging the pronoun's
rows with those of a token the model ranks that often among its top 5. The amounts are read off
calibration inputs. Some inputs then have pronouns in the top 5 and others none, so
that both the mass path and the zero-mass path are taken.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from transformers import AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoTokenizer

from tests.conformance import naive

PRONOUNS = ("she", "he", "they")
TARGET_SHARE = 0.35
"""How often, over the calibration inputs, a pronoun should be among the top 5."""


def _logits(model, tokenizer, text: str, style: str) -> torch.Tensor:
    if style == "generate":  # the first decoded token of a seq2seq model
        ids = tokenizer(text)["input_ids"]
        return naive.next_token_logits(model, ids, [model.config.decoder_start_token_id])
    return naive.slot_logits(model, tokenizer, text, style)


def _pronoun_ids(tokenizer, texts: list[str], style: str) -> dict[str, int]:
    if style == "generate":
        return {w: tokenizer(" " + w, add_special_tokens=False)["input_ids"][0] for w in PRONOUNS}
    sample = next(t for t in texts if naive.MASK in t)
    ids = {w: naive.slot_token(tokenizer, sample, w, style) for w in PRONOUNS}
    if None in ids.values():
        raise AssertionError(f"a pronoun is not one token at the slot: {ids}")
    return ids


def _swap_with_donors(model, tokenizer, texts, groups, ids, others, share) -> None:
    """Give each pronoun the embedding and output rows of a token that is among the top 5 for
    about ``share`` of the texts (and is in none of them): the same network with
    two names exchanged."""
    deviation = torch.zeros(others.shape[-1], dtype=torch.float64)
    start = 0
    for group in groups:  # a donor near the share in every group of texts, not on average
        in_top = torch.zeros_like(deviation)
        for row in others[start : start + group].topk(5, dim=-1).indices:
            in_top[row] += 1 / group
        deviation = torch.maximum(deviation, (in_top - share).abs())
        start += group
    seen = {i for t in texts for i in tokenizer(t.replace(naive.MASK, ""))["input_ids"]}
    excluded = seen | set(tokenizer.all_special_ids) | set(ids.values())
    donors = [
        int(i)
        for i in deviation.argsort()
        if int(i) not in excluded and naive.gender_of(tokenizer.decode([int(i)])) is None
    ]
    weights = {id(w): w for w in (model.get_input_embeddings().weight,
                                  model.get_output_embeddings().weight)}  # fmt: skip
    for token, donor in zip(ids.values(), donors, strict=False):
        for weight in weights.values():
            weight[[token, donor]] = weight[[donor, token]]


def leaning_copy(source: Path, folder: Path, style: str, groups: list[list[str]],
                 share: float = TARGET_SHARE) -> Path:  # fmt: skip
    """A copy of the tiny model at ``source`` whose pronouns are among the top 5 for about
    ``share`` of the texts of each group (exactly, where the head has a bias). ``style``:
    ``mlm`` / ``reconstruct`` / ``sentinel`` (the slot of a masked model, texts with
    ``[MASK]``) or ``generate`` (seq2seq, first token)."""
    texts = [t for group in groups for t in group]
    loader = AutoModelForMaskedLM if style == "mlm" else AutoModelForSeq2SeqLM
    model = loader.from_pretrained(source).eval()
    tokenizer = AutoTokenizer.from_pretrained(source)
    ids = _pronoun_ids(tokenizer, texts, style)
    logits = torch.stack([_logits(model, tokenizer, t, style) for t in texts]).double()
    others = logits.clone()
    others[:, list(ids.values())] = -torch.inf
    fifth = others.topk(5, dim=-1).values[:, -1]  # the logit a pronoun must beat
    head = model.get_output_embeddings()
    bias = getattr(model, "final_logits_bias", None)
    bias = bias[0] if bias is not None else head.bias
    with torch.no_grad():
        if bias is not None:  # a shift: in the top 5 where score + shift > fifth
            for token in ids.values():
                bias[token] += float(torch.quantile(fifth - logits[:, token], share)) + 1e-6
        else:
            _swap_with_donors(model, tokenizer, texts, [len(g) for g in groups], ids, others, share)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
