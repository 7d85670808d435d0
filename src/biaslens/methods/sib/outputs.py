"""The files of sib-mgc, sib-detect and sib-toy runs and their columns (the results reference,
:mod:`biaslens.store.output_files`)."""

from __future__ import annotations

from biaslens.store.output_files import OutputFile

_PRONOUN_SAMPLE = ("p_female", "p_male", "p_neutral")
_SAMPLED = ("k_female", "k_male", "k_neutral", "samples", "replies")
"""The columns of sampled scoring (``--scoring sampled``), where the p_* are frequencies."""
_SAMPLED_MEANINGS = {
    **{
        f"k_{g}": f"sampled scoring: replies whose first word is a {g} pronoun"
        for g in ("female", "male", "neutral")
    },
    "samples": "sampled scoring: replies drawn for the input (K)",
    "replies": "sampled scoring: the replies, in the order drawn",
}

MGC = (
    OutputFile(
        "samples.parquet",
        "one row per MGC input (sentence × prompt × W value): the pronoun masses at the slot",
        (
            "id",
            "prompt",
            "w_kind",
            "w",
            "w_index",
            "verb",
            "life_stage",
            "sentence",
            "input",
            *_PRONOUN_SAMPLE,
        ),
        optional=("generation", "top_tokens", "top_probs", *_SAMPLED),
        meanings={
            **_SAMPLED_MEANINGS,
            "id": "the MGC sentence's id",
            "verb": "the sentence's verb (MGC's mental, physical or emotional verbs)",
            "life_stage": "the life stage the sentence's subject is in",
        },
    ),
    OutputFile(
        "means_by_w.csv",
        "per prompt, W kind and W value: the mean pronoun probability over sentences, in percent",
        ("prompt", "w_kind", "w_index", "w", "p_female_pct", "p_male_pct", "p_neutral_pct"),
        meanings={
            f"p_{g}_pct": f"mean probability of the {g} pronouns, in percent (0 to 100)"
            for g in ("female", "male", "neutral")
        },
    ),
    OutputFile(
        "fits.csv",
        "Method 1 (Section 4): per prompt, W kind and gender, the least-squares line of the mean "
        "probability (%) on the W index",
        (
            "prompt",
            "w_kind",
            "gender",
            "slope",
            "intercept",
            "r",
            "r2",
            "p_value",
            "slope_stderr",
            "slope_ci_low",
            "slope_ci_high",
            "n",
        ),
        optional=("slope_ci_note", "slope_se", "slope_rho", "sentences", "samples"),
        meanings={
            "slope": "percentage points per W step (0: no trend with W)",
            "intercept": "the line's value at W index 0, in percent",
            "r": "Pearson r of the per-W mean probability with W's position (NaN where the "
            "probability does not vary)",
            "r2": "r² (NaN where the probability does not vary)",
            "p_value": "OLS two-sided p-value of slope = 0, W values taken as independent (as "
            "the reference code; NaN where undefined): the interval is the one to read",
            "slope_stderr": "the slope's OLS standard error (pp per W step), W values taken as "
            "independent, as the reference code reports it",
            "slope_ci_low": "lower bound of the slope's interval at --ci-level: AR(1) "
            "bootstrap-t over W, sentence frames as draws",
            "slope_ci_high": "upper bound of that interval",
            "slope_ci_note": "why there is no interval (empty: there is one)",
            "slope_se": "the slope's standard error behind that interval",
            "slope_rho": "the W residuals' AR(1) autocorrelation (median-unbiased)",
            "sentences": "sentence frames (verb × life stage), each read at every W value, that "
            "the slope averages over",
            "n": "W values the line is fitted to",
        },
    ),
    OutputFile(
        "slopes.csv",
        "per prompt and W kind: female − male slope difference and mean r² (Fig. 3(b))",
        (
            "prompt",
            "w_kind",
            "female_minus_male_slope",
            "mean_r2",
            "flat_fits",
            "female_minus_male_stderr",
            "female_minus_male_ci_low",
            "female_minus_male_ci_high",
        ),
        optional=(
            "n",
            "female_minus_male_ci_note",
            "female_minus_male_se",
            "female_minus_male_rho",
            "sentences",
            "samples",
        ),
        meanings={
            "female_minus_male_slope": "female slope − male slope (pp per W step; 0: no bias)",
            "mean_r2": "mean r² of the female and male lines whose r² is defined (empty when "
            "both are flat)",
            "flat_fits": "how many of the two lines are flat (no variation: r² undefined)",
            "female_minus_male_stderr": "OLS standard error of the difference (the slope of the "
            "per-W differences p_f − p_m, W values as independent, as the reference code)",
            "female_minus_male_ci_low": "lower bound of its interval at --ci-level: AR(1) "
            "bootstrap-t over W, sentence frames as draws",
            "female_minus_male_ci_high": "upper bound of that interval",
            "female_minus_male_ci_note": "why there is no interval (empty: there is one)",
            "female_minus_male_se": "the standard error behind that interval",
            "female_minus_male_rho": "the W residuals' AR(1) autocorrelation (median-unbiased)",
            "sentences": "sentence frames the slope averages over",
            "n": "W values the line is fitted to",
        },
    ),
    OutputFile(
        "mgc_reference.csv",
        "per known model of the SIB paper, prompt, W kind and slope: its value on this run's own "
        "sentence frames, from the authors' released outputs, and this run's model − it, paired "
        "over the frames × W values both read",
        (
            "known_model",
            "prompt",
            "w_kind",
            "metric",
            "gender",
            "value",
            "ci_low",
            "ci_high",
            "n",
            "sentences",
            "frames",
            "ci_level",
            "source",
        ),
        optional=(
            "difference",
            "difference_ci_low",
            "difference_ci_high",
            "difference_note",
            "paired_over",
        ),
        meanings={
            "known_model": "the known model, by its hub name (the card adds the paper's name)",
            "metric": "slope (one gender's) or female_minus_male_slope",
            "value": "the known model's slope on the run's frames (pp per W step)",
            "ci_low": "its trend interval's lower bound",
            "ci_high": "its trend interval's upper bound",
            "n": "W values the line is fitted to",
            "sentences": "sentence frames the slope rests on",
            "frames": "the run's frames the known model's released outputs hold",
            "ci_level": "the intervals' level",
            "source": "the released file(s) the values come from",
            "difference": "this run's slope − the known model's, paired: the slope of their "
            "per-(frame, W) difference",
            "difference_ci_low": "the paired difference's trend interval, lower bound",
            "difference_ci_high": "its upper bound",
            "difference_note": "why the difference or its interval is missing, where it is",
            "paired_over": "the W values × frames the paired difference rests on",
        },
        when="the SIB authors' released outputs in the data folder (biaslens datasets download "
        "sib-outputs)",
    ),
    OutputFile("plots/mgc_*.png", "per W kind: the mean probabilities per W with fitted lines"),
)

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
        ("set", "id", "end", "date", "input", *_PRONOUN_SAMPLE),
        optional=("generation", *_SAMPLED),
        meanings={
            **_SAMPLED_MEANINGS,
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
            "tpr": "share of underspecified sentences flagged (0 to 1)",
            "tnr": "share of well-specified sentences cleared (0 to 1)",
            "balanced_accuracy": "(TPR + TNR) / 2",
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
