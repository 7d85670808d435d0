"""The settings of ``lei-eval`` (zero-shot LEI), each with its command-line flag."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from biaslens.common.options import FLAG, Flag
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole, AuditStep
from biaslens.framework.settings import (
    QA_MODE_FLAG,
    CiLevel,
    Limit,
    MethodSettings,
    ModelName,
    QaFile,
    QaLimit,
    QaOrder,
    RandomSeed,
    Replicates,
    SpanAdjustment,
    SubjectsAre,
    file_sha256,
    validated,
)
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.lei_eval.reference import references_for
from biaslens.methods.qa.paired import paired_lei
from biaslens.methods.qa.questions import LEI_QUESTIONS
from biaslens.methods.qa.scoring.first_token import MIN_CANDIDATE_MASS
from biaslens.scoring.sampled import DEFAULT_SAMPLES, Allocation, Samples

Domain = Literal["religion", "ethnicity", "gender"]
DOMAINS: tuple[str, ...] = get_args(Domain)


class LeiEvalSettings(MethodSettings):
    """Settings that decide a zero-shot LEI run's results.

    Input files (``split_file``, ``specified_sentences``, ``qa_file``) are recorded by their
    sha256, not their path, so a run resumes wherever the files are."""

    model: ModelName = "default"
    domain: Annotated[Domain, FLAG] = Field(
        default="religion", description="LEI domain: religion, ethnicity or gender."
    )
    split: Annotated[str, FLAG] = Field(
        default="noniid_test", description="Official split: noniid_test, noniid_dev, train_64 …"
    )
    split_sha256: str = ""
    mode: Annotated[
        Literal["auto", "extractive", "generative", "first-token", "sampled"], QA_MODE_FLAG
    ] = Field(
        default="auto",
        description="auto (from the model kind and backend), extractive, generative (the "
        "candidates' log-likelihood), first-token (the top-20 first answer tokens: a chat "
        "endpoint) or sampled (the share of --samples replies that begin with each subject: an "
        "endpoint without log-probabilities).",
    )
    samples: Samples = DEFAULT_SAMPLES
    allocation: Allocation = "adaptive"
    min_candidate_mass: Annotated[float, FLAG] = Field(
        default=MIN_CANDIDATE_MASS,
        ge=0,
        le=1,
        description="First-token scoring: a question whose two candidates hold less of the "
        "first token's probability than this (0 to 1) has no score.",
    )
    span_adjustment: Annotated[SpanAdjustment, Flag(switch=("--head-words", "articles"))] = "none"
    qa_order: QaOrder = "question-first"
    limit: Limit = Field(default=None, description="Context pairs, stratified (seeded; 0: all).")
    per_cell: Annotated[int | None, FLAG] = Field(
        default=None,
        ge=1,
        description="Instead of --limit: draw context pairs until every (subject, attribute) "
        "cell of each set holds this many subject pair × template units (seeded), so that μ "
        "and η read every cell.",
    )
    seed: RandomSeed = 0
    ci_level: CiLevel
    bootstrap: Replicates = 1000
    subjects_are: SubjectsAre = "auto"
    specified_sha256: str = ""
    qa_sha256: str = ""
    qa_limit: QaLimit = None
    specified_answers: Annotated[tuple[str, ...] | None, Flag("--specified-answer")] = Field(
        default=None,
        description="Answer cluster(s) or subject(s) of the specified subsets, one row each "
        "(gender default: female male; e.g. Muslim for religion).",
    )
    specified_file_sha256: str = ""
    split_file: Annotated[Path | None, FLAG] = Field(
        default=None, exclude=True, description="A SQuAD-format LEI split."
    )
    specified_sentences: Annotated[Path | None, FLAG] = Field(
        default=None, exclude=True, description="TSV attribute<TAB>sentence with [subj] (Q_N)."
    )
    specified_file: Annotated[Path | None, FLAG] = Field(
        default=None,
        exclude=True,
        description="Specified-context examples in the LEI release's JSON layout (e.g. the "
        "authors' female file of Fig. 6, not in the public release); default: the public male "
        "sample.",
    )
    qa_file: QaFile = None

    @model_validator(mode="after")
    def _one_draw(self):
        if self.limit is not None and self.per_cell is not None:
            raise ValueError("--limit and --per-cell are two ways to draw a subset: give one")
        return self


def make_settings(
    split_file: Path | None = None,
    specified_sentences: Path | None = None,
    qa_file: Path | None = None,
    specified_file: Path | None = None,
    **values,
) -> LeiEvalSettings:
    domain = values.get("domain", LeiEvalSettings.model_fields["domain"].default)
    if domain not in DOMAINS:
        raise BiaslensError(f"unknown domain {domain!r}; LEI has {', '.join(DOMAINS)}")
    split = values.get("split", LeiEvalSettings.model_fields["split"].default)
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


AUDIT = AuditRole(  # quick: 4 units in every (subject, attribute) cell of each religion set
    sizes={
        "quick": (AuditStep({"domain": "religion", "per_cell": 4}, "religion"),),
        "standard": (AuditStep({"domain": "religion"}, "religion"),),
        "paper": tuple(AuditStep({"domain": d, "limit": 0}, d, "paper") for d in DOMAINS),
    },
    questions=LEI_QUESTIONS,
    references=references_for,
    paired=paired_lei,
)
"""lei-eval in ``biaslens audit``."""
