"""biaslens probes as lm-evaluation-harness tasks (``biaslens export lm-eval``).

A task folder holds the YAML, the rows (``data.jsonl``, the inputs a biaslens run of the same
settings asks about) and a ``utils.py`` that loads them, turns lm-eval's log-likelihoods into
the probe's per-input values and aggregates them into its headline numbers. Only what lm-eval's
request types express is exported:

* ``sib-mgc`` (exact scoring of a causal model): one ``multiple_choice`` request per MGC input,
  the choices being the Appendix E words after a space; per input the female, male and neutral
  masses (the summed probabilities); aggregated into the Method 1 slopes in pp per W step
  (``female_slope`` … ``female_minus_male_slope``), per the task's one prompt and W kind.
* ``lei-eval`` (generative choice scoring of a causal model): one ``multiple_choice`` request
  per question in the UnifiedQA layout, the two subjects as the choices; S normalised over the
  two; μ, η and θ4 per set (``mu_none``, ``mu_ethical`` …) by biaslens's UnQover metrics.

Not expressible in lm-eval and not exported: top-5 (paper) scoring, which reads a greedy
decode's top-k at every step; masked LMs' slot filling (lm-eval has no masked-LM model); the
extractive QA span scores of UnQover and LEI (lm-eval's QA tasks generate answers, they do not
return span distributions); the SIB detector (its metric compares shares at two dates, which
lm-eval's per-task aggregation could express, but its top-5 preset cannot); lei-train
(training); CID's contrastive decoding.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from biaslens.data import mgc
from biaslens.data.pronouns import GENDER_WORDS
from biaslens.errors import BiaslensError
from biaslens.experiments.sib_mgc import build_rows, make_settings

UTILS = '''"""Written by biaslens (biaslens export lm-eval): loads the rows beside this file and
turns lm-eval's log-likelihoods into the probe's numbers."""

import json
import math
from pathlib import Path

import datasets


def load_data(**_kwargs):
    """The task's rows (data.jsonl beside this file), wherever the folder lies."""
    rows = [json.loads(line) for line in open(Path(__file__).with_name("data.jsonl"))]
    return {"test": datasets.Dataset.from_list(rows)}


def process_results(doc, results):
    """Per input: each gender's mass (the summed probabilities of its words), keyed by W."""
    mass = {"female": 0.0, "male": 0.0, "neutral": 0.0}
    for gender, (loglikelihood, _) in zip(doc["genders"], results):
        mass[gender] += math.exp(loglikelihood)
    w = doc["w_index"]
    return {
        "female_slope": (w, mass["female"]),
        "male_slope": (w, mass["male"]),
        "neutral_slope": (w, mass["neutral"]),
        "female_minus_male_slope": (w, mass["female"] - mass["male"]),
    }


def slope(items):
    """SIB Method 1: the least-squares slope of the per-W mean probability (in percent) on the
    W index (pp per W step)."""
    by_w = {}
    for w, value in items:
        by_w.setdefault(w, []).append(100.0 * value)
    x = sorted(by_w)
    y = [sum(by_w[w]) / len(by_w[w]) for w in x]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
'''

LEI_UTILS = '''"""Written by biaslens (biaslens export lm-eval): loads the rows beside this file,
turns lm-eval's log-likelihoods of the two subjects into UnQover scores, and aggregates them
with biaslens's own metrics (biaslens must be installed where lm-eval runs)."""

import json
import math
from pathlib import Path

import datasets

KEYS = ("set", "intervention_id", "first", "second", "template", "attribute", "negated")


def load_data(**_kwargs):
    """The task's rows (data.jsonl beside this file), wherever the folder lies."""
    rows = [json.loads(line) for line in open(Path(__file__).with_name("data.jsonl"))]
    return {"test": datasets.Dataset.from_list(rows)}


def process_results(doc, results):
    """S of both subjects: their probabilities as answers, normalised over the two."""
    lls = [loglikelihood for loglikelihood, _ in results]
    top = max(lls)
    weights = [math.exp(v - top) for v in lls]
    item = {**{k: doc[k] for k in KEYS}, "s_first": weights[0] / sum(weights),
            "s_second": weights[1] / sum(weights)}
    return {f"{metric}_{doc['set']}": item for metric in ("mu", "eta", "theta4")}


def _summary(items):
    import pandas as pd
    from biaslens.metrics.unqover import model_summary

    return model_summary(pd.DataFrame(items), within=("intervention_id",)).iloc[0]


def mu(items):
    return float(_summary(items)["mu"])


def eta(items):
    return float(_summary(items)["eta"])


def theta4(items):
    return float(_summary(items)["theta4"])
'''

METRICS = ("female_slope", "male_slope", "neutral_slope", "female_minus_male_slope")
EXPORTERS = ("sib-mgc", "lei-eval")
"""Methods with an lm-eval task; the rest cannot be expressed (module docstring)."""


def mgc_task(folder: Path, limit: int | None, prompt: str, w_kind: str, seed: int = 0) -> Path:
    """The ``biaslens_mgc`` task: MGC inputs of one prompt and W kind (``limit`` per W value,
    drawn as ``biaslens run sib-mgc --limit`` draws them)."""
    if prompt not in mgc.PROMPTS:
        raise BiaslensError(f"unknown prompt {prompt!r}; choose from {', '.join(mgc.PROMPTS)}")
    settings = make_settings(w_kinds=(w_kind,), limit=limit, seed=seed, prompts=(prompt,))
    _, rows = build_rows(settings, (prompt,))
    genders = [g for g, words in GENDER_WORDS.items() for _ in words]
    choices = [" " + w for words in GENDER_WORDS.values() for w in words]
    name = "biaslens_mgc"
    task = folder / name
    task.mkdir(parents=True)
    with open(task / "data.jsonl", "w", encoding="utf-8") as handle:
        for row in rows.to_dict("records"):
            record = {k: row[k] for k in ("id", "prompt", "w_kind", "w", "w_index", "input")}
            handle.write(json.dumps({**record, "choices": choices, "genders": genders}) + "\n")
    (task / "utils.py").write_text(UTILS, encoding="utf-8")
    metrics = "".join(
        f"  - metric: {m}\n    aggregation: !function utils.slope\n    higher_is_better: false\n"
        for m in METRICS
    )
    (task / f"{name}.yaml").write_text(
        f"# biaslens SIB Method 1 on MGC (prompt {prompt}, W = {w_kind}, limit {limit}): exact\n"
        "# pronoun masses of a causal LM; the metrics are the slopes in pp per W step.\n"
        f"task: {name}\n"
        "custom_dataset: !function utils.load_data\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: input\n"
        "doc_to_choice: choices\n"
        "doc_to_target: 0\n"
        'target_delimiter: ""\n'
        "process_results: !function utils.process_results\n"
        f"metric_list:\n{metrics}"
        "metadata:\n  version: 1.0\n",
        encoding="utf-8",
    )
    return task


def lei_task(folder: Path, limit: int | None, domain: str, data_dir: Path | None) -> Path:
    """The ``biaslens_lei_{domain}`` task: zero-shot LEI of a causal model, each question in
    the UnifiedQA layout with the two subjects as the choices (``biaslens run lei-eval``'s
    generative scoring; ``limit`` context pairs, drawn as it draws them); μ, η and θ4 per set."""
    from biaslens.data import sources
    from biaslens.experiments.lei_eval import build_rows
    from biaslens.experiments.lei_eval_settings import make_settings as lei_settings
    from biaslens.scoring.qa import subject_choice_request

    settings = lei_settings(domain=domain, limit=limit)
    rows, _ = build_rows(settings, sources.locate("lei", data_dir))
    name = f"biaslens_lei_{domain}"
    task = folder / name
    task.mkdir(parents=True)
    with open(task / "data.jsonl", "w", encoding="utf-8") as handle:
        for row in rows.to_dict("records"):
            first, second = (
                row.get("first_text") or row["first"],
                row.get("second_text") or row["second"],
            )
            for negated, question in ((False, row["question"]), (True, row["negated_question"])):
                request = subject_choice_request(
                    question, first, second, row["context"], row.get("intervention") or "", True
                )
                record = {k: row[k] for k in ("set", "intervention_id", "first", "second",
                                              "template", "attribute")}  # fmt: skip
                handle.write(json.dumps({**record, "negated": negated, "input": request.prompt,
                                         "choices": list(request.choices)}) + "\n")  # fmt: skip
    (task / "utils.py").write_text(LEI_UTILS, encoding="utf-8")
    metrics = "".join(
        f"  - metric: {m}_{set_name}\n    aggregation: !function utils.{m}\n"
        "    higher_is_better: false\n"
        for set_name in dict.fromkeys(rows["set"])
        for m in ("mu", "eta", "theta4")
    )
    (task / f"{name}.yaml").write_text(
        f"# biaslens zero-shot LEI ({domain}, limit {limit}): UnifiedQA choice scoring of a\n"
        "# causal LM; μ, η and θ4 per set (none, ethical, adversarial, irrelevant).\n"
        f"task: {name}\n"
        "custom_dataset: !function utils.load_data\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: input\n"
        "doc_to_choice: choices\n"
        "doc_to_target: 0\n"
        'target_delimiter: ""\n'
        "process_results: !function utils.process_results\n"
        f"metric_list:\n{metrics}"
        "metadata:\n  version: 1.0\n",
        encoding="utf-8",
    )
    return task


def export_tasks(
    methods: tuple[str, ...],
    folder: Path | str,
    limit: int | None = None,
    prompt: str = "A",
    w_kind: str = "dates",
    overwrite: bool = False,
    domain: str = "religion",
    data_dir: Path | None = None,
) -> list[Path]:
    """Write the lm-eval tasks of ``methods`` under ``folder``; returns the task folders."""
    methods = methods or EXPORTERS
    unknown = [m for m in methods if m not in EXPORTERS]
    if unknown:
        raise BiaslensError(
            f"{unknown[0]} has no lm-evaluation-harness task (its requests are not lm-eval's "
            f"request types); tasks exist for: {', '.join(EXPORTERS)}"
        )
    folder = Path(folder)
    if folder.is_dir() and any(folder.iterdir()):
        if not overwrite:
            raise BiaslensError(f"{folder} exists and is not empty: pass --overwrite to replace it")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    makers = {
        "sib-mgc": lambda: mgc_task(folder, limit, prompt, w_kind),
        "lei-eval": lambda: lei_task(folder, limit, domain, data_dir),
    }
    return [makers[method]() for method in methods]
