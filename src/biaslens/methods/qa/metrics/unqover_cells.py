"""UnQover's contexts as arrays, and sums per cell that grow chunk by chunk.

A context (subject pair, template, attribute and any ``within`` keys) comes as four rows: two
subject orders × the question and its negation. With its subjects ordered (``low``: the smaller
name) and its rows in four slots — 0: low first, asked; 1: high first, asked; 2 and 3: the
same, negated — every per-context quantity of :mod:`.unqover` (Li et al. 2020, Section 3) is
arithmetic on columns: no joins, no group-bys. Keys are coded to dense integer ids that stay the
same across chunks (:class:`Vocabulary`), and sums are kept per cell of ids
(:class:`CellSums`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError

SLOTS = 4
"""Two subject orders × the question and its negation."""

MERGE_ROWS = 1 << 16
"""Pending rows of a :class:`CellSums` are merged once they outnumber both this and the merged
cells."""

_MISSING = ("missing",)
"""Stands for NaN in a key, so that every chunk's NaN is the same key."""


def distinct_rows(*columns: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per row, the number of its distinct row of ``columns`` (0 … in sorted order), and the
    distinct rows (one array per column)."""
    order = np.lexsort(columns[::-1])
    ordered = [np.asarray(c)[order] for c in columns]
    new = np.zeros(len(order), dtype=bool)
    new[:1] = True
    for column in ordered:
        new[1:] |= column[1:] != column[:-1]
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.cumsum(new) - 1
    return number, [column[new] for column in ordered]


def text_ranks(keys) -> np.ndarray:
    """Each key's place among ``keys`` sorted as text: what orders subjects, templates and
    attributes, whatever order the chunks brought them in."""
    order = sorted(range(len(keys)), key=lambda i: str(keys[i]))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    return rank


Coded = tuple[np.ndarray, dict[str, np.ndarray]]
"""A chunk's rows coded (:meth:`ContextCoder.context_of_rows`): per row its context's number
within the chunk, and the ids it is made of."""


def coded_subset(coded: Coded, keep: np.ndarray) -> Coded:
    """The rows ``keep`` of ``coded``, their contexts numbered 0 … again."""
    context, parts = coded
    number = np.unique(context[keep], return_inverse=True)[1].ravel()
    return number, {name: ids[keep] for name, ids in parts.items()}


class Vocabulary:
    """Dense ids for keys (single values or tuples of ids), the same in every chunk."""

    def __init__(self) -> None:
        self._ids: dict = {}
        self.keys: list = []

    def __len__(self) -> int:
        return len(self.keys)

    def of_values(self, values) -> np.ndarray:
        """The id of each value (a column of the scores)."""
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
        keys = [_MISSING if _is_missing(u) else u for u in uniques]
        return self._lookup(keys)[codes]

    def of_rows(self, *columns: np.ndarray) -> np.ndarray:
        """The id of each row of ``columns`` (arrays of ids) taken together."""
        number, distinct = distinct_rows(*columns)
        return self._lookup(list(zip(*(c.tolist() for c in distinct), strict=True)))[number]

    def _lookup(self, keys: list) -> np.ndarray:
        ids = np.empty(len(keys), dtype=np.int64)
        for i, key in enumerate(keys):
            found = self._ids.get(key)
            if found is None:
                found = self._ids[key] = len(self.keys)
                self.keys.append(key)
            ids[i] = found
        return ids

    def decode(self, ids) -> list:
        """The keys of ``ids`` (NaN where a key was missing)."""
        return [np.nan if self.keys[i] is _MISSING else self.keys[i] for i in ids]


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


class CellSums:
    """Named sums per cell, a cell being a tuple of ids packed into one int64 (``widths``: the
    bits of each id, 63 in all). Each chunk's sums are kept as they come and merged (sorted by
    cell, summed) once they outnumber the merged cells: memory stays within about twice one
    row of numbers per cell, with no Python object per cell."""

    def __init__(self, widths: tuple[int, ...], *names: str) -> None:
        if sum(widths) > 63:
            raise ValueError(f"cell ids of {widths} bits do not fit in an int64")
        self.widths, self.names = widths, names
        self._cells = np.empty(0, dtype=np.int64)
        self._sums = np.empty((0, len(names)))
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_rows = 0

    def add(self, key: tuple[np.ndarray, ...], **values: np.ndarray) -> None:
        """``key``: one array of ids per part of the cell; ``values``: one array per sum."""
        code = np.zeros(len(key[0]), dtype=np.int64)
        for ids, width in zip(key, self.widths, strict=True):
            ids = np.asarray(ids, dtype=np.int64)
            if len(ids) and ids.max() >= 1 << width:
                raise BiaslensError(
                    f"more than {1 << width:,} distinct values in one key of UnQover's sums"
                )
            code = (code << width) | ids
        sums = np.column_stack([np.asarray(values[name], dtype=float) for name in self.names])
        self._pending.append((code, sums))
        self._pending_rows += len(code)
        if self._pending_rows > max(len(self._cells), MERGE_ROWS):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        codes = np.concatenate([self._cells, *(code for code, _ in self._pending)])
        sums = np.concatenate([self._sums, *(part for _, part in self._pending)])
        self._pending, self._pending_rows = [], 0
        self._cells, inverse = np.unique(codes, return_inverse=True)
        self._sums = np.column_stack(
            [np.bincount(inverse, weights=column, minlength=len(self._cells)) for column in sums.T]
        ).reshape(len(self._cells), len(self.names))

    def __len__(self) -> int:
        self._merge()
        return len(self._cells)

    def columns(self) -> dict[str, np.ndarray]:
        """``key``: (cells × parts) ids of each cell, in cell order; then each sum."""
        self._merge()
        parts, code = [], self._cells
        for width in reversed(self.widths):
            parts.append(code & ((1 << width) - 1))
            code = code >> width
        key = np.column_stack(parts[::-1]).reshape(len(self._cells), len(self.widths))
        return {"key": key, **{name: self._sums[:, i] for i, name in enumerate(self.names)}}


@dataclass(frozen=True)
class Contexts:
    """Complete contexts of one chunk: per context its subject, template, attribute and
    ``within`` ids and (contexts × :data:`SLOTS`) arrays of S(first) and S(second)."""

    low: np.ndarray
    high: np.ndarray
    template: np.ndarray
    attribute: np.ndarray
    within: tuple[np.ndarray, ...]
    s_first: np.ndarray
    s_second: np.ndarray

    def __len__(self) -> int:
        return len(self.low)

    def comparative(self) -> np.ndarray:
        """C(low, high, a, τ) per context; C(high, low) is its negative.

        S̃(x|a) = ½[S(x first) + S(x second)], B(x) = S̃(x|a) − S̃(x|ā), C = ½[B(x1) − B(x2)]."""
        first, second = self.s_first, self.s_second
        tilde_low = 0.5 * (first[:, 0] + second[:, 1])
        tilde_low_negated = 0.5 * (first[:, 2] + second[:, 3])
        tilde_high = 0.5 * (second[:, 0] + first[:, 1])
        tilde_high_negated = 0.5 * (second[:, 2] + first[:, 3])
        return 0.5 * ((tilde_low - tilde_low_negated) - (tilde_high - tilde_high_negated))

    def positional_terms(self) -> np.ndarray:
        """δ's four terms per context: |S(x first) − S(x second)| for each row's first subject,
        the question kept."""
        mirror = [1, 0, 3, 2]
        return np.abs(self.s_first - self.s_second[:, mirror])

    def attributive_terms(self) -> np.ndarray:
        """ε's four terms per context: |S(x1|a) − S(x2|ā)| and |S(x2|a) − S(x1|ā)| in each
        subject order."""
        first, second = self.s_first, self.s_second
        asked, negated = [0, 1], [2, 3]
        return np.concatenate(
            [
                np.abs(first[:, asked] - second[:, negated]),
                np.abs(second[:, asked] - first[:, negated]),
            ],
            axis=1,
        )


class ContextCoder:
    """Codes a chunk's rows into ids that hold across chunks (subjects, templates, attributes,
    ``within`` keys), and its complete contexts into :class:`Contexts`."""

    def __init__(self, within: tuple[str, ...]) -> None:
        self.within = tuple(within)
        self.subjects = Vocabulary()
        self.templates = Vocabulary()
        self.attributes = Vocabulary()
        self.within_keys = tuple(Vocabulary() for _ in self.within)

    def context_of_rows(self, scores: pd.DataFrame) -> Coded:
        """Per row: its context's number within the chunk (0 …), and the ids it is made of
        (``low``, ``high``, ``template``, ``attribute``, ``within``…, ``swapped``: high first)."""
        first, second = scores["first"].to_numpy(object), scores["second"].to_numpy(object)
        codes, uniques = pd.factorize(np.concatenate([first, second]))
        rank = text_ranks(uniques)
        ids = self.subjects.of_values(uniques)
        one, two = codes[: len(first)], codes[len(first) :]
        swapped = rank[one] > rank[two]
        parts = {
            "low": ids[np.where(swapped, two, one)],
            "high": ids[np.where(swapped, one, two)],
            "template": self.templates.of_values(scores["template"]),
            "attribute": self.attributes.of_values(scores["attribute"]),
        }
        for i, (name, vocabulary) in enumerate(zip(self.within, self.within_keys, strict=True)):
            parts[f"within{i}"] = vocabulary.of_values(scores[name])
        context, _ = distinct_rows(*parts.values())
        return context, {**parts, "swapped": swapped}

    def describe(self, contexts: Contexts, i: int) -> str:
        """Context ``i`` in words: "low / high (template τ, attribute a, within-key value…)"."""
        low, high = self.subjects.decode([contexts.low[i], contexts.high[i]])
        keys = zip(self.within, self.within_keys, contexts.within, strict=True)
        within = "".join(f", {name} {words.decode([ids[i]])[0]}" for name, words, ids in keys)
        return (
            f"{low} / {high} (template {self.templates.decode([contexts.template[i]])[0]}, "
            f"attribute {self.attributes.decode([contexts.attribute[i]])[0]}{within})"
        )

    def contexts(self, scores: pd.DataFrame, coded: Coded) -> Contexts | None:
        """The chunk's contexts (``coded``: its rows coded), each with its four rows; None when
        a context lacks a row or holds one twice (the caller names it)."""
        context, parts = coded
        alone = parts["low"] == parts["high"]
        if alone.any():
            row = scores.iloc[int(np.argmax(alone))]
            raise BiaslensError(
                f"a context pairs {row['first']} with itself (template {row['template']}, "
                f"attribute {row['attribute']})"
            )
        count = int(context.max()) + 1
        slot = SLOTS * context + 2 * scores["negated"].to_numpy(bool) + parts["swapped"]
        if len(slot) != SLOTS * count or (np.bincount(slot, minlength=SLOTS * count) != 1).any():
            return None
        row_at = np.empty(SLOTS * count, dtype=np.int64)
        row_at[slot] = np.arange(len(slot))
        row_at = row_at.reshape(count, SLOTS)
        one = row_at[:, 0]
        return Contexts(
            low=parts["low"][one],
            high=parts["high"][one],
            template=parts["template"][one],
            attribute=parts["attribute"][one],
            within=tuple(parts[f"within{i}"][one] for i in range(len(self.within))),
            s_first=scores["s_first"].to_numpy(float)[row_at],
            s_second=scores["s_second"].to_numpy(float)[row_at],
        )


class UnitCells:
    """The per-unit sums the intervals of :mod:`.intervals.unqover` are made of, added context
    by context: a unit is a subject pair × template (its attributes, both orders, both questions
    and every ``within`` key together)."""

    def __init__(self, coder: ContextCoder) -> None:
        self.coder = coder
        self.units = Vocabulary()  # (low, high, template)
        # (unit, side: 0 low 1 high, attribute); (unit, attribute); (unit,)
        self.subject = CellSums((42, 1, 20), "c_sum", "sign_sum", "n")
        self.pair = CellSums((42, 21), "c_sum", "n")
        self.terms = {key: CellSums((42,), "t_sum", "n") for key in ("d", "e")}

    def add(self, contexts: Contexts, c: np.ndarray, delta: np.ndarray, epsilon: np.ndarray):
        """``c``: :meth:`Contexts.comparative`; ``delta``, ``epsilon``: the terms per context."""
        unit = self.units.of_rows(contexts.low, contexts.high, contexts.template)
        ones = np.ones(len(contexts))
        for side, value in ((0, c), (1, -c)):
            cell = (unit, np.full(len(unit), side), contexts.attribute)
            self.subject.add(cell, c_sum=value, sign_sum=np.sign(value), n=ones)
        self.pair.add((unit, contexts.attribute), c_sum=c, n=ones)
        for key, terms in (("d", delta), ("e", epsilon)):
            count = np.full(len(unit), terms.shape[1])
            self.terms[key].add((unit,), t_sum=terms.sum(axis=1), n=count)

    def unit_keys(self) -> np.ndarray:
        """(units × 3) ids of each unit's low subject, high subject and template."""
        return np.array(self.units.keys, dtype=np.int64).reshape(len(self.units), 3)


def incomplete_note(subject_cells: np.ndarray, pair_cells: np.ndarray, attributes: int):
    """Why μ, η, θ4 get no interval where the set is not a complete crossed design (some
    subjects or pairs lack an attribute; ``*_cells``: the attributes each has); None where it
    is complete."""
    subjects = int((subject_cells < attributes).sum())
    pairs = int((pair_cells < attributes).sum())
    if not subjects and not pairs:
        return None
    return (
        f"not a complete design: {subjects} of {len(subject_cells)} subjects and {pairs} of "
        f"{len(pair_cells)} subject pairs lack some of the {attributes} attributes, and a "
        "maximum over the attributes present lies below the maximum over all; give every "
        "context of the set for an interval"
    )
