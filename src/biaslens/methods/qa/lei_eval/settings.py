"""The settings of ``lei-eval`` (zero-shot LEI) and their command-line options."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.common.seeds import Seed
from biaslens.data import lei
from biaslens.errors import BiaslensError
from biaslens.framework import options as O
from biaslens.framework.settings import (
    CiLevel,
    Limit,
    MethodSettings,
    Replicates,
    file_sha256,
    validated,
)
from biaslens.scoring.first_token import MIN_CANDIDATE_MASS
from biaslens.scoring.sampled import DEFAULT_SAMPLES, Samples

DOMAINS = ("religion", "ethnicity", "gender")


class LeiEvalSettings(MethodSettings):
    """Settings that decide a zero-shot LEI run's results.

    Input files (``split_file``, ``specified_sentences``, ``qa_file``) are recorded by their
    sha256, not their path, so a run resumes wherever the files are."""

    model: str = "default"
    domain: Literal["religion", "ethnicity", "gender"] = "religion"
    split: str = "noniid_test"
    split_sha256: str = ""
    mode: Literal["auto", "extractive", "generative", "first-token", "sampled"] = "auto"
    samples: Samples = DEFAULT_SAMPLES
    min_candidate_mass: float = Field(
        default=MIN_CANDIDATE_MASS,
        ge=0,
        le=1,
        description="first-token scoring: the least share of the probability the two "
        "candidates must hold for a question to have a score",
    )
    span_adjustment: Literal["none", "articles", "reference"] = Field(
        default="none", description="UnQover's adjustment of S by neighbouring words (extractive)"
    )
    qa_order: Literal["question-first", "context-first"] = Field(
        default="question-first", description="extractive input order"
    )
    limit: Limit = Field(default=None, description="context pairs, stratified")
    seed: Seed = 0
    ci_level: CiLevel = 0.95
    bootstrap: Replicates = Field(
        default=1000, description="replicates over subject pair × template units (0: none)"
    )
    specified_sha256: str = ""
    qa_sha256: str = ""
    qa_limit: Limit = None
    specified_answers: tuple[str, ...] | None = Field(
        default=None,
        description="answer clusters or subjects of the specified subsets (default: gender "
        "female and male; another domain needs its subjects named)",
    )
    specified_file_sha256: str = ""
    split_file: Path | None = Field(default=None, exclude=True)
    specified_sentences: Path | None = Field(default=None, exclude=True)
    specified_file: Path | None = Field(
        default=None,
        exclude=True,
        description="specified-context examples in the LEI release's layout (e.g. the authors' "
        "female file, which the public release lacks); default: the public male sample",
    )
    qa_file: Path | None = Field(default=None, exclude=True)


def make_settings(
    split_file: Path | None = None,
    specified_sentences: Path | None = None,
    qa_file: Path | None = None,
    specified_file: Path | None = None,
    **values,
) -> LeiEvalSettings:
    domain = values.get("domain", "religion")
    if domain not in DOMAINS:
        raise BiaslensError(f"unknown domain {domain!r}; LEI has {', '.join(DOMAINS)}")
    split = values.get("split", "noniid_test")
    if split_file is None and f"{domain}/{split}" not in lei.SPLITS:
        known = [k.split("/")[1] for k in lei.SPLITS if k.startswith(domain + "/")]
        raise BiaslensError(f"no LEI split {split!r} for {domain}; known: {', '.join(known)}")
    files = {
        "split": ("split_file", split_file, "split file"),
        "specified": ("specified_sentences", specified_sentences, "specifying-sentences file"),
        "qa": ("qa_file", qa_file, "QA file"),
        "specified_file": ("specified_file", specified_file, "specified-context file"),
    }
    for name, (field, path, what) in files.items():
        if path is not None:
            values[f"{name}_sha256"] = file_sha256(path, what)
            values[field] = Path(path)
    if split_file is not None:
        values["split"] = Path(split_file).name
    return validated(LeiEvalSettings, values)


OPTIONS = (
    O.MODEL,
    O.Option("domain", help="religion, ethnicity or gender."),
    O.Option("split", help="Official split: noniid_test, noniid_dev, train_64 …"),
    O.Option("split_file", help="A SQuAD-format LEI split.", type=Path),
    O.Option(
        "mode",
        "--qa-mode",
        "--mode",
        help="auto (from the model kind and backend), extractive, generative (the candidates' "
        "log-likelihood), first-token (the top-20 first answer tokens: a chat endpoint) or "
        "sampled (the share of --samples replies that begin with each subject: an endpoint "
        "without log-probabilities).",
        deprecated=(("--mode", "--qa-mode"),),
    ),
    O.SAMPLES,
    O.Option(
        "min_candidate_mass",
        help="First-token scoring: a question whose two candidates hold less of the first "
        "token's probability than this (0 to 1) has no score.",
        type=float,
    ),
    O.SPAN_ADJUSTMENT,
    O.QA_ORDER,
    O.Option(
        "span_adjustment",
        "--head-words",
        help="Deprecated: --span-adjustment articles.",
        type=bool,
        sets="articles",
        hidden=True,
        deprecated=(("--head-words", "--span-adjustment articles"),),
    ),
    O.Option("limit", help="Context pairs, stratified (seeded; 0: all).", type=int),
    O.SEED,
    O.CI_LEVEL,
    O.BOOTSTRAP,
    O.Option(
        "specified_sentences",
        help="TSV attribute<TAB>sentence with [subj] (Q_N).",
        type=Path,
    ),
    O.Option(
        "specified_file",
        help="Specified-context examples in the LEI release's JSON layout (e.g. the authors' "
        "female file of Fig. 6, not in the public release).",
        type=Path,
    ),
    O.Option(
        "specified_answers",
        "--specified-answer",
        help="Answer cluster(s) or subject(s) of the specified subsets, one row each "
        "(gender default: female male; e.g. Muslim for religion).",
        multiple=True,
    ),
    O.QA_FILE,
    O.QA_LIMIT,
)
"""The options of ``biaslens run lei-eval``."""
