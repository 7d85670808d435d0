"""Backend options, declared once: what a backend's package lists as its options.

A backend declares the options it takes (:attr:`biaslens.models.registry.RegisteredBackend.
options`): the ones only it takes live in its own package, and the groups several backends take
live here (:data:`IN_PROCESS`, :data:`CHECKPOINT`, :data:`PROMPTS`) with the one every backend
takes (:data:`EVERY_BACKEND`). Each is a :class:`BackendOption`: its default, help, how a value
given as text or from Python is parsed (once, here), what it must satisfy, and how a run
records it. :class:`~biaslens.models.config.BackendConfig`, the command line and the Python API
are generated from these declarations.

This module imports no torch and names no backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from biaslens.common.options import Option, number
from biaslens.errors import BiaslensError


@dataclass(frozen=True, init=False)
class BackendOption(Option):
    """An option of one or more backends (see :class:`~biaslens.common.options.Option`).

    * ``parse(value)``: the value as the backend reads it, from text (the command line) or a
      Python value; a :class:`BiaslensError` naming the flag when it is not one. Without one,
      the value is checked against the declared ``type`` (text, on/off, or a number within
      ``minimum`` and ``maximum``);
    * ``requires(value, config)``: what the value needs of the other options (e.g. ``--system``
      needs ``--chat``), in words, or None;
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
    requires: Callable[[Any, Any], str | None] | None = None
    record: str = "filled"
    recorded_as: Callable[[Any], Any] | None = None
    elsewhere: str = ""
    compare: bool = True
    cli: bool = True

    def value_of(self, value: Any) -> Any:
        """``value`` parsed and checked (``None`` stays None where the default is None); a
        value the parser refuses is a one-line error naming the flag."""
        if value is None and self.default is None:
            return None
        try:
            return self.parse(value) if self.parse is not None else self._of_type(value)
        except (TypeError, ValueError) as error:  # a plug-in's parser may raise these
            raise BiaslensError(f"{self.flag if self.cli else self.keyword}: {error}") from None

    def _of_type(self, value: Any) -> Any:
        """``value`` checked against the declared type and bounds."""
        if self.type in (int, float):
            return number(value, self.type, self.minimum, self.maximum)
        if self.type is bool and not isinstance(value, bool):
            raise ValueError(f"on or off (True or False), got {value!r}")
        if self.type is str and not isinstance(value, str):
            raise ValueError(f"takes text, got {value!r}")
        return value


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


def parse_batch_size(value: int | str, name: str = "batch size") -> int | str:
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


def _needs_chat(what: str) -> Callable[[Any, Any], str | None]:
    def requires(value: Any, config: Any) -> str | None:
        return f"{what}: it needs --chat" if value and not config.chat else None

    return requires


# ------------------------------------------------------------------ the option every backend takes
MAX_REQUESTS = BackendOption(
    "max_requests",
    default=None,
    minimum=1,
    type=int,
    help="Stop after N requests answered by the model or server (answers already in the run's "
    "cache do not count); rerun the same command to go on. A cost guard for paid APIs.",
)
EVERY_BACKEND = (MAX_REQUESTS,)
"""Options of every backend: how much a run may ask, whoever answers."""

# ------------------------------------------------------------------ groups several backends take
DEVICE = BackendOption(
    "device", default="auto", help="auto (cuda, mps, cpu), cpu, cuda, cuda:N, mps."
)
DTYPE = BackendOption(
    "dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16."
)
BATCH_SIZE = BackendOption(
    "batch_size",
    default="auto",
    parse=lambda value: parse_batch_size(value, "--batch-size"),
    help="auto (chosen by measured throughput) or N.",
)
IN_PROCESS = (DEVICE, DTYPE, BATCH_SIZE)
"""Where and how a model that runs in this process runs."""

REVISION = BackendOption(
    "revision",
    default=None,
    parse=_revision,
    elsewhere="a served model's checkpoint is the server's",
    help="Hub models: the branch, tag or commit to load (default: the default branch); the "
    "commit it resolves to is recorded and keys the cache. NAME@REVISION pins one model.",
)
OFFLINE = BackendOption(
    "offline",
    default=False,
    type=bool,
    record="set",
    help="Use only models already in the local Hugging Face cache (as HF_HUB_OFFLINE=1 does); "
    "by default a hub name is downloaded when the machine is online.",
)
CHECKPOINT = (REVISION, OFFLINE)
"""Which checkpoint is loaded, for backends that load one."""

ADD_BOS = BackendOption(
    "add_bos",
    default=None,
    type=bool,
    cli=False,
    record="always",
    help="None keeps the tokenizer's own special tokens (SmolLM2's BOS is the chat-turn "
    "marker); True prepends the BOS to causal prompts; False adds none.",
)
CHAT = BackendOption(
    "chat",
    default=False,
    type=bool,
    help="Causal chat models: each prompt becomes a user message in the model's own chat template "
    "(the assistant's turn opened), as a chat user would send it.",
)
SYSTEM = BackendOption(
    "system",
    default="",
    requires=_needs_chat("--system is a chat message"),
    help="With --chat: a system message put before every prompt.",
)
PROMPTS = (ADD_BOS, CHAT, SYSTEM)
"""How a causal prompt reaches the model: its BOS and chat template."""
