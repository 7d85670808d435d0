"""SIB Method 1 on the MGC set (paper Section 4, Appendices D-G).

builder (``biaslens.methods.sib.data.mgc``) -> ``token_distribution`` / ``generate`` requests ->
backend (cached) -> gendered mass per sentence (``biaslens.methods.sib.metrics.sib``) -> linear fits
per prompt and W kind -> run store (samples, fits, summary, plots).

Scoring modes:

* ``exact`` (default): the full-vocabulary probability of the Appendix E words at the slot
  (masked LMs) or as the answer's first word after the prompt (causal / seq2seq; chain rule
  for words of several tokens). One forward pass per sentence.
* ``paper``: Appendix G. Masked LMs: the listed words among the top-5 at the slot. Causal /
  seq2seq: greedy decoding of up to 20 tokens with the top-5 at every step; the step whose
  argmax is a listed word if there is exactly one, else the average over steps.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pandas as pd
from pydantic import BaseModel, Field, field_validator

from biaslens.common.atomic import json_records
from biaslens.common.numbers import readable, readable_interval
from biaslens.common.options import FLAG, Flag
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import LmEvalTask
from biaslens.framework.options import options_of
from biaslens.framework.presets import UNSET, ByModel
from biaslens.framework.registry import (
    Comparison,
    Headline,
    MethodOutput,
    MethodSpec,
    RunContext,
    register,
)
from biaslens.framework.settings import (
    CiLevel,
    Limit,
    MethodSettings,
    MinPronounMass,
    ModelName,
    PronounScoring,
    RandomSeed,
    validated,
)
from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.metrics.measures import SLOPE, SLOPE_DIFFERENCE
from biaslens.methods.sib.metrics.sib import (
    MIN_PRONOUN_MASS,
    check_pronoun_mass,
    mean_by_w,
    method1_fits,
    pronoun_mass,
    r2_text,
    slope_summary,
    small_mass_note,
)
from biaslens.methods.sib.mgc.audit_role import AUDIT
from biaslens.methods.sib.mgc.compare import compare
from biaslens.methods.sib.mgc.same_frames import released_folder, same_frame_references
from biaslens.methods.sib.mgc.sampled_design import mgc_design
from biaslens.methods.sib.outputs import MGC as SIB_FILES_MGC
from biaslens.methods.sib.scoring.pronouns import (
    check_pronoun_model,
    sampled_note,
    score_rows,
    scoring_for,
)
from biaslens.models.base import LM, ModelKind
from biaslens.progress import note
from biaslens.scoring.sampled import DEFAULT_SAMPLES, Allocation, Samples, adaptive
from biaslens.store.run import dataset_hash

METHOD = "sib-mgc"
MASKED_PROMPT = "mask"  # the prompt column's value for masked LMs, which use no prompt


WKind = Literal["dates", "places"]
"""An injected W kind (SIB §3.1)."""


class TaskSettings(BaseModel):
    """What the ``biaslens_mgc`` lm-eval task takes besides ``--limit`` (one prompt and one W
    kind per task: lm-eval aggregates over a task's inputs); validated as :class:`MGCSettings`'
    ``prompts`` and ``w_kinds`` when the task is written."""

    prompt: Annotated[str, FLAG] = Field(default="A", description="MGC prompt: A, B or C.")
    w_kind: Annotated[WKind, Flag("--w")] = Field(
        default="dates", description="MGC W kind: dates or places."
    )


class MGCSettings(MethodSettings):
    """Settings that decide an MGC run's results (validated on entry)."""

    model: ModelName = "default"
    mode: PronounScoring = "exact"
    samples: Samples = DEFAULT_SAMPLES
    allocation: Allocation = "adaptive"
    prompts: Annotated[tuple[str, ...] | None, Flag("--prompt", "-p", shown="A")] = Field(
        default=None,
        description="Instruction prompt(s) A B C of App. D.2 for causal/seq2seq models. Not "
        "allowed with masked LMs.",
    )
    w_kinds: Annotated[tuple[WKind, ...], Flag("--w")] = Field(
        default=("dates", "places"), description="Injected W values: dates places."
    )
    date_grid: Annotated[Literal["code", "rounded", "text"], FLAG] = Field(
        default="code",
        description="code: linspace(1801, 2016, 30) cut to whole years, as the reference code; "
        "rounded: the same points rounded; text: 1801-2001 as the paper's text.",
    )
    generation_tokens: Annotated[int, FLAG] = Field(
        default=20,
        ge=1,
        le=256,
        description="Paper scoring: greedy steps of causal/seq2seq models (the reference code "
        "used 10 for Method 1: --preset paper).",
    )
    limit: Limit = Field(
        default=None,
        description="Sentence frames (verb × life stage) kept, each at every W value (seeded; 0: "
        "all 60).",
    )
    min_pronoun_mass: MinPronounMass = MIN_PRONOUN_MASS
    seed: RandomSeed = 0
    ci_level: CiLevel

    @field_validator("prompts")
    @classmethod
    def _known_prompts(cls, value):
        if value is not None:
            unknown = [p for p in value if p not in mgc.PROMPTS]
            if unknown or not value:
                raise ValueError(f"prompts must be among {', '.join(mgc.PROMPTS)}, got {value}")
            return tuple(dict.fromkeys(value))
        return value

    @field_validator("w_kinds")
    @classmethod
    def _some_w_kind(cls, value):
        if not value:
            raise ValueError("at least one W kind (dates, places) is needed")
        return tuple(dict.fromkeys(value))


def make_settings(**values) -> MGCSettings:
    """Settings from keyword values (one-line errors), as the runner builds them."""
    return validated(MGCSettings, values)


def resolve_prompts(settings: MGCSettings, kind: ModelKind) -> tuple[str, ...]:
    """Prompts A-C for causal/seq2seq models (default A); none for masked LMs."""
    if kind == ModelKind.MASKED:
        if settings.prompts and settings.prompts != (MASKED_PROMPT,):
            raise BiaslensError(
                "--prompt applies to causal and seq2seq models; a masked LM fills the [MASK] slot "
                "of the sentence directly"
            )
        return (MASKED_PROMPT,)
    return settings.prompts or ("A",)


def prepare(settings: MGCSettings, lm: LM) -> MGCSettings:
    """Check the model can score pronouns in this mode; record the prompts it will get and the
    scoring it gets (sampled where the model gives no probabilities)."""
    mode = scoring_for(lm, settings.mode)
    check_pronoun_model(lm, mode)
    return settings.model_copy(update={"prompts": resolve_prompts(settings, lm.kind), "mode": mode})


def build_rows(
    settings: MGCSettings, prompts: tuple[str, ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The MGC sentences (after --limit) and one row per sentence x prompt with its model input."""
    sentences = mgc.limit_per_w(
        mgc.build_mgc(settings.w_kinds, settings.date_grid), settings.limit, settings.seed
    )
    parts = []
    for prompt in prompts:
        part = sentences.copy()
        part.insert(1, "prompt", prompt)
        part["input"] = (
            part["sentence"]
            if prompt == MASKED_PROMPT
            else [mgc.wrap_in_prompt(s, prompt) for s in part["sentence"]]
        )
        parts.append(part)
    return sentences, pd.concat(parts, ignore_index=True)


def run(ctx: RunContext, settings: MGCSettings) -> MethodOutput:
    """Method 1: pronoun masses of every MGC input, linear fits per prompt, W kind, gender."""
    from biaslens.methods.sib.plots import mgc_trend_figure

    prompts = resolve_prompts(settings, ctx.lm.kind)
    sentences, rows = build_rows(settings, prompts)
    if settings.limit:
        frames = sentences[["verb", "life_stage"]].drop_duplicates().shape[0]
        note(
            ctx.progress,
            f"--limit {settings.limit}: {frames} sentence frames at every W value "
            f"→ {len(rows):,} prompts",
        )
    samples = score_rows(
        ctx.lm,
        rows,
        settings.mode,
        ctx.progress,
        max_new_tokens=settings.generation_tokens,
        samples=settings.samples,
        design=mgc_design(rows) if adaptive(settings) else None,
    )
    mass = pronoun_mass(samples)
    check_pronoun_mass(mass, settings.min_pronoun_mass, ctx.lm.identity.name, settings.mode)
    fits = method1_fits(samples, level=settings.ci_level)
    means = mean_by_w(samples)
    slopes = slope_summary(fits, means, level=settings.ci_level, samples=samples)
    if settings.mode == "sampled":  # every number is read from K replies per input
        fits["samples"] = slopes["samples"] = settings.samples
    name = ctx.lm.identity.name
    figures = {
        f"mgc_{w_kind}": mgc_trend_figure(
            means, fits, w_kind, f"MGC Method 1: {name}, W = {w_kind}, {settings.mode} scoring"
        )
        for w_kind in settings.w_kinds
    }
    shown = f"{settings.ci_level:.0%}"
    notes = [
        f"prompt {row.prompt}, {row.w_kind}: female−male slope "
        f"{readable(row.female_minus_male_slope, signed=True)} pp/step, {shown} CI "
        + (
            readable_interval(row.female_minus_male_ci_low, row.female_minus_male_ci_high, True)
            if row.female_minus_male_ci_low == row.female_minus_male_ci_low
            else f"none ({getattr(row, 'female_minus_male_ci_note', 'undefined')})"
        )
        + f" (n = {row.n} W values × {row.sentences} sentences), "
        f"{r2_text(row.mean_r2, row.flat_fits)}"
        for row in slopes.itertuples()
    ]
    tables = {"fits": fits, "slopes": slopes, "means_by_w": means}
    metrics = {}
    released = released_folder(ctx.data_dir)
    if released is not None:  # the known models on this run's own frames, paired
        known = same_frame_references(samples, released, settings.ci_level)
        if not known.empty:
            tables["mgc_reference"] = known
            metrics["reference"] = {"rows": json_records(known)}
    else:
        notes.append(
            "known models: on all 60 frames (the SIB authors' released outputs are not in the "
            "data folder; `biaslens datasets download sib-outputs` puts them there, and the "
            "known models are then read on this run's own frames and paired with it)"
        )
    drawn = samples["samples"] if adaptive(settings) else None
    said = [small_mass_note(mass), sampled_note(settings.mode, settings.samples, drawn, samples)]
    notes += [n for n in said if n]
    return MethodOutput(
        metrics={
            "fits": fits.to_dict(orient="records"),
            "slopes": slopes.to_dict(orient="records"),
            "mean_pronoun_mass": mass,
            "num_sentences": len(sentences),
            "num_requests": len(rows),
            **metrics,
        },
        tables=tables,
        samples={"samples": samples},
        figures=figures,
        provenance={
            "dataset": {
                "name": "mgc",
                "sha256": dataset_hash(sentences),
                "date_grid": settings.date_grid,
            }
        },
        notes=notes,
    )


OLS_ONLY = ("female_minus_male_stderr", "slope_stderr", "p_value")
"""The reference code's OLS statistics (W values taken as independent): kept in the files for
the paper's comparison, never shown beside the interval biaslens stands behind, which they
would contradict (an OLS p < 0.05 where the interval holds 0)."""


def _fits_view(fits: pd.DataFrame) -> pd.DataFrame:
    """The fits as the terminal and the report show them: the interval, not the OLS
    statistics (:data:`OLS_ONLY`)."""
    view = fits[["prompt", "w_kind", "gender", "slope", "slope_ci_low", "slope_ci_high", "r", "r2"]]
    return view.assign(
        ci=[
            readable_interval(a, b, signed=True) if a == a else f"none: {note}"
            for a, b, note in zip(
                view.slope_ci_low,
                view.slope_ci_high,
                fits.get("slope_ci_note", pd.Series([None] * len(fits))),
                strict=True,
            )
        ],
        n=fits["n"],
        sentences=fits["sentences"],
        rho=fits["slope_rho"],
    )[["prompt", "w_kind", "gender", "slope", "ci", "n", "sentences", "rho", "r", "r2"]].rename(
        columns={"w_kind": "W", "slope": "slope (pp/step)", "ci": "CI", "r2": "r²", "rho": "ρ(W)"}
    )


SPEC = register(
    MethodSpec(
        audit=AUDIT,
        outputs=SIB_FILES_MGC,
        name=METHOD,
        lm_eval=LmEvalTask(
            "biaslens.methods.sib.lm_eval_tasks:mgc_task",
            options=options_of(TaskSettings),
        ),
        title="SIB Method 1 on the MGC set: gendered-pronoun probability vs injected dates/places",
        settings=MGCSettings,
        body=run,
        prepare=prepare,
        folder_fields=("mode",),
        description=(
            "Writes samples.parquet, fits.csv (slope, 95% CI, r, r² per prompt, W kind and "
            "gender), slopes.csv (female−male slope difference, mean r²), summary.json and "
            "plots/mgc_*.png. Several models (--model A B, --models-file) are compared "
            "(Fig. 3(b)). Rerunning the same command resumes from the run's request cache."
        ),
        comparison=Comparison(
            compare=compare,
            folder=lambda s: f"compare-{s.mode}",
            headline=Headline(
                "comparison",
                "MGC Method 1 across models (mean over prompts)",
                ("model", "parameters", "W", "female−male slope", "mean r²", "flat lines"),
                legend={
                    "female−male slope": "the female − male slope (below), averaged over the "
                    "prompts, in pp per W step",
                    "mean r²": "mean of the female and male lines' r²",
                    "flat lines": "lines whose per-W means do not vary (r² undefined), left out "
                    "of the mean r²",
                },
                view=lambda t: t.assign(parameters=t["num_parameters"].map("{:,}".format)).rename(
                    columns={
                        "w_kind": "W",
                        "female_minus_male_slope": "female−male slope",
                        "mean_r2": "mean r²",
                        "flat_fits": "flat lines",
                    }
                ),
            ),
        ),
        headlines=(
            Headline(
                "slopes",
                "Female − male slope and mean r² (Method 1)",
                cli=False,
                measures=(SLOPE_DIFFERENCE,),
                labels=("prompt", "w_kind"),
                report=lambda t: t.drop(columns=[c for c in OLS_ONLY if c in t]),
            ),
            Headline(
                "fits",
                "Per-gender linear fits",
                view=_fits_view,
                report=_fits_view,
                measures=(SLOPE,),
                labels=("prompt", "w_kind", "gender"),
                legend={
                    "slope (pp/step)": "the slope (below) in percentage points of pronoun "
                    "probability per step along W's grid",
                    "ρ(W)": "lag-1 autocorrelation of the line's residuals over W, which the "
                    "interval allows for (AR(1))",
                    "r²": "share of the per-W means' variance the line explains",
                },
            ),
        ),
        presets={
            "paper": {
                "mode": "paper",
                # prompts apply to causal and seq2seq models; a masked LM fills its slot
                "prompts": ByModel(
                    lambda kind, values: UNSET if kind == ModelKind.MASKED else ("A", "B", "C")
                ),
                "generation_tokens": 10,
                "date_grid": "code",
                "min_pronoun_mass": 0.0,  # the paper reports every model's numbers
            }
        },
    )
)
