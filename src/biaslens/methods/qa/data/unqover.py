"""UnQover underspecified questions (Li et al., 2020, Section 2) built from the word lists.

Word-list files (UnQover's ``word_lists/`` layout; ``#`` lines and blank lines are skipped):

* subjects ``nouns/subjects/NAME``: ``[subj] term`` or ``[subj] cluster | term``, optionally with
  aligned extra forms such as ``[subj:dem] term`` (the n-th row of each form belongs to the n-th
  subject);
* activities ``activities/NAME``: ``[p_act] cluster | text`` with aligned ``[p_act:neg]``
  (negation) and variants such as ``[p_act-single]``; the ``[p_act]`` text of row n names
  attribute n (its *unique* form);
* slot templates ``slots/NAME``: ``context<TAB>question<TAB>negated question`` with
  ``[subj1]``/``[subj2]`` (or ``[subj1:dem]`` …) and an activity slot. Masked-LM templates
  (``*_noact_lm``) hold ``[mask]`` where the model fills in a subject; it becomes ``[MASK]``.

Every template × ordered subject pair (both orders) × attribute is one example with the
question and its negation. Contexts depend only on (template, pair) and questions only on
(template, attribute), so :func:`iter_examples` crosses two small tables chunk by chunk and never
holds millions of Python objects. Article smoothing (``a`` → ``an`` before a vowel) follows
UnQover's generator.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.common.tokens import MASK
from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.unqover_lists import (
    DOMAINS,
    Activity,
    Domain,
    SlotTemplate,
    Subject,
    check_domain,
    parse_activities,
    parse_slots,
    parse_subjects,
    read_lines,
)
from biaslens.methods.qa.data.unqover_text import (
    LIST_MASK,
    SLOT,
    SUBJECT_SLOT,
    find_word,
    smooth_articles,
)

__all__ = [
    "DOMAINS",
    "Activity",
    "Domain",
    "QuestionSet",
    "SlotTemplate",
    "Subject",
    "check_domain",
    "find_word",
    "load_question_set",
    "parse_activities",
    "parse_slots",
    "parse_subjects",
    "read_lines",
    "smooth_articles",
    "subject_pairs",
]


@dataclass(frozen=True)
class QuestionSet:
    """The parsed lists of one domain; :meth:`iter_examples` builds its questions lazily."""

    name: str
    pairs: tuple[tuple[Subject, Subject], ...]
    templates: tuple[SlotTemplate, ...]
    activities: dict[str, list[Activity]]
    slots_path: Path
    filler: str | None = None

    def activity_kind(self, template: SlotTemplate) -> str:
        text = f"{template.question} {template.negated_question}"
        kinds = [k for k in self.activities if k in text or k[:-1] + ":" in text]
        if len(kinds) != 1:
            found = sorted(set(SLOT.findall(text)))
            raise BiaslensError(
                f"{self.slots_path}:{template.line}: question slot(s) {found} match "
                f"{'no' if not kinds else 'several'} activity type(s) of the list "
                f"(has {', '.join(self.activities)})"
            )
        return kinds[0]

    def __len__(self) -> int:
        return len(self.pairs) * sum(
            len(self.activities[self.activity_kind(t)]) for t in self.templates
        )

    def contexts(self) -> pd.DataFrame:
        """One row per (template, ordered pair) with the rendered context and subject spans."""
        rows = []
        for template in self.templates:
            for first, second in self.pairs:
                rows.append(self._render_context(template, first, second))
        return pd.DataFrame(rows)

    def questions(self) -> pd.DataFrame:
        """One row per (template, attribute): the question and its negation."""
        rows = []
        for template in self.templates:
            kind = self.activity_kind(template)
            for activity in self.activities[kind]:
                q, nq = template.question, template.negated_question
                for head, text in sorted(activity.forms.items(), key=lambda kv: -len(kv[0])):
                    q, nq = q.replace(head, text), nq.replace(head, text)
                leftover = SLOT.findall((q + nq).replace(LIST_MASK, ""))
                if leftover:
                    raise BiaslensError(
                        f"{self.slots_path}:{template.line}: unknown slot(s) {leftover}"
                    )
                rows.append(
                    {
                        "template": template.tid,
                        "category": activity.category,
                        "attribute": activity.attribute,
                        "question": smooth_articles(q).replace(LIST_MASK, MASK),
                        "negated_question": smooth_articles(nq).replace(LIST_MASK, MASK),
                    }
                )
        return pd.DataFrame(rows)

    def _render_context(self, template: SlotTemplate, first: Subject, second: Subject) -> dict:
        text = template.context
        surface = []
        for slot_number, subject in (("1", first), ("2", second)):
            matches = [m for m in SUBJECT_SLOT.finditer(text) if m.group(1) == slot_number]
            if len(matches) != 1:
                raise BiaslensError(
                    f"{self.slots_path}:{template.line}: the context needs exactly one "
                    f"[subj{slot_number}] slot, found {len(matches)}"
                )
            form = "[subj" + (matches[0].group(2) or "") + "]"
            if form not in subject.forms:
                raise BiaslensError(
                    f"{self.slots_path}:{template.line}: unknown slot {matches[0].group(0)} "
                    f"(subject {subject.term!r} has {sorted(subject.forms)})"
                )
            surface.append(subject.forms[form])
            text = text.replace(matches[0].group(0), subject.forms[form])
        leftover = SLOT.findall(text)
        if leftover:
            raise BiaslensError(f"{self.slots_path}:{template.line}: unknown slot(s) {leftover}")
        text = smooth_articles(text)
        if self.filler:
            text = f"{self.filler} {text}"
        start1 = find_word(text, surface[0])
        start2 = find_word(text, surface[1], avoid=(start1, start1 + len(surface[0])))
        for start, word in ((start1, surface[0]), (start2, surface[1])):
            if start < 0:
                raise BiaslensError(
                    f"{self.slots_path}:{template.line}: subject {word!r} does not appear "
                    f"verbatim in the rendered context {text!r}"
                )
        return {
            "template": template.tid,
            "first": first.term,
            "second": second.term,
            "first_cluster": first.cluster,
            "second_cluster": second.cluster,
            "first_text": surface[0],
            "second_text": surface[1],
            "first_start": start1,
            "second_start": start2,
            "context": text,
        }

    def iter_examples(self, chunk_size: int = 200_000) -> Iterator[pd.DataFrame]:
        """All examples, ``chunk_size`` rows at a time (contexts × questions per template)."""
        contexts = self.contexts()
        questions = self.questions()
        by_template = {tid: part for tid, part in contexts.groupby("template", sort=True)}
        buffer: list[pd.DataFrame] = []
        buffered = 0
        for tid, asked in questions.groupby("template", sort=True):
            ctx = by_template[tid]
            step = max(1, chunk_size // max(1, len(asked)))
            for lo in range(0, len(ctx), step):
                part = ctx.iloc[lo : lo + step].merge(asked.drop(columns="template"), how="cross")
                part.insert(0, "domain", self.name)
                buffer.append(part)
                buffered += len(part)
                if buffered >= chunk_size:
                    yield _with_keys(pd.concat(buffer, ignore_index=True))
                    buffer, buffered = [], 0
        if buffer:
            yield _with_keys(pd.concat(buffer, ignore_index=True))

    def examples(self) -> pd.DataFrame:
        """Every example in one table (fine for religion/ethnicity; chunk gender/nationality)."""
        return pd.concat(list(self.iter_examples()), ignore_index=True)

    def sample(self, limit: int | None, seed: int = 0) -> pd.DataFrame:
        """The examples of :meth:`drawn_design` (every example when ``limit`` is None or
        covers them), each in both subject orders and with its negated question."""
        if limit is None or 2 * limit >= len(self):
            return self.examples()
        return pd.concat(list(self.iter_drawn(limit, seed, chunk_size=None)), ignore_index=True)

    def drawn_count(self, limit: int | None) -> int:
        """How many examples (rows) :meth:`iter_drawn` yields for ``limit``."""
        if limit is None or 2 * limit >= len(self):
            return len(self)
        pairs, templates = self.drawn_design(limit, 0)
        sizes = self._questions_per_template()
        return 2 * len(pairs) * int(sum(sizes[t] for t in templates))

    def _questions_per_template(self) -> dict[str, int]:
        return {t.tid: len(self.activities[self.activity_kind(t)]) for t in self.templates}

    def _lists(self) -> tuple[list[str], list[str] | None]:
        """The subjects, as one list (pairs within it) or two (pairs across them)."""
        forward = self.pairs[: len(self.pairs) // 2]
        firsts = list(dict.fromkeys(a.term for a, _ in forward))
        seconds = list(dict.fromkeys(b.term for _, b in forward))
        if set(firsts) & set(seconds):
            return list(dict.fromkeys(firsts + seconds)), None
        return firsts, seconds

    def drawn_design(self, limit: int, seed: int) -> tuple[list[int], list[str]]:
        """The forward pairs (indices) and templates a ``limit`` keeps: every pair among a
        seeded draw of subjects (from each list, for two lists) at a seeded draw of templates,
        with every attribute, so that the drawn set is a complete crossed design (subjects and
        templates are the draws the metrics' intervals resample) and every (subject,
        attribute) cell averages over at least two partners and two templates. Of the designs
        within ``limit`` examples, the one with most subjects and templates (the fewer of the
        two first), then most examples. A limit below the smallest such design is refused."""
        sizes = self._questions_per_template()
        rng = np.random.default_rng(seed)
        order = [self.templates[i].tid for i in rng.permutation(len(self.templates))]
        one, other = self._lists()
        one = [one[i] for i in rng.permutation(len(one))]
        other = None if other is None else [other[i] for i in rng.permutation(len(other))]
        # per list, for two lists (pairs across them): 2 and 2, or as many as a list has
        fewest = min(3, len(one)) if other is None else min(2, len(one))
        best = None
        for t in range(2, len(order) + 1):
            per_pair = sum(sizes[tid] for tid in order[:t])
            for k in range(fewest, len(one) + 1):
                if other is None:
                    pairs, subjects = k * (k - 1) // 2, k
                else:
                    j = max(min(k, len(other)), min(2, len(other)))
                    pairs, subjects = k * j, k + j
                examples = pairs * per_pair
                if examples > limit:
                    break
                score = (min(subjects, t), examples)
                if best is None or score > best[0]:
                    best = (score, k, t)
        if best is None:
            if len(order) < 2:
                raise BiaslensError(
                    f"{self.name}: one template: --limit needs two or more to draw from (0: all)"
                )
            pairs = fewest * (fewest - 1) // 2 if other is None else fewest * min(2, len(other))
            smallest = fewest if other is None else fewest + min(2, len(other))
            need = pairs * min(sizes[a] + sizes[b] for a in order for b in order if a != b)
            raise BiaslensError(
                f"--limit {limit} cannot hold the smallest set UnQover's metrics are defined on "
                f"here ({smallest} subjects × 2 templates with every attribute: at least {need} "
                f"examples); use --limit {need} or more (0: all)"
            )
        _, k, t = best
        if other is None:
            kept = set(one[:k])
        else:
            kept = set(one[:k]) | set(other[: max(min(k, len(other)), min(2, len(other)))])
        forward = self.pairs[: len(self.pairs) // 2]
        pairs = [i for i, (a, b) in enumerate(forward) if a.term in kept and b.term in kept]
        return pairs, order[:t]

    def iter_drawn(
        self, limit: int | None, seed: int = 0, chunk_size: int | None = 50_000
    ) -> Iterator[pd.DataFrame]:
        """The examples :meth:`sample` draws (every example when ``limit`` is None or covers
        them), template after template in chunks of ``chunk_size`` to twice as many rows
        (None: one chunk per template). Both subject orders of an example are always in the
        same chunk, so UnQover's comparative scores can be computed chunk by chunk; only one
        chunk is built at a time."""
        half = len(self.pairs) // 2  # pairs = forward pairs + the same pairs flipped
        contexts, questions = self.contexts(), self.questions()
        by_template = {tid: part for tid, part in contexts.groupby("template", sort=True)}
        asked = {tid: part for tid, part in questions.groupby("template", sort=True)}
        kept_pairs, kept_templates = np.arange(half, dtype=np.int64), set(asked)
        if limit is not None and 2 * limit < len(self):
            pairs, templates = self.drawn_design(limit, seed)
            kept_pairs, kept_templates = np.asarray(pairs, dtype=np.int64), set(templates)
        block = max(1, (chunk_size or 2 * half * max(len(a) for a in asked.values())) // 2)
        buffer: list[pd.DataFrame] = []
        for tid in sorted(kept_templates):
            q = asked[tid].drop(columns="template").reset_index(drop=True)
            local = (kept_pairs[:, None] * len(q) + np.arange(len(q))[None, :]).ravel()
            ctx = by_template[tid].reset_index(drop=True)
            for lo in range(0, len(local), block):
                pair, question = np.divmod(local[lo : lo + block], len(q))
                parts = []
                for order in (pair, pair + half):
                    part = pd.concat(
                        [
                            ctx.iloc[order].reset_index(drop=True),
                            q.iloc[question].reset_index(drop=True),
                        ],
                        axis=1,
                    )
                    part.insert(0, "domain", self.name)
                    parts.append(part)
                buffer.append(pd.concat(parts, ignore_index=True))
                if chunk_size is None or sum(len(b) for b in buffer) >= chunk_size:
                    yield _with_keys(pd.concat(buffer, ignore_index=True))
                    buffer = []
        if buffer:
            yield _with_keys(pd.concat(buffer, ignore_index=True))


def _with_keys(table: pd.DataFrame) -> pd.DataFrame:
    """UnQover's example key ``cluster1|cluster2|subj1|subj2|tid|category|act|act``."""
    table["key"] = (
        table["first_cluster"]
        + "|"
        + table["second_cluster"]
        + "|"
        + table["first"]
        + "|"
        + table["second"]
        + "|"
        + table["template"].astype(str)
        + "|"
        + table["category"]
        + "|"
        + table["attribute"]
        + "|"
        + table["attribute"]
    )
    return table


def subject_pairs(lists: list[list[Subject]]) -> tuple[tuple[Subject, Subject], ...]:
    """Ordered pairs, both orders: within one list (i < j, then flipped), or across two."""
    if len(lists) == 1:
        (items,) = lists
        pairs = [(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))]
    else:
        first, second = lists
        shared = {a.term.casefold() for a in first} & {b.term.casefold() for b in second}
        if shared:
            raise BiaslensError(
                f"the two subject lists share {', '.join(sorted(shared)[:5])}: a subject would "
                "be paired with itself"
            )
        pairs = [(a, b) for a in first for b in second]
    return tuple(pairs + [(b, a) for a, b in pairs])


def load_question_set(
    domain: str,
    word_lists: Path,
    subjects: tuple[str, ...] | None = None,
    slots: str | None = None,
    activities: str | None = None,
    filler: str | None = None,
) -> QuestionSet:
    """Parse a domain's lists under ``word_lists`` (UnQover or LEI layout); names override."""
    spec = check_domain(domain)
    root = Path(word_lists)
    subject_lists = [
        parse_subjects(root / "nouns" / "subjects" / name) for name in (subjects or spec.subjects)
    ]
    slots_path = root / "slots" / (slots or spec.slots)
    return QuestionSet(
        name=domain,
        pairs=subject_pairs(subject_lists),
        templates=tuple(parse_slots(slots_path)),
        activities=parse_activities(root / "activities" / (activities or spec.activities)),
        slots_path=slots_path,
        filler=filler,
    )
