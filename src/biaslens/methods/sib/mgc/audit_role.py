"""SIB Method 1 in ``biaslens audit``: the known models beside an audited run, computed from the
SIB authors' released outputs (never typed from a paper's table), and the paired difference of
two models' slopes.

Shipped: ``data/files/references/sib-mgc.csv`` — SIB Method 1 (female, male, neutral and
female − male slopes with their trend intervals) of every model whose outputs the SIB authors
released (``2dot71mily/sib_paper`` @ :data:`SIB_COMMIT`, ``data/spur_mgc_raw/``), computed by
:func:`sib_mgc_references` (``python scripts/reference_values.py DATA_DIR`` writes the file;
a test recomputes it from the released files).

Their protocol is the paper's: top-5 pronoun scoring for masked LMs, greedy generation for
instruction-tuned models (``--preset paper``), on all 60 sentence frames and the code's date
grid. A card shows them beside an audited run and says when the run's protocol differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.data.sources import PACKAGE_FILES
from biaslens.framework.hooks import AuditRole, AuditStep, paired_fields, reference_row
from biaslens.framework.questions import Question
from biaslens.methods.sib.data.released_mgc_outputs import read_mgc_outputs
from biaslens.methods.sib.intervals.trend import sentence_matrix, trend_interval
from biaslens.methods.sib.known_models import MASKED_ONLY, known_as
from biaslens.methods.sib.metrics.reference import method1_from_matrices
from biaslens.metrics.intervals import LEVEL

SIB_REPOSITORY = "2dot71mily/sib_paper"
SIB_COMMIT = "812af8cad6b2ad1fa62f107440702f2fd902b8c2"
SIB_MGC_FILE = PACKAGE_FILES / "references" / "sib-mgc.csv"


def mgc_protocol(frames: str = "all 60 sentence frames") -> str:
    """The known models' protocol, on ``frames``."""
    return (
        "SIB reference code: top-5 pronoun scoring (masked LMs) or greedy generation (prompts "
        f"A-C), {frames}, the code's date grid; {MASKED_ONLY} read the masked slot with no "
        "prompt, so they stand beside a masked LM's run, the prompted models beside a prompted "
        "one"
    )


def sib_mgc_references(folder: Path, level: float = LEVEL) -> pd.DataFrame:
    """The reference table from the released ``spur_mgc_raw`` folder (module docstring)."""
    rows = []
    for released in read_mgc_outputs(folder):
        for row in method1_from_matrices(released.values, level):
            files = (
                released.files.values()
                if row["gender"] is None
                else [released.files[row["gender"]]]
            )
            rows.append(
                {
                    "model": released.model,
                    "prompt": released.prompt,
                    "w_kind": released.w_kind,
                    **row,
                    "ci_level": level,
                    "source": f"{SIB_REPOSITORY}@{SIB_COMMIT}:data/spur_mgc_raw/"
                    + "+".join(sorted(files)),
                }
            )
    return pd.DataFrame(rows)


def load_sib_mgc() -> pd.DataFrame:
    """The shipped reference table."""
    return pd.read_csv(SIB_MGC_FILE, keep_default_na=False, na_values=[""])


SAME_PROTOCOL = {"mode": "paper", "date_grid": "code"}


def protocol_gap(settings: dict[str, Any], same_frames: bool = False) -> str | None:
    """Why a sib-mgc run's numbers are not on the references' protocol (None: they are);
    ``same_frames``: the references were read on the run's own frames."""
    gaps = [
        f"{key} {settings.get(key)!r} (the references: {value!r})"
        for key, value in SAME_PROTOCOL.items()
        if settings.get(key) != value
    ]
    if settings.get("limit") and not same_frames:
        gaps.append(f"{settings['limit']} of the 60 sentence frames (the references: all 60)")
    return "; ".join(gaps) or None


def references_for(rows: list, record) -> list[dict[str, Any]]:
    """The reference values beside an audited run's card ``rows``: the same metric on the
    same probe (prompt, W kind, gender), with whether the protocol is the same — on the run's
    own frames, with the paired difference, where the run read them from the released outputs
    (``summary.json``'s ``reference``: :mod:`~.same_frames`), else the shipped all-frame
    values."""
    settings = record.settings
    read_as_paper = [r for r in rows if "readout" in r.labels]
    if read_as_paper:  # the run read its inputs as the reference code did too: compare those
        rows, settings = read_as_paper, {**settings, "mode": "paper"}
    same = (record.metrics or {}).get("reference")
    table = pd.DataFrame(same["rows"]) if same else load_sib_mgc()
    gap = protocol_gap(settings, same_frames=bool(same))
    protocol = mgc_protocol("the run's own sentence frames") if same else mgc_protocol()
    found = []
    for row in rows:
        labels = row.labels
        chosen = table[
            (table["metric"] == row.metric)
            & (table["prompt"] == labels.get("prompt"))
            & (table["w_kind"] == labels.get("w_kind"))
        ]
        if "gender" in labels:
            chosen = chosen[chosen["gender"] == labels["gender"]]
        for reference in chosen.to_dict(orient="records"):
            if same:
                reference["source"] = f"{SIB_REPOSITORY}@{SIB_COMMIT}:{reference['source']}"
            model = known_as(reference.get("known_model") or reference["model"])
            found.append(reference_row(model, row, reference, protocol, gap))
            if same:
                found[-1].update(paired_fields(reference))
    return found


# ------------------------------------------------------------- paired differences

PAIRED_COLUMNS = {
    ("slope", "female"): "p_female",
    ("slope", "male"): "p_male",
    ("slope", "neutral"): "p_neutral",
}


def frame_matrix(samples: pd.DataFrame, labels: dict, metric: str) -> pd.DataFrame:
    """(frames × W index) values of one model's sib-mgc samples for a card row (probability)."""
    part = samples[
        (samples["prompt"] == labels["prompt"]) & (samples["w_kind"] == labels["w_kind"])
    ]
    if metric == "female_minus_male_slope":
        part = part.assign(_value=part["p_female"] - part["p_male"])
    else:
        part = part.assign(_value=part[PAIRED_COLUMNS[(metric, labels["gender"])]])
    return part.pivot_table(
        index=["verb", "life_stage"], columns="w_index", values="_value", aggfunc="mean"
    )


def paired_trend(
    samples_a: pd.DataFrame,
    samples_b: pd.DataFrame,
    labels: dict,
    metric: str,
    level: float = LEVEL,
) -> dict:
    """Model A − model B for one sib-mgc headline, paired over the frames and W values both
    read (module docstring): the difference, its interval at ``level``, frames and W values."""
    a, b = frame_matrix(samples_a, labels, metric), frame_matrix(samples_b, labels, metric)
    common = a.index.intersection(b.index)
    columns = a.columns.intersection(b.columns)
    difference = (a.loc[common, columns] - b.loc[common, columns]).dropna(axis=0, how="any")
    values = difference.to_numpy(float) * 100.0
    trend = trend_interval(values, columns.to_numpy(float), level)
    return {
        "difference": trend.slope,
        "ci_low": trend.low,
        "ci_high": trend.high,
        "frames": trend.sentences,
        "n": trend.points,
        "units": f"W values × {trend.sentences} frames",
    }


def paired_difference(
    folder_a: Path, folder_b: Path, labels: dict, metric: str, level: float = LEVEL
) -> dict:
    """:func:`paired_trend` of two runs' folders. Two models read the same sentence frames at
    the same W values, so the difference of their slopes is the slope of the per-frame
    differences, and its interval is the trend interval
    (:mod:`biaslens.methods.sib.intervals.trend`) of that (frames × W) matrix: the same estimand and
    construction as each model's own slope, with the frame and W effects both models share taken
    out."""
    return paired_trend(
        pd.read_parquet(folder_a / "samples.parquet"),
        pd.read_parquet(folder_b / "samples.parquet"),
        labels,
        metric,
        level,
    )


def slope_difference_at(run_dir: Path, labels, level: float, settings) -> tuple[float, float]:
    """The female − male slope's interval at ``level`` for one prompt and W kind, recomputed
    from the run's samples by the run's own construction (:func:`~biaslens.methods.sib.metrics.sib.
    slope_differences`: the trend interval of the per-frame differences)."""
    samples = pd.read_parquet(run_dir / "samples.parquet")
    chosen = samples[
        (samples["prompt"] == labels["prompt"]) & (samples["w_kind"] == labels["w_kind"])
    ]
    values, w = sentence_matrix(chosen.assign(_diff=chosen["p_female"] - chosen["p_male"]), "_diff")
    trend = trend_interval(values, w, level)
    return trend.low, trend.high


PRONOUN_MOVES = Question(
    "pronoun-moves-with-w",
    "Does the gendered pronoun move with an irrelevant W ({w_kind}, prompt {prompt})?",
    table="slopes",
    metric="female_minus_male_slope",
    target=0.0,
    target_words="0: the female and male pronouns keep their gap along W",
    source="SIB, Section 4 (Method 1, Fig. 3(b))",
    per=("prompt", "w_kind"),
    interval_at=slope_difference_at,
)
"""SIB Method 1's question: the female − male slope per W kind (each gender's slope beside it
is supporting detail: a shared trend in both pronouns is not a gendered one)."""


AUDIT = AuditRole(  # quick: 15 of the 60 sentence frames at each of the 30 dates and 20 places
    sizes={
        "quick": (AuditStep({"limit": 15, "paper_readout": True}),),
        "standard": (AuditStep({"paper_readout": True}),),
        "paper": (AuditStep(preset="paper"),),
    },
    references=references_for,
    paired=paired_difference,
    questions=(PRONOUN_MOVES,),
)
"""sib-mgc in ``biaslens audit``."""
