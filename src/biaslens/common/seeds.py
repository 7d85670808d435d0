"""One range for every seed: 0 to 2**32 - 1, what every generator biaslens seeds accepts (pandas'
``random_state`` and NumPy's legacy seeding stop there; torch's at 2**64 - 1)."""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import Field

MAX_SEED = 2**32 - 1
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
"""A settings field that is a seed (a value out of range is a one-line error naming it)."""


def derived_seed(*parts: object) -> int:
    """A seed in range drawn from ``parts`` (32 bits of the sha256 of their texts): the same
    parts give the same seed, different parts independent-looking ones."""
    text = "\0".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
