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

import pandas as pd

from biaslens.common.atomic import json_records
from biaslens.common.numbers import readable, readable_interval
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
from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.metrics.measures import (
    PAPER_SLOPE,
    PAPER_SLOPE_DIFFERENCE,
    SLOPE,
    SLOPE_DIFFERENCE,
)
from biaslens.methods.sib.metrics.sib import (
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
from biaslens.methods.sib.mgc.outputs import MGC as SIB_FILES_MGC
from biaslens.methods.sib.mgc.same_frames import released_folder, same_frame_references
from biaslens.methods.sib.mgc.sampled_design import mgc_design
from biaslens.methods.sib.mgc.settings import MGCSettings, TaskSettings
from biaslens.methods.sib.scoring.pronouns import (
    check_pronoun_model,
    sampled_note,
    score_rows,
    scoring_for,
)
from biaslens.models.base import LM, ModelKind
from biaslens.progress import note
from biaslens.scoring.sampled import adaptive
from biaslens.store.run import dataset_hash

METHOD = "sib-mgc"
PAPER = "the reference code's"
"""The ``readout`` label of the rows read as the SIB reference code did."""
PAPER_READOUT_TOKENS = 10
"""The greedy steps of the reference code's Method 1 readout (``--preset paper``'s)."""
MASKED_PROMPT = "mask"  # the prompt column's value for masked LMs, which use no prompt


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


def never_named(
    samples: pd.DataFrame, fits: pd.DataFrame, slopes: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper readout's fits and slopes with a caution where a line rests on a pronoun the
    readout never named (prompt × W kind): its slope is 0 by construction, not a finding."""
    group = ["prompt", "w_kind"]
    named = samples.groupby(group)[[f"p_{g}" for g in ("female", "male", "neutral")]].max() > 0

    def caution(row, genders) -> str:
        missing = [g for g in genders if not named.loc[(row.prompt, row.w_kind), f"p_{g}"]]
        return (
            f"the reference code's readout never named a {' or '.join(missing)} pronoun here: "
            "the line is flat by construction"
            if missing
            else ""
        )

    fits = fits.assign(readout_caution=[caution(r, [r.gender]) for r in fits.itertuples()])
    slopes = slopes.assign(
        readout_caution=[caution(r, ["female", "male"]) for r in slopes.itertuples()]
    )
    return fits, slopes


def paper_readout_gap(lm: LM) -> str | None:
    """Why ``lm`` cannot be read as the reference code read models (None: it can): a masked
    LM's top 5 at the slot, or greedy generation."""
    try:
        check_pronoun_model(lm, "paper")
    except BiaslensError as error:
        return str(error)
    return None


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
    read_as_paper = samples
    unreadable = paper_readout_gap(ctx.lm) if settings.paper_readout else None
    if unreadable:
        notes.append(f"--paper-readout: not read ({unreadable})")
    if settings.paper_readout and settings.mode != "paper" and not unreadable:
        read_as_paper = score_rows(
            ctx.lm, rows, "paper", ctx.progress, "MGC (the reference code's readout)",
            max_new_tokens=PAPER_READOUT_TOKENS,
        )  # fmt: skip
        paper_fits = method1_fits(read_as_paper, level=settings.ci_level).assign(readout=PAPER)
        paper_slopes = slope_summary(
            paper_fits, mean_by_w(read_as_paper), level=settings.ci_level, samples=read_as_paper
        ).assign(readout=PAPER)
        paper_fits, paper_slopes = never_named(read_as_paper, paper_fits, paper_slopes)
        tables.update(paper_fits=paper_fits, paper_slopes=paper_slopes)
        samples_out = {"paper_samples": read_as_paper}
    else:
        samples_out = {}
    released = released_folder(ctx.data_dir)
    if released is not None:  # the known models on this run's own frames, paired
        known = same_frame_references(read_as_paper, released, settings.ci_level)
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
        samples={"samples": samples, **samples_out},
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


def _without_ols(table: pd.DataFrame) -> pd.DataFrame:
    """A slopes table as the report shows it: without the OLS statistics (:data:`OLS_ONLY`)."""
    return table.drop(columns=[c for c in OLS_ONLY if c in table])


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
        inspect_task="biaslens.methods.sib.inspect_tasks:sib_mgc",
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
                report=_without_ols,
            ),
            Headline(
                "paper_slopes",
                "Female − male slope, read as the SIB reference code did (--paper-readout)",
                cli=False,
                measures=(PAPER_SLOPE_DIFFERENCE,),
                labels=("prompt", "w_kind", "readout"),
                report=_without_ols,
            ),
            Headline(
                "paper_fits",
                "Per-gender linear fits, read as the SIB reference code did (--paper-readout)",
                cli=False,
                measures=(PAPER_SLOPE,),
                labels=("prompt", "w_kind", "gender", "readout"),
                report=_fits_view,
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
