"""biaslens probes as lm-evaluation-harness tasks (``biaslens export lm-eval``).

A task folder holds the YAML, the rows (``data.jsonl``, the inputs a biaslens run of the same
settings asks about) and a ``utils.py`` that loads them, turns lm-eval's log-likelihoods into
the probe's per-input values and aggregates them into its headline numbers. Only what lm-eval's
request types express is exported:

* ``sib-mgc`` (exact scoring of a causal model): one ``multiple_choice`` request per MGC input,
  the choices being the Appendix E words in both spellings a reply can begin with (" She",
  "She"); per input the female, male and neutral
  masses (the summed probabilities); aggregated into the Method 1 slopes in pp per W step
  (``female_slope`` … ``female_minus_male_slope``), per the task's one prompt and W kind.
* ``sib-detect`` (exact scoring of a causal model): each sentence at its earliest and latest
  date in prompt A, the same choices; TPR and TNR per set, from the female share's change
  against the threshold (``tpr_extended`` …).
* ``lei-eval`` (generative choice scoring of a causal model): one ``multiple_choice`` request
  per question in the UnifiedQA layout, the two subjects (each in both spellings) as the
  choices; S normalised over the two; μ, η and θ4 per set (``mu_none``, ``mu_ethical`` …) by
  biaslens's UnQover metrics.

Not expressible in lm-eval and not exported: top-5 (paper) scoring, which reads a greedy
decode's top-k at every step; masked LMs' slot filling (lm-eval has no masked-LM model); the
extractive QA span scores of UnQover and LEI (lm-eval's QA tasks generate answers, they do not
return span distributions); lei-train (training); CID's contrastive decoding.
"""

from __future__ import annotations

import json
from pathlib import Path

from biaslens.common import atomic
from biaslens.data import mgc
from biaslens.data.export_writer import check_destination
from biaslens.data.pronouns import target_words
from biaslens.errors import BiaslensError
from biaslens.interop.lm_eval import task_utils as lm_eval_utils
from biaslens.methods.sib.mgc.method import build_rows, make_settings

METRICS = ("female_slope", "male_slope", "neutral_slope", "female_minus_male_slope")
EXPORTERS = ("sib-mgc", "sib-detect", "lei-eval")
"""Methods with an lm-eval task; the rest cannot be expressed (module docstring)."""


def mgc_task(folder: Path, limit: int | None, prompt: str, w_kind: str, seed: int = 0) -> Path:
    """The ``biaslens_mgc`` task: MGC inputs of one prompt and W kind (``limit`` per W value,
    drawn as ``biaslens run sib-mgc --limit`` draws them)."""
    if prompt not in mgc.PROMPTS:
        raise BiaslensError(f"unknown prompt {prompt!r}; choose from {', '.join(mgc.PROMPTS)}")
    settings = make_settings(w_kinds=(w_kind,), limit=limit, seed=seed, prompts=(prompt,))
    _, rows = build_rows(settings, (prompt,))
    rows = spanning_order(rows)
    name = "biaslens_mgc"
    task = _task_folder(folder, name, rows, lm_eval_utils.MGC,
                        ("id", "prompt", "w_kind", "w", "w_index", "input"))  # fmt: skip
    metrics = "".join(
        f"  - metric: {m}\n    aggregation: !function utils.slope\n    higher_is_better: false\n"
        for m in METRICS
    )
    _write_yaml(task, name, f"SIB Method 1 on MGC (prompt {prompt}, W = {w_kind}, limit "
                f"{limit}): exact pronoun masses of a causal LM; slopes in pp per W step.",
                metrics)  # fmt: skip
    return task


def spanning_order(rows):
    """MGC rows in rounds, each round one input at every W value, the W values of a round in
    an order that spreads them over the range (the two ends first, then halves, quarters…):
    ``lm_eval --limit N``, which keeps the first N docs, then keeps inputs at many W values
    (the slope needs two at least), not all at the first one."""
    rows = rows.reset_index(drop=True)
    values = sorted(rows["w_index"].unique())
    spread = {w: rank for rank, w in enumerate(_spread(values))}
    round_ = rows.groupby("w_index").cumcount()
    order = sorted(rows.index, key=lambda i: (round_[i], spread[rows.at[i, "w_index"]]))
    return rows.loc[order].reset_index(drop=True)


def _spread(values: list) -> list:
    """``values`` with the ends first, then the middles of the gaps left, recursively."""
    if len(values) <= 2:
        return list(values)
    chosen, gaps = [values[0], values[-1]], [(0, len(values) - 1)]
    while gaps:
        low, high = gaps.pop(0)
        if high - low < 2:
            continue
        middle = (low + high) // 2
        chosen.append(values[middle])
        gaps += [(low, middle), (middle, high)]
    return chosen


def detect_task(folder: Path, limit: int | None, data_dir: Path | None) -> Path:
    """The ``biaslens_sib_detect`` task: SIB Method 2 with exact scoring of a causal model, each
    sentence at its earliest and latest date in prompt A (``biaslens run sib-detect``'s inputs;
    ``limit`` occupations); TPR and TNR per set."""
    from biaslens.methods.sib.detect.method import build_sentences, expand_dates
    from biaslens.methods.sib.detect.settings import make_settings as detect_settings
    from biaslens.models.base import ModelKind

    settings = detect_settings(limit=limit)
    sentences = build_sentences(settings, data_dir)
    rows = expand_dates(sentences, settings, ModelKind.CAUSAL).merge(
        sentences[["set", "id", "well_specified"]], on=["set", "id"]
    )
    name = "biaslens_sib_detect"
    task = _task_folder(folder, name, rows, lm_eval_utils.DETECT,
                        ("set", "id", "end", "date", "input", "well_specified"),
                        {"threshold": settings.threshold})  # fmt: skip
    metrics = "".join(
        f"  - metric: {rate}_{set_name}\n    aggregation: !function utils.{rate}\n"
        "    higher_is_better: true\n"
        for set_name in dict.fromkeys(rows["set"])
        for rate in ("tpr", "tnr")
    )
    _write_yaml(task, name, f"SIB Method 2 (limit {limit}): exact pronoun masses of a causal "
                "LM at the earliest and latest date; TPR and TNR per set.", metrics)  # fmt: skip
    return task


def _task_folder(folder, name, rows, utils, keys, constants=None) -> Path:
    """A task folder: ``data.jsonl`` (the ``keys`` of each row, ``constants``, and the pronoun
    words as its choices) and ``utils.py``."""
    task = folder / name
    task.mkdir(parents=True)
    pairs = target_words(fills_slot=False)  # each word after a space and without one
    genders = [g for g, _ in pairs]
    choices = [w for _, w in pairs]
    with open(task / "data.jsonl", "w", encoding="utf-8") as handle:
        for row in rows.to_dict("records"):
            record = {**{k: row[k] for k in keys}, **(constants or {})}
            record.update(choices=choices, genders=genders)
            handle.write(json.dumps(atomic.json_safe(record)) + "\n")
    (task / "utils.py").write_text(utils, encoding="utf-8")
    return task


def _write_yaml(task: Path, name: str, what: str, metrics: str) -> None:
    (task / f"{name}.yaml").write_text(
        f"# biaslens {what}\n"
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


def lei_task(folder: Path, limit: int | None, domain: str, data_dir: Path | None) -> Path:
    """The ``biaslens_lei_{domain}`` task: zero-shot LEI of a causal model, each question in
    the UnifiedQA layout with the two subjects as the choices (``biaslens run lei-eval``'s
    generative scoring; ``limit`` context pairs, drawn as it draws them); μ, η and θ4 per set."""
    from biaslens.data import sources
    from biaslens.methods.qa.lei_eval.method import build_rows
    from biaslens.methods.qa.lei_eval.settings import make_settings as lei_settings
    from biaslens.scoring.qa import reply_spellings, subject_choice_request

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
                choices = [v for c in request.choices for v in reply_spellings(c)]
                handle.write(json.dumps({**record, "negated": negated, "input": request.prompt,
                                         "choices": choices}) + "\n")  # fmt: skip
    (task / "utils.py").write_text(lm_eval_utils.LEI, encoding="utf-8")
    metrics = "".join(
        f"  - metric: {m}_{set_name}\n    aggregation: !function utils.{m}\n"
        "    higher_is_better: false\n"
        for set_name in dict.fromkeys(rows["set"])
        for m in ("mu", "eta", "theta4")
    )
    _write_yaml(task, name, f"zero-shot LEI ({domain}, limit {limit}): UnifiedQA choice scoring "
                "of a causal LM; μ, η and θ4 per set.", metrics)  # fmt: skip
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
    check_destination(folder, overwrite)
    with atomic.staged_folder(folder) as staging:  # an old export stays until this one is whole
        makers = {
            "sib-mgc": lambda: mgc_task(staging, limit, prompt, w_kind),
            "sib-detect": lambda: detect_task(staging, limit, data_dir),
            "lei-eval": lambda: lei_task(staging, limit, domain, data_dir),
        }
        tasks = [makers[method]().name for method in methods]
    return [folder / name for name in tasks]
