"""The cross-fit's splits of UnQover's crossed design (:mod:`.unqover`): templates into two
halves, and each subject's partners into two groups, both seeded."""

from __future__ import annotations

import numpy as np

from biaslens.methods.qa.metrics.unqover_cells import distinct_rows


def template_halves(template: np.ndarray, attribute: np.ndarray, seed: int) -> dict[int, int]:
    """Each template's half (0 or 1) for cross-fitting: templates that ask the same attributes
    are shuffled (seeded) and dealt alternately, so that each attribute is asked in both halves
    where it has two templates or more. ``template``, ``attribute``: ranks
    (:func:`~.unqover_cells.text_ranks`) of the pairs asked; groups and their members are taken
    in that order, so the halves depend on the seed alone."""
    _, (templates, attributes) = distinct_rows(template, attribute)
    starts = np.flatnonzero(np.r_[True, templates[1:] != templates[:-1]])
    groups: dict[tuple, list[int]] = {}
    for members in np.split(np.arange(len(templates)), starts[1:]):
        groups.setdefault(tuple(attributes[members]), []).append(int(templates[members[0]]))
    rng = np.random.default_rng(seed)
    half, turn = {}, 0
    for signature in sorted(groups):
        order = groups[signature]
        rng.shuffle(order)
        for member in order:
            half[member] = turn % 2
            turn += 1
    return half


def partner_groups(subject: np.ndarray, partner: np.ndarray, seed: int) -> np.ndarray:
    """Each (subject, partner) row's partner group (0 or 1) for cross-fitting: every subject's
    partners shuffled (seeded) and dealt alternately, so each subject with two partners or
    more has some in both groups. ``subject``, ``partner``: ranks
    (:func:`~.unqover_cells.text_ranks`)."""
    number, (x, _) = distinct_rows(subject, partner)
    key = np.random.default_rng([seed, 1]).random(len(x))
    order = np.lexsort((key, x))
    first_of_subject = np.r_[True, x[order][1:] != x[order][:-1]]
    start = np.maximum.accumulate(np.where(first_of_subject, np.arange(len(order)), 0))
    group = np.empty(len(order), dtype=np.int64)
    group[order] = (np.arange(len(order)) - start) % 2
    return group[number]
