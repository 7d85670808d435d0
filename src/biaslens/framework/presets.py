"""Preset values that depend on the loaded model (``--preset paper`` on each model class)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from biaslens.models.base import ModelKind

UNSET = object()
"""A :class:`ByModel` choice that leaves the setting at the user's value or its default."""


@dataclass(frozen=True)
class ByModel:
    """A preset value that depends on the loaded model: ``choose(kind, values)`` gets the
    model's kind and the other values given so far (the user's over the preset's) and returns
    the value, or :data:`UNSET` to leave the setting alone. E.g. SIB's prompts A, B and C apply
    to causal and seq2seq models only: a masked LM fills its slot without a prompt."""

    choose: Callable[..., Any]
    reads_details: bool = False
    """``choose(kind, values, details)`` also gets the model identity's details (e.g. its
    tokenizer's model: UnQover's single-token subject lists are per tokenizer family)."""

    def value(self, kind: ModelKind, values: dict[str, Any], details: dict[str, str]) -> Any:
        if self.reads_details:
            return self.choose(kind, values, details)
        return self.choose(kind, values)
