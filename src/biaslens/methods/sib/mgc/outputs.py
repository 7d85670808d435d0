"""The files of sib-mgc runs and their columns (the results reference, ``biaslens schema`` and
the run's own checks read these declarations)."""

from __future__ import annotations

from biaslens.methods.sib.outputs import PRONOUN_SAMPLE, SAMPLED, SAMPLED_MEANINGS
from biaslens.store.output_files import OutputFile

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
            *PRONOUN_SAMPLE,
        ),
        optional=("generation", "top_tokens", "top_probs", *SAMPLED),
        meanings={
            **SAMPLED_MEANINGS,
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
MGC = (
    *MGC,
    *(
        OutputFile(
            f"paper_{f.name}",
            f"--paper-readout: {f.what}, read as the SIB reference code did",
            f.columns + (("readout",) if f.name.endswith(".csv") else ()),
            optional=f.optional + (("readout_caution",) if f.name.endswith(".csv") else ()),
            meanings={
                **f.meanings,
                "readout": "the reference code's readout: the pronouns among the top 5 at the "
                "slot, or greedy generation",
                "readout_caution": "where the readout never named a pronoun the line rests "
                "on: the line is flat by construction (no verdict)",
            },
            when="--paper-readout (the audit's quick and standard sizes)",
        )
        for f in MGC
        if f.name in ("samples.parquet", "fits.csv", "slopes.csv")
    ),
)
