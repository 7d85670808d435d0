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
paper``) divides by f + m + n + 1e-5 as the reference code does, which makes the share 0 and
the metric possibly 0 (well-specified).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from biaslens.data import mgc, sources, winogender
from biaslens.data.mgc import inject_date
from biaslens.data.pronouns import GENDERS
from biaslens.errors import BiaslensError
from biaslens.experiments.registry import (
    Headline,
    MethodOutput,
    MethodSpec,
    RunContext,
    register,
    safe_name,
)
from biaslens.experiments.settings import MethodSettings, validated
from biaslens.metrics.sib import (
    REFERENCE_EPS,
    detection_rates,
    normalised_female_pct,
    specification_metric,
)
from biaslens.models.base import LM, ModelKind
from biaslens.scoring.pronouns import check_pronoun_model, score_rows
from biaslens.store.run import dataset_hash

METHOD = "sib-detect"
SETS = ("extended", "simplified")
SetName = Literal["extended", "simplified", "simplified-reference"]
"""``simplified``: biaslens's rewrite (51 occupations, in the package); ``simplified-reference``:
the reference repository's own 144 sentences (``biaslens datasets download sib-simplified``),
the set the paper's Table 3 was computed on."""


class DetectSettings(MethodSettings):
    """Settings that decide a Method 2 run's results."""

    model: str = "default"
    sets: tuple[SetName, ...] = SETS
    mode: Literal["exact", "paper"] = "exact"
    date_format: Literal["comma", "colon"] = Field(
        default="comma", description="In {DATE}, sentence (comma) or In {DATE}: Sentence (colon)"
    )
    generation_tokens: int = Field(default=20, ge=1, le=256, description="paper-mode greedy steps")
    sweep: tuple[str, ...] = Field(
        default=(), description="sentence ids scored on the full date grid (Fig. 4)"
    )
    earliest: int = Field(default=1901, ge=0, le=9999)
    latest: int = Field(default=2016, ge=0, le=9999)
    average_n: int = Field(default=1, ge=1, description="average the first/last N grid dates")
    grid_size: int = Field(default=30, ge=2, description="date grid between earliest and latest")
    threshold: float = Field(default=0.5, ge=0, le=100)
    empty_mass: Literal["exclude", "zero"] = Field(
        default="exclude",
        description="sentences with no pronoun mass at a date: excluded from TPR/TNR and "
        "counted (exclude), or share 0 via the reference's f/(f+m+n+1e-5) (zero)",
    )
    limit: int | None = Field(default=None, ge=1, description="occupations (first N, sorted)")

    @field_validator("latest")
    @classmethod
    def _ordered(cls, latest, info):
        earliest = info.data.get("earliest")
        if earliest is not None and latest <= earliest:
            raise ValueError(f"latest date must be after the earliest ({earliest})")
        return latest


def make_settings(**values) -> DetectSettings:
    settings = validated(DetectSettings, values)
    if 2 * settings.average_n > settings.grid_size:
        raise BiaslensError(
            f"invalid average_n: 2 x {settings.average_n} dates exceed the grid of "
            f"{settings.grid_size}"
        )
    return settings


def date_groups(settings: DetectSettings) -> dict[str, tuple[int, ...]]:
    """The dates averaged for the 'earliest' and 'latest' ends (1901 and 2016 by default)."""
    if settings.average_n == 1:
        return {"earliest": (settings.earliest,), "latest": (settings.latest,)}
    grid = mgc.year_grid(settings.earliest, settings.latest, settings.grid_size)
    return {
        "earliest": tuple(int(d) for d in grid[: settings.average_n]),
        "latest": tuple(int(d) for d in grid[-settings.average_n :]),
    }


def build_sentences(settings: DetectSettings, data_dir: Path | None) -> pd.DataFrame:
    folder = sources.locate("winogender", data_dir)
    stats = winogender.load_occupation_stats(folder)
    parts = []
    builders = {
        "extended": lambda: winogender.build_extended(folder),
        "simplified": winogender.build_simplified,
        "simplified-reference": lambda: winogender.build_simplified_reference(
            sources.locate("sib-simplified", data_dir)
        ),
    }
    for name in dict.fromkeys(settings.sets):
        table = builders[name]()
        table.insert(0, "set", name)
        parts.append(table)
    sentences = pd.concat(parts, ignore_index=True).merge(stats, on="occupation", how="left")
    missing = sorted(sentences.loc[sentences["bls_pct_female"].isna(), "occupation"].unique())
    if missing:
        raise BiaslensError(
            f"{folder / winogender.STATS_FILE}: no statistics for occupation(s) {missing}"
        )
    if settings.limit is not None:
        keep = sorted(sentences["occupation"].unique())[: settings.limit]
        sentences = sentences[sentences["occupation"].isin(keep)].reset_index(drop=True)
    return sentences


def _inputs(sentences: pd.Series, date: int, settings: DetectSettings, kind: ModelKind) -> list:
    injected = [inject_date(s, date, settings.date_format) for s in sentences]
    return injected if kind == ModelKind.MASKED else [mgc.wrap_in_prompt(s, "A") for s in injected]


def expand_dates(
    sentences: pd.DataFrame, settings: DetectSettings, kind: ModelKind
) -> pd.DataFrame:
    rows = []
    for end, dates in date_groups(settings).items():
        for date in dates:
            part = sentences[["set", "id"]].copy()
            part["end"], part["date"] = end, date
            part["input"] = _inputs(sentences["sentence"], date, settings, kind)
            rows.append(part)
    return pd.concat(rows, ignore_index=True)


def sweep_rows(sentences: pd.DataFrame, settings: DetectSettings, kind: ModelKind) -> pd.DataFrame:
    """The ``sweep`` sentences at every date of the grid (Fig. 4)."""
    chosen = sentences[sentences["id"].isin(settings.sweep)]
    unknown = sorted(set(settings.sweep) - set(chosen["id"]))
    if unknown:
        raise BiaslensError(f"--sweep: no sentence with id(s) {unknown} in the chosen sets")
    rows = []
    for date in mgc.year_grid(settings.earliest, settings.latest, settings.grid_size):
        part = chosen[["set", "id"]].copy()
        part["end"], part["date"] = "sweep", int(date)
        part["input"] = _inputs(chosen["sentence"], int(date), settings, kind)
        rows.append(part)
    return pd.concat(rows, ignore_index=True)


def sentence_metrics(
    sentences: pd.DataFrame, scored: pd.DataFrame, threshold: float, empty_mass: str = "exclude"
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
    table["verdict"] = np.select(
        [table["no_pronoun"], table["predicted_unspecified"]],
        ["no pronoun predicted", "unspecified"],
        "well-specified",
    )
    return table


def prepare(settings: DetectSettings, lm: LM) -> DetectSettings:
    check_pronoun_model(lm, settings.mode)
    return settings


def run(ctx: RunContext, settings: DetectSettings) -> MethodOutput:
    """Method 2 on every sentence of the chosen sets; TPR/TNR/BA per set."""
    from biaslens.plots.sib import detector_figure

    sentences = build_sentences(settings, ctx.data_dir)
    rows = expand_dates(sentences, settings, ctx.lm.kind)
    if settings.sweep:
        rows = pd.concat([rows, sweep_rows(sentences, settings, ctx.lm.kind)], ignore_index=True)
    scored = score_rows(
        ctx.lm, rows, settings.mode, ctx.progress, label="Method 2",
        max_new_tokens=settings.generation_tokens,
    )  # fmt: skip
    sweep = scored[scored["end"] == "sweep"]
    scored = scored[scored["end"] != "sweep"]
    table = sentence_metrics(sentences, scored, settings.threshold, settings.empty_mass)
    rates = pd.DataFrame(
        [
            {
                "set": name,
                **detection_rates(part["metric"], part["well_specified"], settings.threshold),
            }
            for name, part in table.groupby("set", sort=False)
        ]
    )
    figures = {
        f"detector_{name}": detector_figure(
            part, settings.threshold, f"{ctx.lm.identity.name}, {name} Winogender"
        )
        for name, part in table.groupby("set", sort=False)
    }
    tables = {"rates": rates}
    if len(sweep):
        from biaslens.plots.sib import date_sweep_figure

        curve = date_sweep(sweep, sentences)
        tables["date_sweep"] = curve
        for sentence_id, part in curve.groupby("id", sort=False):
            figures[f"date_sweep_{sentence_id}"] = date_sweep_figure(
                part, f"{ctx.lm.identity.name}: {part['sentence'].iloc[0]}"
            )
    notes = [
        f"{row.set}: {row.n_no_pronoun} sentence(s) with no pronoun predicted at a date "
        "(no share to compare) are left out of TPR/TNR"
        for row in rates.itertuples()
        if row.n_no_pronoun
    ]
    return MethodOutput(
        metrics={"rates": rates.to_dict(orient="records"), "num_sentences": len(table)},
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
    return rates[
        [
            "set",
            "tpr",
            "tnr",
            "balanced_accuracy",
            "n_unspecified",
            "n_well_specified",
            "n_no_pronoun",
        ]
    ].rename(
        columns={
            "tpr": "TPR",
            "tnr": "TNR",
            "balanced_accuracy": "BA",
            "n_unspecified": "unspecified",
            "n_well_specified": "well-specified",
            "n_no_pronoun": "no pronoun",
        }
    )


SPEC = register(
    MethodSpec(
        name=METHOD,
        title="SIB Method 2: task-specification detector on extended Winogender and the "
        "Simplified set",
        settings=DetectSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        run_name=lambda s: f"{safe_name(s.model)}-{s.mode}",
        presets={
            "paper": {
                "mode": "paper",
                "date_format": "colon",
                "sets": ("extended", "simplified-reference"),
                "empty_mass": "zero",
            }
        },
        headlines=(
            Headline("rates", "Detector TPR / TNR / balanced accuracy (Table 3)", view=_rates_view),
        ),
    )
)
