"""The crossed-design variance re-implemented plainly (dense matrices, one deletion at a time),
for tests that recompute an interval: units with their subjects (one or two, each in a
stratum) and template (or none); a statistic of the units kept."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np


def kinds(subjects: list[tuple], templates: list | None, strata: dict) -> dict[str, list[set]]:
    """Each kind of cluster (name → clusters, each a set of unit indices): per stratum, its
    subjects; templates; per stratum, a subject at one template; subject pairs across
    templates (pairs that meet several templates); single units."""
    n = len(subjects)
    out: dict[str, list[set]] = {}
    for stratum in sorted(set(strata.values())):
        members = sorted({s for unit in subjects for s in unit if strata[s] == stratum})
        out[f"subject {stratum}"] = [{u for u in range(n) if s in subjects[u]} for s in members]
    if templates is not None:
        levels = sorted(set(templates))
        out["template"] = [{u for u in range(n) if templates[u] == t} for t in levels]
        for stratum in sorted(set(strata.values())):
            members = sorted({s for unit in subjects for s in unit if strata[s] == stratum})
            out[f"subject {stratum} × template"] = [
                cell for s, t in itertools.product(members, sorted(set(templates)))
                if (cell := {u for u in range(n) if s in subjects[u] and templates[u] == t})
            ]  # fmt: skip
        if all(len(unit) == 2 for unit in subjects):
            out["pair"] = [{u for u in range(n) if subjects[u] == p} for p in sorted(set(subjects))]
    out["unit"] = [{u} for u in range(n)]
    return out


def _jackknife(values: np.ndarray) -> float:
    g = len(values)
    return (g - 1) / g * float(((values - values.mean()) ** 2).sum())


def variance(statistic: Callable[[np.ndarray], float], subjects, templates, strata) -> float:
    """The design-calibrated jackknife variance of ``statistic`` (a function of a 0/1 mask of
    the units kept)."""
    n = len(subjects)
    clusters = kinds(subjects, templates, strata)
    one_way = []
    for members in clusters.values():
        values = np.array([statistic(np.array([u not in c for u in range(n)])) for c in members])
        one_way.append(_jackknife(values))
    # each kind's jackknife of the plain mean is yᵀ Q y; under a unit-variance effect per
    # cluster of a kind (incidence Z), its expectation is tr(Q Z Zᵀ); the weights make the
    # combination's expectation the mean's variance under every kind at once
    incidence = {
        name: np.array([[u in c for c in members] for u in range(n)], float)
        for name, members in clusters.items()
    }
    expected = np.zeros((len(clusters), len(clusters)))
    truth = np.zeros(len(clusters))
    mean = np.full(n, 1 / n)
    for j, z in enumerate(incidence.values()):
        truth[j] = mean @ z @ z.T @ mean
        for i, members in enumerate(clusters.values()):
            rows = np.array([[u not in c for u in range(n)] for c in members], float)
            rows /= rows.sum(axis=1, keepdims=True)
            centred = rows - rows.mean(axis=0)
            g = len(rows)
            q = (g - 1) / g * centred.T @ centred
            expected[i, j] = np.trace(q @ z @ z.T)
    weights = np.linalg.lstsq(expected.T, truth, rcond=None)[0]
    combined = float(weights @ np.array(one_way))
    return combined if combined > 0 else max(one_way)
