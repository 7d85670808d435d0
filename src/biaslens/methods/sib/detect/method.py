"""SIB Method 2: the task-specification detector (paper Section 5, Appendix H, Tables 2-3).

Each sentence gets ``In {DATE}, `` prepended (its first letter lower-cased) for the earliest and
latest date (default 1901 and 2016; the reference code writes ``In DATE: ``, we keep the MGC
form). The specification metric is |p_f(latest) − p_f(earliest)| in percentage points of the
normalised female share f/(f+m+n)·100; a sentence is classified unspecified when it exceeds
the threshold (default 0.5). Female, male and neutral masses are stored separately for every
sentence and date. Masked LMs fill the slot; causal / seq2seq LMs get prompt A.

With ``average_n`` > 1 each end is the mean of the per-date shares of its N dates, as the
reference's ``get_uncertainty_metric`` averages its stored (already normalised) shares.

A sentence without any pronoun mass at a date (f + m + n = 0: in top-5 scoring, no listed word
among the top 5) has no share there. ``empty_mass="exclude"`` (default) reports it as "no
pronoun predicted" and leaves it out of TPR and TNR, with a count; ``"zero"`` (``--preset
paper``) divides by f + m + n + 1e-5, the masses in percent, as the reference code does, which
makes the share 0 and the metric possibly 0 (well-specified).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.common.numbers import readable, readable_interval
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole, AuditStep, LmEvalTask
from biaslens.framework.questions import Question
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.methods.sib.data.pronouns import GENDERS
from biaslens.methods.sib.detect.known_paired import known_models_part
from biaslens.methods.sib.detect.paired import paired_detector
from biaslens.methods.sib.detect.references import references_for
from biaslens.methods.sib.detect.sampled import sampled_verdicts, undecided_counts
from biaslens.methods.sib.detect.sentences import (
    build_sentences,
    date_groups,
    expand_dates,
    sweep_rows,
)
from biaslens.methods.sib.detect.settings import SHOW_OCCUPATION, DetectSettings, make_settings
from biaslens.methods.sib.detect.stored import FROM_STORED
from biaslens.methods.sib.metrics.measures import BALANCED_ACCURACY, TNR, TPR
from biaslens.methods.sib.metrics.sib import (
    REFERENCE_EPS,
    check_pronoun_mass,
    detection_rates,
    normalised_female_pct,
    pronoun_mass,
    small_mass_note,
    specification_metric,
)
from biaslens.methods.sib.outputs import DETECT as SIB_FILES_DETECT
from biaslens.methods.sib.scoring import pronouns as pronoun_scoring
from biaslens.metrics.intervals import LEVEL, SMALL_N
from biaslens.models.base import LM
from biaslens.progress import note
from biaslens.store.run import dataset_hash

METHOD = "sib-detect"


def sentence_metrics(
    sentences: pd.DataFrame,
    scored: pd.DataFrame,
    threshold: float,
    empty_mass: str = "exclude",
    level: float = LEVEL,
) -> pd.DataFrame:
    """Per sentence: mean female/male/neutral mass at each end, p_f (%) at each end (the mean
    of the per-date shares), the metric and the verdict."""
    eps = REFERENCE_EPS if empty_mass == "zero" else 0.0
    scored = scored.assign(
        pct_female=normalised_female_pct(
            scored["p_female"], scored["p_male"], scored["p_neutral"], eps
        )
    )
    columns = [*(f"p_{g}" for g in GENDERS), "pct_female"]
    # skipna=False: an end with a date without pronoun mass has no share (exclude mode)
    ends = scored.groupby(["set", "id", "end"])[columns].agg(lambda v: v.mean(skipna=False))
    ends = ends.unstack("end")
    ends.columns = [f"{col}_{end}" for col, end in ends.columns]
    table = sentences.merge(ends.reset_index(), on=["set", "id"])
    table["metric"] = specification_metric(table["pct_female_latest"], table["pct_female_earliest"])
    table["no_pronoun"] = table["metric"].isna()
    table["predicted_unspecified"] = table["metric"] > threshold
    table["rated_metric"] = table["metric"]
    if "k_female" in scored:
        table = sampled_verdicts(table, scored, threshold, level)
    table["verdict"] = np.select(
        [table["no_pronoun"], table["rated_metric"].isna(), table["predicted_unspecified"]],
        ["no pronoun predicted", "undecided (sampling)", "unspecified"],
        "well-specified",
    )
    return table if "k_female" in scored else table.drop(columns="rated_metric")


def prepare(settings: DetectSettings, lm: LM) -> DetectSettings:
    mode = pronoun_scoring.scoring_for(lm, settings.mode)
    pronoun_scoring.check_pronoun_model(lm, mode)
    return settings.model_copy(update={"mode": mode})


def run(ctx: RunContext, settings: DetectSettings) -> MethodOutput:
    """Method 2 on every sentence of the chosen sets; TPR/TNR/BA per set."""
    from biaslens.methods.sib.plots import detector_figure

    sentences = build_sentences(settings, ctx.data_dir)
    rows = expand_dates(sentences, settings, ctx.lm.kind)
    if settings.sweep:
        rows = pd.concat([rows, sweep_rows(sentences, settings, ctx.lm.kind)], ignore_index=True)
    if settings.limit:
        per_set = ", ".join(
            f"{n} {s}" for s, n in sentences["set"].value_counts(sort=False).items()
        )
        note(
            ctx.progress,
            f"--limit {settings.limit}: the first {settings.limit} occupations → "
            f"{len(sentences)} sentences ({per_set}), {len(rows):,} prompts",
        )
    scored = pronoun_scoring.score_rows(
        ctx.lm,
        rows,
        settings.mode,
        ctx.progress,
        label="Method 2",
        max_new_tokens=settings.generation_tokens,
        samples=settings.samples,
    )
    check_pronoun_mass(
        pronoun_mass(scored), settings.min_pronoun_mass, ctx.lm.identity.name, settings.mode
    )
    sweep = scored[scored["end"] == "sweep"]
    scored = scored[scored["end"] != "sweep"]
    table = sentence_metrics(
        sentences, scored, settings.threshold, settings.empty_mass, settings.ci_level
    )
    rates = pd.DataFrame(
        [
            {
                "set": name,
                **detection_rates(
                    part.get("rated_metric", part["metric"]),
                    part["well_specified"],
                    settings.threshold,
                    settings.ci_level,
                    part["occupation"],
                ),
                **undecided_counts(part),
            }
            for name, part in table.groupby("set", sort=False)
        ]
    )
    if settings.mode == "sampled":  # every rate rests on verdicts read from K replies
        rates["samples"] = settings.samples
    figures = {
        f"detector_{name}": detector_figure(
            part, settings.threshold, f"{ctx.lm.identity.name}, {name} Winogender"
        )
        for name, part in table.groupby("set", sort=False)
    }
    tables = {"rates": rates}
    known, known_metrics, known_notes = known_models_part(
        table, ctx.data_dir, settings.threshold, settings.ci_level
    )
    tables.update(known)
    if len(sweep):
        from biaslens.methods.sib.plots import date_sweep_figure

        curve = date_sweep(sweep, sentences)
        tables["date_sweep"] = curve
        for sentence_id, part in curve.groupby("id", sort=False):
            figures[f"date_sweep_{sentence_id}"] = date_sweep_figure(
                part, f"{ctx.lm.identity.name}: {part['sentence'].iloc[0]}"
            )
    notes = (
        [
            f"{row.set}: {row.n_no_pronoun} sentence(s) with no pronoun predicted at a date "
            "(no share to compare) are left out of TPR/TNR"
            for row in rates.itertuples()
            if row.n_no_pronoun
        ]
        + small_sample_notes(rates, settings.ci_level)
        + known_notes
    )
    mass = pronoun_mass(scored)
    said = [
        small_mass_note(mass),
        pronoun_scoring.sampled_note(settings.mode, settings.samples, scored=scored),
    ]
    notes += [n for n in said if n]
    return MethodOutput(
        metrics={
            "rates": rates.to_dict(orient="records"),
            "num_sentences": len(table),
            "mean_pronoun_mass": mass,
            **known_metrics,
        },
        notes=notes,
        tables=tables,
        samples={
            "samples": scored.drop(columns=["top_tokens", "top_probs"], errors="ignore"),
            "sentences": table,
        },
        figures=figures,
        provenance={
            "dataset": {
                "name": "winogender",
                "sha256": dataset_hash(sentences),
                "dates": {k: list(v) for k, v in date_groups(settings).items()},
            }
        },
    )


def date_sweep(sweep: pd.DataFrame, sentences: pd.DataFrame) -> pd.DataFrame:
    """Per swept sentence and date: the female, male and neutral shares (%) (Fig. 4)."""
    shares = {
        f"pct_{g}": normalised_female_pct(
            sweep[f"p_{g}"], *(sweep[f"p_{o}"] for o in GENDERS if o != g)
        )
        for g in GENDERS
    }
    curve = sweep[["set", "id", "date"]].assign(**shares)
    return curve.merge(sentences[["set", "id", "sentence", "well_specified"]], on=["set", "id"])


def _rates_view(rates: pd.DataFrame) -> pd.DataFrame:
    """TPR, TNR and BA, each with its interval (``--ci-level``) and the sentences it rests on."""
    view = rates[["set"]].copy()
    for name, column, n in (
        ("TPR", "tpr", "n_tpr"),
        ("TNR", "tnr", "n_tnr"),
        ("BA", "balanced_accuracy", None),
    ):
        view[name] = [
            f"{readable(v)} {readable_interval(lo, hi)}" if np.isfinite(v) else "—"
            for v, lo, hi in zip(
                rates[column], rates[f"{column}_ci_low"], rates[f"{column}_ci_high"], strict=True
            )
        ]
        if n is not None:
            view[f"n ({name})"] = rates[n]
    view["no pronoun"] = rates["n_no_pronoun"]
    if "n_undecided" in rates:
        view["undecided"] = rates["n_undecided"]
    return view


def small_sample_notes(rates: pd.DataFrame, level: float = LEVEL) -> list[str]:
    """A note for each set whose rates rest on few sentences (their intervals are wide)."""
    return [
        f"{row.set}: TPR rests on {row.n_tpr} and TNR on {row.n_tnr} sentence(s); with fewer "
        f"than {SMALL_N} their {level:.0%} intervals (shown in brackets) are wide: a larger "
        "--limit narrows them"
        for row in rates.itertuples()
        if min(row.n_tpr, row.n_tnr) < SMALL_N
    ]


def occupation_views(result, values: dict) -> list:
    """The per-sentence table (Table 2) of each occupation asked for by --show-occupation."""
    sentences = result["sentences"]
    views = []
    for occupation in values.get("show_occupation") or ():
        rows = sentences[sentences["occupation"] == occupation]
        if rows.empty:
            raise BiaslensError(f"--show-occupation: no sentences for {occupation!r}")
        table = rows.assign(WS=rows["well_specified"])  # verdict: as sentences.parquet has it
        views.append(
            (
                f"{occupation}: specification metric per sentence (pp)",
                table,
                ["set", "sentence", "WS", "metric", "verdict"],
            )
        )
    return views


DETECTOR_SEPARATES = Question(
    "detector-separates",
    "How well does the pronoun detector tell under- from well-specified sentences ({set})?",
    table="rates",
    metric="balanced_accuracy",
    target=None,
    target_words="reported: 1 is a perfect detector, 0.5 chance",
    source="SIB, Section 5 (Method 2, Table 3)",
    per=("set",),
)
"""SIB Method 2's question: a detector's quality, reported with its interval (no value of it
reads as "no bias")."""


SPEC = register(
    MethodSpec(
        audit=AuditRole(  # quick: the first 10 of the 60 occupations of both sets
            sizes={
                "quick": (AuditStep({"limit": 10}),),
                "standard": (AuditStep(),),
                "paper": (AuditStep(preset="paper"),),
            },
            questions=(DETECTOR_SEPARATES,),
            references=references_for,
            paired=paired_detector,
        ),
        outputs=SIB_FILES_DETECT,
        name=METHOD,
        commands=(FROM_STORED,),
        lm_eval=LmEvalTask("biaslens.methods.sib.lm_eval_tasks:detect_task"),
        title="SIB Method 2: task-specification detector on extended Winogender and the "
        "Simplified set",
        settings=DetectSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        folder_fields=("mode",),
        description=(
            "Writes sentences.parquet (per sentence: female/male/neutral mass "
            "at each date, p_f, metric, verdict, ground truth), rates.csv (TPR, TNR, balanced "
            "accuracy), samples.parquet, summary.json and plots/detector_*.png (per occupation, "
            "ordered by BLS % female)."
        ),
        display_options=(SHOW_OCCUPATION,),
        reads_data=True,
        extra_views=occupation_views,
        presets={
            "paper": {
                "mode": "paper",
                "date_format": "colon",
                "sets": ("extended", "simplified-reference"),
                "empty_mass": "zero",
                "min_pronoun_mass": 0.0,  # the paper reports every model's numbers
            }
        },
        headlines=(
            Headline(
                "rates",
                "Detector TPR / TNR / balanced accuracy (Table 3)",
                view=_rates_view,
                measures=(TPR, TNR, BALANCED_ACCURACY),
                labels=("set",),
                legend={
                    "TPR": "the TPR (below) with its interval at --ci-level",
                    "TNR": "the TNR (below) with its interval at --ci-level",
                    "n (TPR)": "underspecified sentences the TPR rests on",
                    "n (TNR)": "well-specified sentences the TNR rests on",
                    "BA": "balanced accuracy (below) with its interval",
                    "no pronoun": "sentences with no pronoun predicted at a date: no verdict, "
                    "left out of TPR and TNR",
                    "undecided": "sampled scoring: sentences whose interval of Δ holds the "
                    "threshold, so that the sampling error leaves them without a verdict (left "
                    "out of TPR and TNR)",
                },
            ),
        ),
    )
)
