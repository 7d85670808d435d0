"""The files of sib-detect and sib-toy runs and their columns, and the columns sib-mgc's files
share with them (the results reference, :mod:`biaslens.store.output_files`)."""

from __future__ import annotations

from biaslens.store.output_files import OutputFile

PRONOUN_SAMPLE = ("p_female", "p_male", "p_neutral")
SAMPLED = ("k_female", "k_male", "k_neutral", "samples", "replies")
"""The columns of sampled scoring (``--scoring sampled``), where the p_* are frequencies."""
SAMPLED_MEANINGS = {
    **{
        f"k_{g}": f"sampled scoring: replies whose first word is a {g} pronoun"
        for g in ("female", "male", "neutral")
    },
    "samples": "sampled scoring: replies drawn for the input (K)",
    "replies": "sampled scoring: the replies, in the order drawn",
}


_SHARES = {
    f"{kind}_{g}_{end}": (
        f"probability of the {g} pronouns at the {end} date (0 to 1)"
        if kind == "p"
        else f"the {g} pronouns' share of the pronoun mass at the {end} date, in percent"
    )
    for kind in ("p", "pct")
    for g in ("female", "male", "neutral")
    for end in ("earliest", "latest")
}
DETECT = (
    OutputFile(
        "samples.parquet",
        "one row per sentence and date: the pronoun masses at the slot",
        ("set", "id", "end", "date", "input", *PRONOUN_SAMPLE),
        optional=("generation", *SAMPLED),
        meanings={
            **SAMPLED_MEANINGS,
            "end": "earliest or latest date of the grid (sweep: every date of --sweep)",
            "date": "the injected date",
        },
    ),
    OutputFile(
        "sentences.parquet",
        "one row per sentence: the masses at both ends, the metric and the verdict (Table 2)",
        (
            "set",
            "id",
            "occupation",
            "participant",
            "answer",
            "sentence",
            "well_specified",
            "bergsma_pct_female",
            "bls_pct_female",
            "p_female_earliest",
            "p_female_latest",
            "p_male_earliest",
            "p_male_latest",
            "p_neutral_earliest",
            "p_neutral_latest",
            "pct_female_earliest",
            "pct_female_latest",
            "metric",
            "no_pronoun",
            "predicted_unspecified",
            "verdict",
        ),
        optional=(
            *(k for k in _SHARES if k.startswith("pct_") and "female" not in k),
            "rated_metric",
            "metric_ci_low",
            "metric_ci_high",
            "k_female_earliest",
            "k_female_latest",
            "k_pronoun_earliest",
            "k_pronoun_latest",
        ),
        meanings={
            **_SHARES,
            "rated_metric": "sampled scoring: the bound of |Δ| the verdict rests on (empty: "
            "undecided)",
            "metric_ci_low": "sampled scoring: lower bound of |Δ| (Newcombe, --ci-level)",
            "metric_ci_high": "sampled scoring: upper bound of |Δ|",
            **{
                f"k_{what}_{end}": f"sampled scoring: replies beginning with a {label} at the "
                f"{end} date(s)"
                for what, label in (("female", "female pronoun"), ("pronoun", "listed pronoun"))
                for end in ("earliest", "latest")
            },
            "occupation": "the Winogender occupation",
            "participant": "the Winogender participant",
            "answer": "the referent of the pronoun (occupation, participant, or someone)",
            "well_specified": "whether the sentence fixes the pronoun's gender (ground truth)",
            "bergsma_pct_female": "Bergsma's female share of the occupation, in percent",
            "bls_pct_female": "the US BLS female share of the occupation, in percent",
            "metric": "|female share at the latest − at the earliest date|, in percentage points",
            "no_pronoun": "no pronoun mass at one of the dates (no verdict)",
            "predicted_unspecified": "metric > --threshold",
            "verdict": "unspecified, well-specified, no pronoun or (sampled scoring) undecided",
        },
    ),
    OutputFile(
        "rates.csv",
        "per set: TPR, TNR and balanced accuracy of the detector with their intervals (Table 3)",
        (
            "set",
            "tpr",
            "tpr_ci_low",
            "tpr_ci_high",
            "tnr",
            "tnr_ci_low",
            "tnr_ci_high",
            "balanced_accuracy",
            "balanced_accuracy_ci_low",
            "balanced_accuracy_ci_high",
            "n_tpr",
            "n_tnr",
            "n_unspecified",
            "n_well_specified",
            "n_no_pronoun",
            "threshold",
        ),
        optional=("n_undecided", "samples", "n_clusters"),
        meanings={
            **{
                f"{m}_ci_{side}": f"{side} bound of the {what} interval at --ci-level, over "
                "occupations as clusters"
                for m, what in (
                    ("tpr", "Korn–Graubard"),
                    ("tnr", "Korn–Graubard"),
                    ("balanced_accuracy", "t"),
                )
                for side in ("low", "high")
            },
            "n_clusters": "occupations the intervals count as clusters (empty: sentences "
            "taken as independent)",
            "n_tpr": "underspecified sentences with a verdict (TPR's n)",
            "n_tnr": "well-specified sentences with a verdict (TNR's n)",
            "n_unspecified": "underspecified sentences in the set",
            "n_well_specified": "well-specified sentences in the set",
            "n_no_pronoun": "sentences without a verdict (no pronoun mass at a date)",
            "n_undecided": "sampled scoring: sentences the sampling error leaves undecided",
            "threshold": "the metric's threshold, in percentage points",
            "set": "the sentence set: extended Winogender (App. H) or the Simplified set "
            "(App. H.1)",
        },
    ),
    OutputFile(
        "date_sweep.csv",
        "per swept sentence and date: the pronoun shares in percent (Fig. 4)",
        (
            "set",
            "id",
            "date",
            "pct_female",
            "pct_male",
            "pct_neutral",
            "sentence",
            "well_specified",
        ),
        meanings={
            **{
                f"pct_{g}": f"the {g} pronouns' share of the pronoun mass, in percent"
                for g in ("female", "male", "neutral")
            },
            "date": "the injected date",
            "well_specified": "whether the sentence fixes the pronoun's gender",
        },
        when="--sweep",
    ),
    OutputFile(
        "known_models.csv",
        "per known model of the SIB paper and rate: its value on this run's own extended "
        "sentences, from the authors' released outputs, and this run's rate − it, paired over "
        "the sentences both judged",
        (
            "known_model",
            "known_as",
            "prompt",
            "set",
            "metric",
            "value",
            "ci_low",
            "ci_high",
            "n",
            "occupations",
            "ci_level",
            "difference",
            "difference_ci_low",
            "difference_ci_high",
            "difference_note",
            "paired_over",
            "source",
        ),
        meanings={
            "known_model": "the known model, as the released files name it",
            "known_as": "the name the paper and readers know it by",
            "prompt": "the instruction prompt of its files (P3: prompt A; empty: none)",
            "metric": "tpr, tnr or balanced_accuracy",
            "value": "the known model's rate on the sentences both judged",
            "ci_low": "its interval's lower bound, over occupations as clusters",
            "ci_high": "its interval's upper bound",
            "n": "sentences both judged",
            "occupations": "occupations those sentences come from",
            "ci_level": "the intervals' level",
            "difference": "this run's rate − the known model's on the same sentences",
            "difference_ci_low": "the paired difference's interval, lower bound (over occupations)",
            "difference_ci_high": "the paired difference's interval, upper bound",
            "difference_note": "why there is no paired interval, where there is none",
            "paired_over": "the sentences and occupations the paired difference rests on",
            "source": "the released files, with the repository and commit",
        },
        when="the released Method 2 outputs are in the data folder",
    ),
    OutputFile("plots/detector_*.png", "per set: the metric of each sentence (Fig. 5)"),
    OutputFile("plots/date_sweep_*.png", "per swept sentence: the shares per date", when="--sweep"),
)

TOY = (
    OutputFile(
        "samples.parquet",
        "the toy structural causal model's draws (Section 3)",
        ("task", "gamma", "G", "W", "S", "X", "Y"),
        meanings={
            "task": "the task whose selection is simulated",
            "gamma": "γ, the strength of the selection",
            "G": "gender (the latent cause)",
            "W": "the spurious feature (e.g. a date)",
            "S": "selected into the training data (1) or not (0)",
            "X": "the input feature",
            "Y": "the label",
        },
    ),
    OutputFile(
        "toy_summary.csv",
        "per task and γ: correlations before and after selection",
        (
            "task",
            "gamma",
            "n",
            "selected",
            "selected_fraction",
            "corr_WG_all",
            "corr_WG_selected",
            "corr_XY_all",
            "corr_XY_selected",
        ),
        meanings={
            "task": "well-specified (γ = 1: G enters X and X enters Y) or unspecified (γ = 0: X "
            "carries W but not G, and Y does not depend on X) task of the SCM (App. B)",
            "gamma": "γ, the strength of the selection",
            "n": "draws",
            "selected": "draws the selection S := (W + G + N(0,1)) > 2α keeps",
            "selected_fraction": "selected / n",
            "corr_WG_all": "corr(W, G) over every draw",
            "corr_WG_selected": "corr(W, G) over the selected draws",
            "corr_XY_all": "corr(X, Y) over every draw",
            "corr_XY_selected": "corr(X, Y) over the selected draws",
        },
    ),
    OutputFile("plots/*.png", "the toy model's correlations"),
)
