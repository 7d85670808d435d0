"""The SIB paper's known models on the very sentence frames a sib-mgc run read, and the run's
model against each of them, paired over the frames × W values both read.

The shipped references (``references/sib-mgc.csv``) rest on all 60 frames; a run of fewer
frames (``--limit``: the quick audit reads 15) is not comparable with them. Where the SIB
authors' released outputs (``data/spur_mgc_raw/``: per frame and W, in percent) are in the data
folder (``biaslens datasets download sib-outputs``), each known model's slopes are computed
again on the run's frames alone, with the same trend interval, and the run's model − the known
model is the slope of their per-(frame, W) difference, with its trend interval: the frames' and
W values' own effects, which both read, cancel (:func:`~.audit_role.paired_trend`'s
construction, against a released matrix). The difference needs the same W values in the same
order (the run's ``--date-grid code``, the default); otherwise the same-frames values stand
alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.data.sources import VERIFIED, data_dir
from biaslens.methods.sib.data.mgc import LIFESTAGES, VERBS
from biaslens.methods.sib.data.released_mgc_outputs import MgcOutputs, read_mgc_outputs
from biaslens.methods.sib.intervals.trend import trend_interval
from biaslens.methods.sib.metrics.reference import method1_from_matrices
from biaslens.metrics.intervals import LEVEL

RELEASED = Path("data") / "spur_mgc_raw"
"""Where the released Method 1 outputs lie in the authors' repository (and its archive)."""
_SLOT = re.compile(r"(?:\[MASK\]|<mask>) (?P<rest>[^.\n]+)\.")
GENDER_COLUMNS = {"female": "p_female", "male": "p_male", "neutral": "p_neutral"}


def released_folder(explicit: Path | str | None = None) -> Path | None:
    """The released ``spur_mgc_raw`` folder in the data folder: the verified download
    (``sib-outputs/``) or a copy of the authors' repository (``sib/``); None where neither is."""
    root = data_dir(explicit)
    download = root / "sib-outputs"
    candidates = [download / RELEASED] if (download / VERIFIED).is_file() else []
    candidates.append(root / "sib" / RELEASED)
    return next((c for c in candidates if c.is_dir()), None)


def frame_of(sentence: str) -> tuple[str, str] | None:
    """A released column's sentence frame (verb, life stage), or None."""
    found = _SLOT.search(sentence)
    if found is None:
        return None
    rest = found["rest"]
    for verb in sorted(VERBS, key=len, reverse=True):
        stage = rest.removeprefix(verb + " ")
        if stage != rest and stage in LIFESTAGES:
            return verb, stage
    return None


def _run_matrix(samples: pd.DataFrame, gender: str | None) -> pd.DataFrame:
    """(frames × W value, in the run's W order) of one prompt and W kind's samples, in percent
    (gender None: female − male)."""
    value = (
        samples["p_female"] - samples["p_male"]
        if gender is None
        else samples[GENDER_COLUMNS[gender]]
    )
    matrix = samples.assign(_value=value * 100.0).pivot_table(
        index=["verb", "life_stage"], columns="w_index", values="_value", aggfunc="mean"
    )
    names = samples.drop_duplicates("w_index").set_index("w_index")["w"].astype(str)
    return matrix.rename(columns=names.to_dict())


def _paired(run: pd.DataFrame, known: pd.DataFrame, level: float) -> dict:
    """The slope of run − known over the frames both read and the W values, in the known
    model's order (the run's W values must be the same ones)."""
    if list(run.columns) != list(known.columns):
        return {"difference_note": "the run read other W values (its --date-grid differs)"}
    frames = run.index.intersection(known.index)
    difference = (run.loc[frames] - known.loc[frames]).to_numpy(float)
    trend = trend_interval(difference, np.arange(difference.shape[1], dtype=float), level)
    return {
        "difference": trend.slope,
        "difference_ci_low": trend.low,
        "difference_ci_high": trend.high,
        "difference_note": trend.why_not,
        "paired_over": f"{trend.points} W values × {trend.sentences} frames",
    }


def _known_matrix(released: MgcOutputs, gender: str | None, frames) -> pd.DataFrame:
    """A known model's (frames × W value) matrix in percent (gender None: female − male)."""
    values = (
        released.values["female"] - released.values["male"]
        if gender is None
        else released.values[gender]
    )
    index = pd.MultiIndex.from_tuples(frames, names=["verb", "life_stage"])
    return pd.DataFrame(values, index=index, columns=list(released.w_values))


def same_frame_references(
    samples: pd.DataFrame, folder: Path, level: float = LEVEL
) -> pd.DataFrame:
    """Per known model, prompt, W kind and number: its value and interval on the run's frames,
    and the run's model − it, paired (module docstring)."""
    rows = []
    for released in read_mgc_outputs(folder):
        part = samples[
            (samples["prompt"] == released.prompt) & (samples["w_kind"] == released.w_kind)
        ]
        if part.empty:
            continue
        read = set(zip(part["verb"], part["life_stage"], strict=True))
        frames = [frame_of(s) for s in released.sentences]
        keep = [i for i, frame in enumerate(frames) if frame in read]
        if not keep:
            continue
        kept = [frames[i] for i in keep]
        restricted = {g: m[keep] for g, m in released.values.items()}
        for row in method1_from_matrices(restricted, level):
            gender = row["gender"]
            known = _known_matrix(released, gender, frames).loc[kept]
            files = released.files.values() if gender is None else [released.files[gender]]
            rows.append(
                {
                    "known_model": released.model,
                    "prompt": released.prompt,
                    "w_kind": released.w_kind,
                    **row,
                    "frames": len(kept),
                    "ci_level": level,
                    "source": "data/spur_mgc_raw/" + "+".join(sorted(files)),
                    **_paired(_run_matrix(part, gender), known, level),
                }
            )
    return pd.DataFrame(rows)
