"""Backend options, as typed models: what a backend takes and how a run records it.

A backend declares its options as a pydantic model (:attr:`biaslens.models.registry.
RegisteredBackend.options`), a subclass of :class:`BackendOptions` (the options every backend
takes) and of the groups it shares with others: :class:`InProcess` (device, dtype, batch
size), :class:`Checkpoint` (revision, and :class:`HubAccess`'s offline) and :class:`Prompts`
(BOS, chat template). Each field is one option: its type, default and help
(``description``), and in its metadata an :class:`OptionRules` (how text from the command
line is parsed, how a run records it). A backend reads its options as attributes
(``config.options.batch_size``); the command line, :class:`~biaslens.models.config.
BackendConfig` and the run's record are generated from the models (:func:`declarations`).

This module imports no torch and names no backend.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

from biaslens.common.options import Option, number
from biaslens.common.urls import redact_url
from biaslens.errors import BiaslensError


@dataclass(frozen=True)
class OptionRules:
    """How a backend option's field is given and kept (in the field's metadata).

    * ``parse(value)``: the value as the backend reads it, from text (the command line) or a
      Python value; raises (a :class:`BiaslensError` naming the flag, or a ``ValueError``)
      when it is not one. Without one, the value is checked against the field's type (text,
      on/off, or a number within ``minimum`` and ``maximum``);
    * ``record``: how ``summary.json`` keeps it: ``filled`` (unless None or empty), ``always``,
      ``set`` (only when it differs from its default) or ``never``; ``recorded_as`` turns the
      value into what is written (a URL without its password);
    * ``elsewhere``: why a backend that does not take it has no use for it (said when it is
      given there);
    * ``compare``: whether two configurations that differ only here are different (an engine's
      tuning knobs are not);
    * ``cli``: False keeps it to Python (a dict of engine options has no flag).
    """

    parse: Callable[[Any], Any] | None = None
    minimum: float | None = None
    maximum: float | None = None
    record: str = "filled"
    recorded_as: Callable[[Any], Any] | None = None
    elsewhere: str = ""
    compare: bool = True
    cli: bool = True


PLAIN = OptionRules()


@dataclass(frozen=True, init=False)
class BackendOption(Option):
    """One backend option as the command line and the run see it: generated from its field
    (:func:`declarations`), with the field's :class:`OptionRules` (``rules``)."""

    rules: OptionRules = PLAIN

    def value_of(self, value: Any) -> Any:
        """``value`` parsed and checked (``None`` stays None where the default is None); a
        value the parser refuses is a one-line error naming the flag."""
        if value is None and self.default is None:
            return None
        try:
            parse = self.rules.parse
            return parse(value) if parse is not None else self._of_type(value)
        except (TypeError, ValueError) as error:  # a plug-in's parser may raise these
            raise BiaslensError(
                f"{self.flag if self.rules.cli else self.keyword}: {error}"
            ) from None

    def _of_type(self, value: Any) -> Any:
        """``value`` checked against the declared type and bounds."""
        if self.type in (int, float):
            return number(value, self.type, self.minimum, self.maximum)
        if self.type is bool and not isinstance(value, bool):
            raise ValueError(f"on or off (True or False), got {value!r}")
        if self.type is str and not isinstance(value, str):
            raise ValueError(f"takes text, got {value!r}")
        return value


def _value_type(annotation: Any) -> type:
    """The type the command line reads a field's value as: its one type besides None (text
    for anything else, such as ``int | "auto"``)."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        annotation = kinds[0] if len(kinds) == 1 else str
    return annotation if annotation in (int, float, bool, str) else str


class OptionGroup(BaseModel):
    """Backend options that go together (a group several backends take, or one backend's
    own). A value given is parsed by its field's rules before the model checks it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _parsed(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        declared = declarations(cls)
        return {k: declared[k].value_of(v) if k in declared else v for k, v in values.items()}

    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        declared = declarations(type(self))
        return {k: getattr(self, k) for k, o in declared.items() if getattr(self, k) != o.default}

    def recorded(self) -> dict[str, Any]:
        """The options as a run's ``summary.json`` keeps them, as each field's rules say (no
        secrets: only the name of a key's environment variable, a URL without its password)."""
        kept: dict[str, Any] = {}
        for keyword, option in declarations(type(self)).items():
            value, rules = getattr(self, keyword), option.rules
            if rules.record == "never" or (rules.record == "set" and value == option.default):
                continue
            if rules.record != "always" and value in (None, "", {}):
                continue
            kept[keyword] = rules.recorded_as(value) if rules.recorded_as is not None else value
        return kept

    def compared(self) -> tuple:
        """What tells two configurations apart (the options that keep ``compare``)."""
        declared = declarations(type(self))
        compared = (k for k, o in declared.items() if o.rules.compare)
        return tuple(sorted((k, repr(getattr(self, k))) for k in compared))


@cache
def declarations(model: type[OptionGroup]) -> dict[str, BackendOption]:
    """The options of ``model``, one per field, by keyword, in the fields' order."""
    declared = {}
    for keyword, field in model.model_fields.items():
        rules = next((m for m in field.metadata if isinstance(m, OptionRules)), PLAIN)
        if not field.description:
            raise TypeError(f"{model.__name__}.{keyword}: a backend option needs a description")
        declared[keyword] = BackendOption(
            keyword,
            help=field.description,
            type=_value_type(field.annotation),
            default=field.get_default(call_default_factory=True),
            minimum=rules.minimum,
            maximum=rules.maximum,
            rules=rules,
        )
    return declared


# ------------------------------------------------------------------------------ parsers
def seconds(flag: str) -> Callable[[Any], float]:
    """A finite number of seconds > 0."""

    def parse(value: Any) -> float:
        value = number(value, float)
        if value <= 0:
            raise BiaslensError(f"{flag} must be a finite number of seconds > 0, got {value!r}")
        return value

    return parse


def one_of(flag: str, choices: tuple[str, ...], what: str) -> Callable[[Any], str]:
    """One of ``choices`` (``what`` names the kind of value in the message)."""

    def parse(value: Any) -> str:
        if value not in choices:
            raise BiaslensError(f"unknown {what} {value!r}; use one of {', '.join(choices)}")
        return value

    return parse


def parse_batch_size(value: int | str, name: str = "--batch-size") -> int | str:
    """``"auto"`` or a positive integer (strings such as ``"8"`` are accepted); ``name`` is
    how the value is called in the error message."""
    if value == "auto":
        return "auto"
    if isinstance(value, bool):
        raise BiaslensError(f"{name} must be 'auto' or a positive integer, got {value!r}")
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise BiaslensError(f"{name} must be 'auto' or a positive integer, got {value!r}") from None
    if size < 1:
        raise BiaslensError(f"{name} must be >= 1, got {size}")
    return size


def _revision(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BiaslensError(f"--revision must name a branch, tag or commit, got {value!r}")
    return value


# ------------------------------------------------------------------ the options every backend takes
class BackendOptions(OptionGroup):
    """The options of every backend: how much a run may ask, whoever answers. A backend's
    options model subclasses this one."""

    max_requests: Annotated[int | None, OptionRules(minimum=1)] = Field(
        None,
        description="Stop after N requests answered by the model or server (answers already "
        "in the run's cache do not count); rerun the same command to go on. A cost guard for "
        "paid APIs.",
    )


# ------------------------------------------------------------------ groups several backends take
BatchSize = int | Literal["auto"]
"""A fixed batch size, or ``"auto"`` (chosen by measured throughput)."""


class InProcess(OptionGroup):
    """Where and how a model that runs in this process runs."""

    device: str = Field("auto", description="auto (cuda, mps, cpu), cpu, cuda, cuda:N, mps.")
    dtype: str = Field(
        "auto", description="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16."
    )
    batch_size: Annotated[BatchSize, OptionRules(parse=lambda v: parse_batch_size(v))] = Field(
        "auto", description="auto (chosen by measured throughput) or N."
    )


class HubAccess(OptionGroup):
    """Whether models and tokenizers may be downloaded from the hub."""

    offline: Annotated[bool, OptionRules(record="set")] = Field(
        False,
        description="Use only models already in the local Hugging Face cache (as "
        "HF_HUB_OFFLINE=1 does); by default a hub name is downloaded when the machine is "
        "online.",
    )


class Checkpoint(HubAccess):
    """Which checkpoint is loaded, for backends that load one (a backend with ``local=True``
    takes these)."""

    revision: Annotated[
        str | None,
        OptionRules(parse=_revision, elsewhere="a served model's checkpoint is the server's"),
    ] = Field(
        None,
        description="Hub models: the branch, tag or commit to load (default: the default "
        "branch); the commit it resolves to is recorded and keys the cache. NAME@REVISION "
        "pins one model.",
    )


def _api_key_variable(value: Any) -> str:
    """The *name* of an environment variable (never the key: the value is not shown)."""
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise BiaslensError(
            "--api-key-env takes the *name* of the environment variable that holds the key "
            "(e.g. OPENAI_API_KEY), not the key itself; the value given is not a variable "
            "name (it is not shown or stored)"
        )
    return value


class Served(OptionGroup):
    """Where a model behind an API is asked and how hard: its address, the variable holding
    its key, requests in flight, time and retries per request."""

    base_url: Annotated[str | None, OptionRules(recorded_as=redact_url)] = Field(
        None,
        description="Served models: the server, e.g. http://127.0.0.1:8000/v1 (an inspect "
        "provider's own address when omitted).",
    )
    api_key_env: Annotated[str | None, OptionRules(parse=_api_key_variable)] = Field(
        None,
        description="Served models: the environment variable holding the API key (default: "
        "OPENAI_API_KEY for --backend openai, the provider's own variable for --backend "
        "inspect); the key is never written to any file.",
    )
    concurrency: Annotated[int, OptionRules(minimum=1)] = Field(
        8, description="Served models: requests in flight."
    )
    timeout: Annotated[float, OptionRules(parse=seconds("--timeout"), minimum=0.001)] = Field(
        60.0, description="Served models: seconds per request before it is retried."
    )
    max_retries: Annotated[int, OptionRules(minimum=0)] = Field(
        5, description="Served models: retries of a failed request before the run stops."
    )
    unseeded: bool = Field(
        False,
        description="Served models, sampled scoring: send no seed with the calls (the draws "
        "are then not reproducible), for servers that fail on seeded requests (vLLM's CPU "
        "build does).",
    )


def prompts_of(options: OptionGroup) -> Prompts | None:
    """The prompt options of a backend that takes them (None for one that does not)."""
    return options if isinstance(options, Prompts) else None


def offline_of(options: OptionGroup) -> bool:
    """``--offline`` where a backend takes it (False for one that does not)."""
    return isinstance(options, HubAccess) and options.offline


def model_kind_of(options: OptionGroup) -> str:
    """The model kind a backend's options ask for (``--model-kind``; ``auto`` for a backend
    that takes no such option: the kind is then read from the checkpoint's config)."""
    return getattr(options, "model_kind", "auto")


class Prompts(OptionGroup):
    """How a causal prompt reaches the model: its BOS and chat template."""

    add_bos: Annotated[bool | None, OptionRules(cli=False, record="always")] = Field(
        None,
        description="None keeps the tokenizer's own special tokens (SmolLM2's BOS is the "
        "chat-turn marker); True prepends the BOS to causal prompts; False adds none.",
    )
    chat: bool = Field(
        False,
        description="Causal chat models: each prompt becomes a user message in the model's own "
        "chat template (the assistant's turn opened), as a chat user would send it.",
    )
    system: str = Field("", description="With --chat: a system message put before every prompt.")

    @model_validator(mode="after")
    def _system_needs_chat(self) -> Prompts:
        if self.system and not self.chat:
            raise BiaslensError("--system is a chat message: it needs --chat")
        return self
