"""Decoding algorithms that need more than ``model.generate``: Contrastive Input Decoding."""

from biaslens.decoding.contrastive import (
    CIDOutput,
    ContrastiveDecoder,
    ContrastiveInputScaling,
    TopKSupport,
    contrastive_generate,
)

__all__ = [
    "CIDOutput",
    "ContrastiveDecoder",
    "ContrastiveInputScaling",
    "TopKSupport",
    "contrastive_generate",
]
