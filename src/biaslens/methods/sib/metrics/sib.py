"""SIB Method 1 metrics: gendered probability mass and its linear trend in W.

Paper: "Underspecification ... pronoun resolution" (SIB), Section 4 and Appendices E, G.
All functions are pure: tables or sequences in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.methods.sib.data.pronouns import GENDERS, gender_of
from biaslens.methods.sib.intervals.ols import fit_trend
from biaslens.methods.sib.intervals.trend import sentence_matrix, trend_columns, without_empty_notes
from biaslens.metrics.intervals import LEVEL, mean_of_two_shares, share_interval

GenderMass = dict[str, float]


def mass_exact(
    genders: Sequence[str], probs: Sequence[float], token_ids: Sequence[Sequence[int]]
) -> GenderMass:
    """Full-vocabulary mass per gender: the sum of the probabilities of that gender's target
    words, counting each distinct token sequence once (``She``/``she`` share a token in uncased
    vocabularies). Words that could not be scored (NaN) contribute nothing."""
    mass = dict.fromkeys(GENDERS, 0.0)
    seen: set[tuple[int, ...]] = set()
    for gender, prob, ids in zip(genders, probs, token_ids, strict=True):
        key = tuple(ids)
        if not key or math.isnan(prob) or key in seen:
            continue
        seen.add(key)
        mass[gender] += prob
    return mass


def mass_top_k(tokens: Sequence[str], probs: Sequence[float]) -> GenderMass:
    """Paper-faithful mass (Appendix G): the sum of the probabilities of listed pronouns among
    the given top-k tokens (k = 5 in the paper), matched case-insensitively."""
    mass = dict.fromkeys(GENDERS, 0.0)
    for token, prob in zip(tokens, probs, strict=True):
        gender = gender_of(token)
        if gender is not None:
            mass[gender] += prob
    return mass


def mass_from_generation(
    step_tokens: Sequence[Sequence[str]], step_probs: Sequence[Sequence[float]]
) -> GenderMass:
    """Paper-faithful mass for a greedily decoded answer (Appendix G).

    If exactly one step's argmax is a listed pronoun, use that step's top-k mass, as for masked
    models. Otherwise (none, or several) sum the top-k masses of every step and divide by the
    number of generated steps.
    """
    if not step_tokens:
        return dict.fromkeys(GENDERS, 0.0)
    per_step = [mass_top_k(t, p) for t, p in zip(step_tokens, step_probs, strict=True)]
    pronoun_steps = [i for i, tokens in enumerate(step_tokens) if gender_of(tokens[0]) is not None]
    if len(pronoun_steps) == 1:
        return per_step[pronoun_steps[0]]
    return {g: sum(m[g] for m in per_step) / len(per_step) for g in GENDERS}


SMALL_PRONOUN_MASS = 0.10
"""Below this mean share of the next-token probability, the pronouns are a small part of what
the model predicts at the slot: a note says so beside the numbers read from them."""


def pronoun_mass(samples: pd.DataFrame) -> float:
    """Mean over inputs of p_female + p_male + p_neutral: the share of the model's probability
    at the slot that the metrics read (0 to 1)."""
    return float(samples[[f"p_{g}" for g in GENDERS]].sum(axis=1).mean())


MIN_PRONOUN_MASS = 0.001
"""Below this mean share of the probability at the slot (0.1%), SIB's numbers would describe
almost nothing the model predicts there (e.g. 0.003% when a chat model's reply is read with a
space it never writes): the run refuses (``--min-pronoun-mass``; 0 goes on, and the settings
record it)."""


def check_pronoun_mass(mass: float, minimum: float, model: str, mode: str = "exact") -> None:
    """Refuse, in one line, an exact-scoring run whose pronouns hold less than ``minimum`` of the
    probability at the slot on average (:data:`MIN_PRONOUN_MASS`). Paper scoring reads the
    top-5 as the paper did, where no pronoun is a reading of its own (``--empty-mass``)."""
    if mode not in ("exact", "sampled") or not math.isfinite(mass) or mass >= minimum:
        return
    raise BiaslensError(
        f"the pronouns hold {mass:.3%} of {model}'s probability at the slot on average, below "
        f"--min-pronoun-mass {minimum:g}: numbers read from them would describe almost nothing "
        "the model predicts there; a prompt that asks for the pronoun (--prompt A, B, C), a chat "
        "model's template (--chat), --scoring paper or a masked LM may give them mass; "
        "--min-pronoun-mass 0 goes on anyway (the run's settings record it)"
    )


def small_mass_note(mass: float) -> str | None:
    """A note when the pronouns hold less than :data:`SMALL_PRONOUN_MASS` of the probability."""
    if not math.isfinite(mass) or mass >= SMALL_PRONOUN_MASS:
        return None
    return (
        f"the pronouns hold {mass:.1%} of the model's probability at the slot on average: the "
        "numbers describe a small part of what it predicts there (the rest goes to other words)"
    )


def r2_text(mean_r2: float, flat_fits: int) -> str:
    """The mean r² as a reader sees it, with the flat lines it leaves out named."""
    flat = f"{flat_fits} flat line{'s' if flat_fits != 1 else ''}"
    if not math.isfinite(mean_r2):
        return f"r² undefined ({flat})"
    return f"mean r² {mean_r2:.3f}" + (f" ({flat} left out)" if flat_fits else "")


def mean_by_w(samples: pd.DataFrame, group: Sequence[str] = ("prompt", "w_kind")) -> pd.DataFrame:
    """Per W value, the mean probability over its sentences for each gender, in percent
    (``p_female_pct`` …: the samples' ``p_female`` × 100, the unit of the paper's Fig. 3)."""
    columns = [f"p_{g}" for g in GENDERS]
    keys = [*group, "w_index", "w"]
    means = samples.groupby(keys, sort=True)[columns].mean().reset_index()
    means[columns] = means[columns] * 100.0
    return means.rename(columns={c: f"{c}_pct" for c in columns})


def method1_fits(
    samples: pd.DataFrame,
    group: Sequence[str] = ("prompt", "w_kind"),
    level: float = LEVEL,
) -> pd.DataFrame:
    """Method 1 (Section 4): regress the per-W mean probability (%) on the W index, per gender.

    One row per group x gender: slope (percentage points per W step), r, r², the OLS standard
    error and p-value as the reference code has them (independent W), and the slope's
    ``level`` interval over the crossed design of sentence frames × autocorrelated W
    values (:mod:`.intervals.trend`), with its standard error, the W residuals' AR(1) ρ and the
    sentence frames it rests on."""
    means = mean_by_w(samples, group)
    rows = []
    for key, part in means.groupby(list(group), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mask = np.ones(len(samples), dtype=bool)
        for column, value in zip(group, key, strict=True):
            mask &= (samples[column] == value).to_numpy()
        for gender in GENDERS:
            fit = fit_trend(part["w_index"].to_numpy(), part[f"p_{gender}_pct"].to_numpy(), level)
            values, w = sentence_matrix(samples[mask], f"p_{gender}")
            fit.update(trend_columns(values, w, level, "slope"))
            rows.append({**dict(zip(group, key, strict=True)), "gender": gender, **fit})
    return without_empty_notes(pd.DataFrame(rows))


def slope_summary(
    fits: pd.DataFrame,
    means: pd.DataFrame | None = None,
    group: Sequence[str] = ("prompt", "w_kind"),
    level: float = LEVEL,
    samples: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per group: female−male slope difference and mean r² of the female and male fits
    (the quantities plotted in Fig. 3(b)). With the per-W ``means``, also the standard error
    of the difference, as the reference code reports it: the OLS slope error of a line fitted
    to the per-W differences p_f − p_m (whose slope is the difference of the two slopes). With
    the ``samples``, its interval over the crossed design (:mod:`.intervals.trend`) of the
    per-sentence differences, and ``n`` (W values)."""
    rows = []
    for key, part in fits.groupby(list(group), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        by_gender = part.set_index("gender")
        row = {
            **dict(zip(group, key, strict=True)),
            "female_minus_male_slope": float(
                by_gender.loc["female", "slope"] - by_gender.loc["male", "slope"]
            ),
            # a flat line has no r²: the mean is over the defined ones, the flat ones counted
            "mean_r2": float(by_gender.loc[["female", "male"], "r2"].mean()),
            "flat_fits": int(by_gender.loc[["female", "male"], "r2"].isna().sum()),
        }
        if means is not None:
            mask = np.ones(len(means), dtype=bool)
            for column, value in zip(group, key, strict=True):
                mask &= (means[column] == value).to_numpy()
            part_means = means[mask].sort_values("w_index")
            difference = fit_trend(
                part_means["w_index"].to_numpy(),
                (part_means["p_female_pct"] - part_means["p_male_pct"]).to_numpy(),
                level,
            )
            row["female_minus_male_stderr"] = difference["slope_stderr"]
            row["n"] = difference["n"]
            row["female_minus_male_ci_low"] = difference["slope_ci_low"]
            row["female_minus_male_ci_high"] = difference["slope_ci_high"]
        if samples is not None:
            mask = np.ones(len(samples), dtype=bool)
            for column, value in zip(group, key, strict=True):
                mask &= (samples[column] == value).to_numpy()
            chosen = samples[mask].assign(_diff=samples["p_female"] - samples["p_male"])
            values, w = sentence_matrix(chosen, "_diff")
            row.update(trend_columns(values, w, level, "female_minus_male"))
            row["n"] = len(w)
        rows.append(row)
    return without_empty_notes(pd.DataFrame(rows))


# --------------------------------------------------------------------------- Method 2 (Section 5)


REFERENCE_EPS = 1e-5
"""The reference code's ``EPS`` in f / (f + m + n + EPS) (``inference.py``), where f, m and n
are masses in percent (``round(p · 100, 3)``): 1e-7 in probability."""


def normalised_female_pct(
    female: np.ndarray, male: np.ndarray, neutral: np.ndarray, eps: float = 0.0
) -> np.ndarray:
    """f / (f + m + n) · 100: the female share of the gendered and neutral pronoun mass (%).

    ``eps = 0`` (default): a sentence with no pronoun mass at all gets NaN (there is nothing to
    normalise; Method 2 reports it as "no pronoun predicted"). ``eps > 0``: the reference
    code's f / (f + m + n + eps) · 100 with the masses in percent, as it stores them, which
    makes such a share 0 (``REFERENCE_EPS``)."""
    female, male, neutral = (np.asarray(a, dtype=float) for a in (female, male, neutral))
    total = female + male + neutral
    if eps > 0:
        return female * 100.0 / (total * 100.0 + eps) * 100.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, female / total * 100.0, np.nan)


def specification_metric(
    pct_female_latest: np.ndarray, pct_female_earliest: np.ndarray
) -> np.ndarray:
    """|p_f(latest) − p_f(earliest)| in percentage points (Section 5)."""
    return np.abs(np.asarray(pct_female_latest, float) - np.asarray(pct_female_earliest, float))


def detection_rates(
    metric: np.ndarray,
    well_specified: np.ndarray,
    threshold: float = 0.5,
    level: float = LEVEL,
    clusters: np.ndarray | None = None,
) -> dict:
    """TPR, TNR and balanced accuracy of "unspecified iff metric > threshold" (Table 3).

    Positive = unspecified. TPR = share of unspecified sentences flagged; TNR = share of
    well-specified sentences not flagged; BA = (TPR + TNR) / 2. A sentence whose metric is NaN
    (no pronoun predicted at a date, so no share to compare) has no verdict: it is left out of
    both rates and counted in ``n_no_pronoun`` (``n_unspecified`` / ``n_well_specified`` count
    every sentence of the class; ``n_tpr`` / ``n_tnr`` those with a verdict, which the rates rest
    on). A rate with no sentence to compute it on is NaN. Each rate
    has its ``level`` interval over the sentences it rests on: with ``clusters`` (each
    sentence's occupation, whose sentences share the model's behaviour) of two or more, over
    the clusters (:func:`~biaslens.metrics.intervals.shares.cluster_rates`: Korn–Graubard for
    TPR and TNR, a t interval for BA, on clusters − 1 degrees of freedom); without, over
    independent sentences (Jeffreys for TPR and TNR, adjusted Wald for BA). ``n_clusters``
    says which."""
    metric = np.asarray(metric, dtype=float)
    truth_unspecified = ~np.asarray(well_specified, dtype=bool)
    judged = np.isfinite(metric)
    flagged = judged & (metric > threshold)
    cleared = judged & (metric <= threshold)
    positives = int((judged & truth_unspecified).sum())
    negatives = int((judged & ~truth_unspecified).sum())
    hits = int((flagged & truth_unspecified).sum())
    rejections = int((cleared & ~truth_unspecified).sum())
    tpr = hits / positives if positives else float("nan")
    tnr = rejections / negatives if negatives else float("nan")
    groups = 0 if clusters is None else len(pd.unique(np.asarray(clusters)))
    if groups >= 2:
        from biaslens.metrics.intervals.shares import cluster_rates

        judged_positive, judged_negative = judged & truth_unspecified, judged & ~truth_unspecified
        found = cluster_rates(
            flagged & truth_unspecified,
            judged_positive,
            cleared & ~truth_unspecified,
            judged_negative,
            np.asarray(clusters),
            level,
        )
        (tpr_low, tpr_high), (tnr_low, tnr_high), (ba_low, ba_high) = (
            (found[k].low, found[k].high) for k in ("tpr", "tnr", "balanced_accuracy")
        )
    else:
        tpr_low, tpr_high = share_interval(hits, positives, level)
        tnr_low, tnr_high = share_interval(rejections, negatives, level)
        ba_low, ba_high = mean_of_two_shares(hits, positives, rejections, negatives, level)
    return {
        "tpr": tpr,
        "tpr_ci_low": tpr_low,
        "tpr_ci_high": tpr_high,
        "tnr": tnr,
        "tnr_ci_low": tnr_low,
        "tnr_ci_high": tnr_high,
        "balanced_accuracy": (tpr + tnr) / 2,
        "balanced_accuracy_ci_low": ba_low,
        "balanced_accuracy_ci_high": ba_high,
        "n_tpr": positives,
        "n_tnr": negatives,
        "n_unspecified": int(truth_unspecified.sum()),
        "n_well_specified": int((~truth_unspecified).sum()),
        "n_no_pronoun": int((~judged).sum()),
        "n_clusters": groups if groups >= 2 else None,
        "threshold": threshold,
    }


def method2_from_shares(
    table: pd.DataFrame,
    threshold: float = 0.5,
    earliest: int | None = None,
    latest: int | None = None,
    group: Sequence[str] = ("model", "prompt", "set"),
    level: float = LEVEL,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Method 2 from stored female shares (``pct_female``, %, one row per sentence and date).

    Per sentence: the metric |p_f(latest) − p_f(earliest)| (the first and last date stored,
    unless given) and the verdict; per ``group``: TPR, TNR and balanced accuracy."""
    keys = [*group, "id"]
    dated = table.dropna(subset=["date"])
    first = dated.groupby(keys)["date"].transform("min") if earliest is None else earliest
    last = dated.groupby(keys)["date"].transform("max") if latest is None else latest
    ends = dated.assign(
        end=np.where(
            dated["date"] == first, "earliest", np.where(dated["date"] == last, "latest", "")
        )
    )
    ends = ends[ends["end"] != ""]
    wide = ends.pivot_table(index=keys, columns="end", values="pct_female", aggfunc="mean")
    for end in ("earliest", "latest"):
        if end not in wide:
            wide[end] = np.nan
    extra = [
        c
        for c in ("occupation", "participant", "answer", "sentence", "well_specified")
        if c in table
    ]
    sentences = table.drop_duplicates(keys).set_index(keys)[extra]
    per_sentence = sentences.join(
        wide.rename(columns={"earliest": "pct_female_earliest", "latest": "pct_female_latest"})
    ).reset_index()
    per_sentence["metric"] = specification_metric(
        per_sentence["pct_female_latest"], per_sentence["pct_female_earliest"]
    )
    per_sentence["predicted_unspecified"] = per_sentence["metric"] > threshold
    rates = pd.DataFrame(
        [
            {
                **dict(zip(group, key if isinstance(key, tuple) else (key,), strict=True)),
                **detection_rates(
                    part["metric"],
                    part["well_specified"],
                    threshold,
                    level,
                    clusters=part.get("occupation"),
                ),
            }
            for key, part in per_sentence.groupby(list(group), sort=True)
        ]
    )
    return per_sentence, rates
