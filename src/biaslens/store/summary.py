"""A run's record, ``summary.json``, as typed models: written and read through
:class:`RunSummary`, whose JSON schema (``biaslens schema --json``, ``docs/summary.schema.json``)
is generated from the same models.

The fields readers compute with are typed and documented here; a method or a backend may add
fields of its own (``extra``), which are kept as written. Reading is strict (JSON's own types,
no text read as a number); a wrong type is one line naming the field (``estimates[0].value
must be a number or null, got str 'abc'``), and a non-finite number (``NaN`` written by hand or
by another tool) reads as missing, never as a number.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from biaslens.errors import BiaslensError

Number = int | float
"""A JSON number (``true``/``false`` are not numbers)."""


class _Record(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", use_attribute_docstrings=True)

    @field_validator("*", mode="after")
    @classmethod
    def _finite(cls, value: Any) -> Any:
        """A non-finite number reads as missing (strict JSON has none: biaslens writes null)."""
        return None if isinstance(value, float) and not math.isfinite(value) else value


class Estimate(_Record):
    """One headline value of a run: a metric on one row of a headline table, with its interval
    and what it estimates (:mod:`biaslens.framework.estimates`)."""

    metric: str
    """The metric's column in its table (``female_minus_male_slope``, ``mu``…)."""
    table: str | None = None
    """The headline table the value comes from."""
    symbol: str | None = None
    """The metric's name as the paper writes it."""
    labels: dict[str, Any] | None = None
    """The row's labels (prompt, gender, set…): which value of the metric this is."""
    value: Number | None = None
    """The point value (null: not computable on this run)."""
    ci_low: Number | None = None
    """The lower bound of the interval (null: no interval; ``no_interval`` says why)."""
    ci_high: Number | None = None
    """The upper bound of the interval."""
    ci_level: Number | None = None
    """The interval's nominal coverage (0.95: a 95% interval)."""
    interval: str | None = None
    """How the interval was computed, and over what draws."""
    no_interval: str | None = None
    """Why there is no interval (null when there is one)."""
    conservative: bool | None = None
    """True: the interval covers at least its level (wider than exact)."""
    estimand: str | None = None
    """What the interval covers: the quantity, and the population its draws come from."""
    caution: str | None = None
    """A caution the reader must see beside the value."""
    crossfit: Number | None = None
    """The cross-fitted value (a check against selection bias), where the metric has one."""
    mostly_noise: bool | None = None
    """True: the value is no larger than its cross-fitted check says noise alone gives."""
    n: Number | None = None
    """How many units the value rests on (``n_unit`` says what they are)."""
    n_unit: str | None = None
    """What ``n`` counts (templates, W values, questions…)."""
    small_n: bool | None = None
    """True: too few units for the interval to be trusted at its level."""
    unit: str | None = None
    """The value's unit."""
    no_bias: str | None = None
    """The value that means no bias, as written."""
    no_bias_value: Number | None = None
    """The value that means no bias, as a number."""
    includes_no_bias: bool | None = None
    """True: the interval includes the no-bias value (no bias is not ruled out)."""
    better: str | None = None
    """Which direction is less biased."""


class ModelRecord(_Record):
    """The model a run asked (:class:`~biaslens.models.base.ModelIdentity`), as recorded;
    a backend adds the settings that change its numbers (dtype, device class…)."""

    name: str
    """The model's name: a registered name, a hub id or a local folder."""
    kind: str | None = None
    """Its kind (``causal-lm``, ``masked-lm``, ``seq2seq-lm``, ``extractive-qa``…)."""
    backend: str | None = None
    """The backend that loaded it."""
    fingerprint_sha256: str | None = None
    """A sha256 over the files (or the served model's description) that decide its answers."""
    weights_sha256: str | None = None
    """A sha256 over its weight files alone."""
    num_parameters: int | None = None
    """Its number of parameters, where known."""
    commit_sha: str | None = None
    """The hub commit it was loaded at (hub models)."""


class RunSummary(_Record):
    """A finished run's ``summary.json``: what was asked, of which model, what it found, and
    the files it wrote."""

    format_version: int
    """The run folder's format (a later biaslens reads earlier formats)."""
    method: str
    """The method that ran."""
    created: str | None = None
    """When the summary was written (ISO 8601, UTC)."""
    settings: dict[str, Any] = {}
    """The method's settings as the run used them."""
    metrics: dict[str, Any] = {}
    """The method's summary numbers, by name."""
    model: ModelRecord | str | None = None
    """The model (null: a method that asks none, e.g. reading released outputs)."""
    dataset: dict[str, Any] | None = None
    """The data the run built or read: its name, sha256 and the choices that shaped it."""
    backend: dict[str, Any] | None = None
    """The backend and its options."""
    requests: dict[str, int] | None = None
    """Requests answered by the model (``computed``) and reused from the cache (``cached``)."""
    request_cache: str | None = None
    """Where the answers are kept (a file, or ``run folder``)."""
    estimates: list[Estimate] | None = None
    """Every headline value with its interval, n and meaning."""
    notes: list[str] | None = None
    """One-line findings and cautions of the run."""
    versions: dict[str, str | None] | None = None
    """The versions of the packages that decide the numbers."""
    biaslens: dict[str, Any] | None = None
    """The biaslens build that wrote the run (version, commit)."""
    git_revision: str | None = None
    """The git commit of that build, where known."""
    outputs: dict[str, Any] | None = None
    """The files the run wrote, with their sizes and sha256."""


def summary_schema() -> dict[str, Any]:
    """The JSON schema of ``summary.json``, generated from :class:`RunSummary`."""
    return RunSummary.model_json_schema()


def written(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` checked against :class:`RunSummary` as it is written (a field of the wrong
    type is a bug of the writer, refused before the file is replaced), in JSON's types."""
    try:
        record = RunSummary.model_validate(summary)
    except ValidationError as error:
        raise BiaslensError(f"summary.json: {one_line(error, summary)}") from None
    return record.model_dump(mode="json", exclude_unset=True)


def read(path: Path, summary: Any) -> RunSummary:
    """The run summary read from ``path`` (already parsed), checked: one line naming the
    field that is wrong."""
    if not isinstance(summary, dict):
        raise BiaslensError(f"{path}: not a run summary")
    if "method" not in summary:
        raise BiaslensError(f"{path}: no method; not a biaslens run summary")
    try:
        return RunSummary.model_validate(summary)
    except ValidationError as error:
        raise BiaslensError(f"{path}: {one_line(error, summary)}") from None


# ------------------------------------------------------------------- one-line errors
_KINDS = {
    "int_type": "a number",
    "float_type": "a number",
    "string_type": "text",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
    "bool_type": "true or false",
    "none_required": "null",
}


def one_line(error: ValidationError, given: dict[str, Any]) -> str:
    """The first wrong field of ``error``: its path (``estimates[0].value``), the kinds it
    takes and what it holds."""
    problems = error.errors()
    path, annotation = _field(problems[0]["loc"])
    kinds: list[str] = []
    for problem in problems:
        if _field(problem["loc"])[0] == path:
            kind = _KINDS.get(problem["type"])
            if kind is None:  # not a type error (a missing field…): pydantic's own words
                return f"{path}: {problem['msg']}"
            kinds.append(kind)
    if type(None) in typing.get_args(annotation):
        kinds.append("null")
    value = _at(given, problems[0]["loc"], path)
    return (
        f"{path} must be {' or '.join(dict.fromkeys(kinds))}, got {type(value).__name__} "
        f"{value!r:.60}"
    )


def _members(annotation: Any) -> tuple[Any, ...]:
    union = typing.get_origin(annotation) in (Union, types.UnionType)
    return typing.get_args(annotation) if union else (annotation,)


def _field(loc: tuple) -> tuple[str, Any]:
    """The field a pydantic error location points at, written ``a[0].b``, and its annotation
    (union members' tags in the location are skipped)."""
    path, annotation = "", RunSummary
    for key in loc:
        members = _members(annotation)
        if isinstance(key, int):
            lists = [typing.get_args(m)[0] for m in members if typing.get_origin(m) is list]
            if lists:
                path, annotation = f"{path}[{key}]", lists[0]
            continue
        models = [m for m in members if inspect.isclass(m) and issubclass(m, BaseModel)]
        fields = next((m.model_fields for m in models if key in m.model_fields), None)
        maps = [typing.get_args(m)[1] for m in members if typing.get_origin(m) is dict]
        if fields is not None:
            path, annotation = f"{path}.{key}" if path else key, fields[key].annotation
        elif maps and path:
            path, annotation = f"{path}.{key}", maps[0]
    return path, annotation


def _at(given: Any, loc: tuple, path: str) -> Any:
    """The value the error is about, read from what was given along its location."""
    value = given
    for key in loc:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
    return value
