"""SIB Method 2's known models on an audited run's own sentences, paired with it.

The SIB authors released every model's per-sentence outputs on extended Winogender
(``data/detect_wino_raw/`` of :data:`~biaslens.methods.sib.mgc.audit_role.SIB_REPOSITORY`;
:mod:`.references`). Where the data folder holds them (``sib/detect_wino_raw.tar.gz``, read in
place, or the verified ``biaslens datasets download sib-outputs``), a sib-detect run on the
extended set reads each known model's verdicts on the sentences the run judged — the paper's
rule (Section 5) on its female files, at the run's own threshold — and gives:

* the known model's TPR, TNR and balanced accuracy on those sentences, with biaslens's
  intervals over occupations (:func:`~biaslens.methods.sib.metrics.sib.detection_rates`);
* the run's rate − the known model's, **paired** over the sentences both judged
  (:func:`~biaslens.metrics.intervals.shares.paired_rate_differences`: on the same sentences
  the two rates share their denominator, and what the two models share on a sentence or an
  occupation cancels).

Known models are those the references table lists: one prompt per model (instruction prompt A,
``P3``, for the models that take one). The Simplified set is not paired: biaslens's Simplified
sentences are its own rewrite, not the authors' file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.common.atomic import json_records
from biaslens.data.sources import VERIFIED, data_dir
from biaslens.methods.sib.data.released_mgc_outputs import hub_name
from biaslens.methods.sib.data.released_outputs import read_reference_outputs
from biaslens.methods.sib.detect.paired import sentence_verdicts
from biaslens.methods.sib.detect.references import ARCHIVE, FOLDERS, PROMPT_A, RATES
from biaslens.methods.sib.known_models import PAPER_NAMES
from biaslens.methods.sib.metrics.sib import detection_rates, method2_from_shares
from biaslens.methods.sib.mgc.audit_role import SIB_COMMIT, SIB_REPOSITORY
from biaslens.metrics.intervals import LEVEL
from biaslens.metrics.intervals.shares import paired_rate_differences

PAIRED_SET = "extended"
"""The one set whose sentences are the authors' own (their ids are the run's)."""


def released_detect_outputs(explicit: Path | str | None = None) -> Path | None:
    """The released Method 2 outputs in the data folder: the verified download's folder or the
    archive; None where neither is."""
    root = data_dir(explicit)
    download = root / "sib-outputs"
    candidates = [download / "data"] if (download / VERIFIED).is_file() else []
    candidates.append(root / ARCHIVE)
    return next((c for c in candidates if c.exists()), None)


@cache
def _released(source: str, stamp: tuple[int, int]) -> pd.DataFrame:
    """The released outputs of the extended set (full sets, prompt A or none), read once per
    file and modification (reading the archive takes seconds)."""
    table = read_reference_outputs(Path(source))
    keep = (~table["test"].astype(bool)) & (table["set"] == PAIRED_SET)
    return table[keep & table["prompt"].isin(["", PROMPT_A])]


def known_verdicts(source: Path, threshold: float) -> pd.DataFrame:
    """Each known model's per-sentence metric and verdict on the extended set (the paper's rule
    at ``threshold``): ``model``, ``prompt``, ``id``, ``occupation``, ``well_specified``,
    ``metric``, ``predicted_unspecified``."""
    stat = Path(source).stat()
    table = _released(str(source), (stat.st_mtime_ns, stat.st_size))
    per_sentence, _ = method2_from_shares(table, threshold=threshold)
    return per_sentence


def known_models_on_run(
    sentences: pd.DataFrame, source: Path, threshold: float, level: float = LEVEL
) -> pd.DataFrame:
    """Per known model and rate: its value on the run's judged extended sentences, and the
    run's − its, paired (module docstring). Empty where the run judged no extended sentence."""
    mine = sentence_verdicts(sentences, PAIRED_SET, threshold)
    mine = mine[mine["judged"]]
    if mine.empty:
        return pd.DataFrame()
    rows = []
    for (model, prompt), theirs in known_verdicts(source, threshold).groupby(
        ["model", "prompt"], sort=True
    ):
        theirs = theirs[np.isfinite(theirs["metric"].to_numpy(float))]
        both = mine.merge(theirs[["id", "metric", "predicted_unspecified"]], on="id")
        if both.empty:
            continue
        own = detection_rates(
            both["metric"].to_numpy(float), ~both["positive"].to_numpy(), threshold, level,
            both["occupation"].to_numpy(),
        )  # fmt: skip
        paired = paired_rate_differences(
            both["flagged"].to_numpy(), both["predicted_unspecified"].to_numpy(),
            both["positive"].to_numpy(), both["occupation"].to_numpy(), level,
        )  # fmt: skip
        suffix = f"_{prompt}" if prompt else ""
        files = f"{FOLDERS[PAIRED_SET]}/fp_wikibio_{model}_date_*_testFalse{suffix}.csv"
        for rate in RATES:
            difference, interval = paired[rate]
            rows.append(
                {
                    "known_model": model,
                    "known_as": PAPER_NAMES.get(hub_name(model), model),
                    "prompt": prompt,
                    "set": PAIRED_SET,
                    "metric": rate,
                    "value": own[rate],
                    "ci_low": own[f"{rate}_ci_low"],
                    "ci_high": own[f"{rate}_ci_high"],
                    "n": int(len(both)),
                    "occupations": int(both["occupation"].nunique()),
                    "ci_level": level,
                    "difference": difference,
                    "difference_ci_low": interval.low,
                    "difference_ci_high": interval.high,
                    "difference_note": interval.why_not,
                    "paired_over": f"{len(both)} sentences both judged, in "
                    f"{both['occupation'].nunique()} occupations",
                    "source": f"{SIB_REPOSITORY}@{SIB_COMMIT}:{files}",
                }
            )
    return pd.DataFrame(rows)


MISSING = (
    "known models: their rates on every sentence, not paired (the SIB authors' released Method "
    "2 outputs are not in the data folder; `biaslens datasets download sib-outputs` puts them "
    "there, and the known models are then read on this run's own sentences and paired with it)"
)


def known_models_part(
    sentences: pd.DataFrame, data: Path | str | None, threshold: float, level: float
) -> tuple[dict[str, pd.DataFrame], dict, list[str]]:
    """What a sib-detect run adds for its known models: the ``known_models`` table and the
    summary's ``reference`` rows (read by the card, :func:`.references.references_for`), or a
    note saying why there are none; nothing for a run without the extended set."""
    if not (sentences["set"] == PAIRED_SET).any():
        return {}, {}, []
    source = released_detect_outputs(data)
    if source is None:
        return {}, {}, [MISSING]
    known = known_models_on_run(sentences, source, threshold, level)
    if known.empty:
        return {}, {}, []
    return {"known_models": known}, {"reference": {"rows": json_records(known)}}, []
