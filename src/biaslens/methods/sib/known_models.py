"""The SIB paper's names of the models whose outputs its authors released (the reference
code's ``config.py``), by hub name: a card names a known model as a reader of the paper knows
it ("GPT-3", not ``davinci``)."""

from __future__ import annotations

PAPER_NAMES = {
    "bert-base-uncased": "BERT-base",
    "bert-large-uncased": "BERT-large",
    "roberta-base": "RoBERTa-base",
    "roberta-large": "RoBERTa-large",
    "facebook/bart-base": "BART-base",
    "facebook/bart-large": "BART-large",
    "google/ul2": "UL2-20B",
    "google/flan-ul2": "Flan-UL2-20B",
    "google/flan-t5-xxl": "Flan-T5-XXL",  # released beside the others; the text does not name it
    "davinci": "GPT-3",
    "text-davinci-002": "GPT-3.5 SFT",
    "text-davinci-003": "GPT-3.5 RLHF",
}

MASKED_ONLY = "BERT, RoBERTa, BART and UL2's span-denoising readout"
"""The known models that read the masked slot with no prompt: they stand beside an audited
run of a masked LM or span denoiser (prompt ``mask``), not beside a prompted one."""


def known_as(model: str) -> str:
    """``Paper name (hub name)``, or the hub name of a model the paper does not name."""
    name = PAPER_NAMES.get(model)
    return f"{name} ({model})" if name else model
