"""SIB Method 2 in ``biaslens audit``: the known models' detector rates beside an audited run,
computed from the SIB authors' released per-sentence outputs (never typed from Table 3).

Shipped: ``data/files/references/sib-detect.csv`` — TPR, TNR and balanced accuracy, with
biaslens's intervals over occupations, of every model whose Method 2 outputs the SIB authors
released (``2dot71mily/sib_paper`` @ :data:`~biaslens.methods.sib.mgc.audit_role.SIB_COMMIT`,
``data/detect_wino_raw/`` for extended Winogender and ``data/detect_wino_mod_raw/`` for their
Simplified set), computed by :func:`sib_detect_references` from the archive of those folders
(``sib/detect_wino_raw.tar.gz`` of the shared data, read in place; ``python
scripts/reference_values.py DATA_DIR`` writes the file; a test recomputes it).

**Why these are not Table 3's numbers.** The rule is the paper's (Section 5: |p_f(2016) −
p_f(1901)| in points of the female share, unspecified above 0.5), applied to each sentence's
female file. The reference code's processed statistics (``*_delta_stats.csv``, from which Table
3 was printed) kept one of each sentence's three files — female, male or neutral, whichever was
read last — so Table 3 reads a mixture (BERT-base, extended: TPR / TNR 0.769 / 0.608 printed,
0.853 / 0.492 from the female files). See ``docs/reproduction.md``.

Their protocol is ``--preset paper``'s: top-5 pronoun scoring (masked LMs and span denoisers),
greedy generation under instruction prompt A for instruction-following models (``P3`` in the
file names; prompts B and C only for some), ``In DATE:`` date injection, every occupation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.data.sources import PACKAGE_FILES
from biaslens.framework.hooks import paired_fields, reference_row
from biaslens.methods.sib.data.released_mgc_outputs import hub_name
from biaslens.methods.sib.data.released_outputs import read_reference_outputs
from biaslens.methods.sib.known_models import PAPER_NAMES
from biaslens.methods.sib.metrics.sib import method2_from_shares
from biaslens.methods.sib.mgc.audit_role import SIB_COMMIT, SIB_REPOSITORY
from biaslens.metrics.intervals import LEVEL

SIB_DETECT_FILE = PACKAGE_FILES / "references" / "sib-detect.csv"
ARCHIVE = Path("sib") / "detect_wino_raw.tar.gz"
"""The released Method 2 outputs, relative to the data folder."""
FOLDERS = {"extended": "data/detect_wino_raw", "simplified-reference": "data/detect_wino_mod_raw"}
"""Where each set's files are in the authors' repository (the Simplified set's is their own
file: ``--set simplified-reference``)."""
PROMPT_A = "P3"
"""The file suffix of instruction prompt A, the paper's Method 2 prompt."""
RATES = ("tpr", "tnr", "balanced_accuracy")
_CODE = (
    "SIB reference code: top-5 pronoun scoring (masked LMs, span denoisers) or greedy "
    "generation (prompt A), 'In DATE:' injection, 1901 and 2016"
)
PROTOCOL = _CODE + ", every occupation"
SAME_SENTENCES = _CODE + ", on the sentences this run judged"
SAME_PROTOCOL = {"mode": "paper", "date_format": "colon", "empty_mass": "zero", "average_n": 1}


def sib_detect_references(archive: Path, level: float = LEVEL) -> pd.DataFrame:
    """The reference table from the released archive (or a folder holding the two released
    folders): one row per model, prompt, set and rate."""
    table = read_reference_outputs(archive)
    table = table[~table["test"].astype(bool)]
    table = table.assign(set=table["set"].replace({"simplified": "simplified-reference"}))
    _, rates = method2_from_shares(table, level=level)
    rows = []
    for rate in rates.to_dict(orient="records"):
        suffix = f"_{rate['prompt']}" if rate["prompt"] else ""
        files = f"{{f,m,n}}p_wikibio_{rate['model']}_date_*_testFalse{suffix}.csv"
        counts = {"tpr": rate["n_tpr"], "tnr": rate["n_tnr"]}
        for metric in RATES:
            rows.append(
                {
                    "model": rate["model"],
                    "known_as": PAPER_NAMES.get(hub_name(rate["model"]), rate["model"]),
                    "prompt": rate["prompt"],
                    "set": rate["set"],
                    "metric": metric,
                    "value": rate[metric],
                    "ci_low": rate[f"{metric}_ci_low"],
                    "ci_high": rate[f"{metric}_ci_high"],
                    "n": counts.get(metric, rate["n_tpr"] + rate["n_tnr"]),
                    "occupations": rate["n_clusters"],
                    "ci_level": level,
                    "source": f"{SIB_REPOSITORY}@{SIB_COMMIT}:{FOLDERS[rate['set']]}/{files}",
                }
            )
    return pd.DataFrame(rows)


def load_sib_detect() -> pd.DataFrame:
    """The shipped reference table (``prompt`` empty: a model that takes no prompt)."""
    table = pd.read_csv(SIB_DETECT_FILE, keep_default_na=False, na_values=[""])
    return table.assign(prompt=table["prompt"].fillna(""))


def protocol_gap(
    settings: dict[str, Any], run_set: str, same_sentences: bool = False
) -> str | None:
    """Why a sib-detect run's rates on ``run_set`` are not on the references' protocol (None:
    they are); ``same_sentences``: the references were read on the run's own sentences."""
    gaps = [
        f"{key} {settings.get(key)!r} (the references: {value!r})"
        for key, value in SAME_PROTOCOL.items()
        if settings.get(key) != value
    ]
    if (settings.get("earliest"), settings.get("latest")) != (1901, 2016):
        gaps.append("other dates than 1901 and 2016")
    if run_set == "simplified":
        gaps.append("biaslens's Simplified rewrite (the references: the authors' own file)")
    if settings.get("limit") and not same_sentences:
        gaps.append(f"the first {settings['limit']} occupations (the references: all)")
    return "; ".join(gaps) or None


def references_for(rows: list, record) -> list[dict[str, Any]]:
    """The known models' rates beside an audited run's card ``rows``: the same rate on the same
    set (prompt A for the models that take a prompt), with whether the protocol is the same —
    on the run's own sentences, with the paired difference, where the run read them from the
    released outputs (``summary.json``'s ``reference``: :mod:`.known_paired`), else the
    shipped values on every sentence."""
    settings = record.settings
    table = load_sib_detect()
    table = table[(table["prompt"] == "") | (table["prompt"] == PROMPT_A)]
    same = (getattr(record, "metrics", None) or {}).get("reference")
    paired = pd.DataFrame(same["rows"]) if same else None
    found = []
    for row in rows:
        run_set = row.labels.get("set")
        if row.metric not in RATES or run_set not in ("simplified", *FOLDERS):
            continue
        if paired is not None and run_set in set(paired["set"]):
            chosen = paired[(paired["metric"] == row.metric) & (paired["set"] == run_set)]
            gap = protocol_gap(settings, run_set, same_sentences=True)
            for reference in chosen.to_dict(orient="records"):
                model = f"{reference['known_as']} ({reference['known_model']})"
                found.append(reference_row(model, row, reference, SAME_SENTENCES, gap))
                found[-1].update(paired_fields(reference))
            continue
        wanted = "simplified-reference" if run_set == "simplified" else run_set
        chosen = table[(table["metric"] == row.metric) & (table["set"] == wanted)]
        gap = protocol_gap(settings, run_set)
        found += [
            reference_row(
                f"{reference['known_as']} ({reference['model']})", row, reference, PROTOCOL, gap
            )
            for reference in chosen.to_dict(orient="records")
        ]
    return found
