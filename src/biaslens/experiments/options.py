"""Command-line options of the methods, declared once, next to each method's settings.

A method lists its :class:`Option`\\ s in its :class:`~biaslens.experiments.registry.MethodSpec`;
``biaslens run METHOD`` is generated from them (:mod:`biaslens.cli.methods`). An option names
the settings keyword it fills (what ``biaslens.run(method, keyword=...)`` takes), its flags and
its help; its default is not written here but read from the method (:func:`option_default`),
so the help can never disagree with what a run does.

Values given on the command line are passed on as they are (lists as tuples); the settings
model validates them, and ``None`` means "not given" so that ``--preset`` can fill it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

NO_DEFAULT = object()
"""What :func:`option_default` returns for an option whose default is not a fixed value."""


@dataclass(frozen=True, init=False)
class Option:
    """One option of ``biaslens run METHOD``.

    * ``keyword``: the settings keyword it fills; ``a.b`` fills key ``b`` of dict ``a``;
    * ``flags``: its names (the first is the main one; ``--x/--no-x`` for an on/off switch);
    * ``type``: ``str``, ``int``, ``float``, ``bool`` or ``Path`` (of each value when
      ``multiple``); ``multiple``: several values (``--lam 0 5 50``), passed as a tuple;
    * ``default``: shown in the help where the method's own default is not a fixed value
      (e.g. "A" for prompts chosen by model kind); else read from the method;
    * ``minimum``: the smallest value the command line accepts;
    * ``sets``: a flag without a value that sets ``keyword`` to this (when not given otherwise);
    * ``hidden``: kept for old command lines, not shown in the help;
    * ``display``: changes only what the command prints after the run (passed to the method's
      ``extra_views``, never to its settings).
    """

    keyword: str
    flags: tuple[str, ...]
    help: str
    type: type = str
    multiple: bool = False
    default: Any = NO_DEFAULT
    minimum: float | None = None
    sets: Any = None
    hidden: bool = False
    display: bool = False

    def __init__(self, keyword: str, *flags: str, help: str, **options: Any) -> None:
        object.__setattr__(self, "keyword", keyword)
        object.__setattr__(self, "flags", flags or ("--" + keyword.replace("_", "-"),))
        object.__setattr__(self, "help", help)
        for name, value in {**_DEFAULTS, **options}.items():
            object.__setattr__(self, name, value)

    def but(self, **changes: Any) -> Option:
        """A copy with some fields changed (e.g. a shared option with its own help)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)} | changes
        keyword, flags, help_text = values.pop("keyword"), values.pop("flags"), values.pop("help")
        return Option(keyword, *flags, help=help_text, **values)

    @property
    def name(self) -> str:
        """The parameter name of the generated command (from the main flag)."""
        return self.flags[0].split("/")[0].lstrip("-").replace("-", "_")


_DEFAULTS = {
    "type": str,
    "multiple": False,
    "default": NO_DEFAULT,
    "minimum": None,
    "sets": None,
    "hidden": False,
    "display": False,
}


def option_default(spec, option: Option) -> Any:
    """The value a run uses when ``option`` is not given: ``option.default`` if set, else the
    method's ``make_settings`` parameter default, else the settings field's default (``a.b``:
    key or attribute ``b`` of field ``a``'s default); :data:`NO_DEFAULT` when none is fixed."""
    if option.default is not NO_DEFAULT:
        return option.default
    if option.sets is not None:
        return NO_DEFAULT
    head, _, key = option.keyword.partition(".")
    if spec.make_settings is not None and not key:
        parameter = inspect.signature(spec.make_settings).parameters.get(head)
        if parameter is not None and parameter.default is not inspect.Parameter.empty:
            return parameter.default
    field = spec.settings.model_fields.get(head)
    if field is None or field.is_required():
        return _from_nested(spec, head, key)
    value = field.get_default(call_default_factory=True)
    if key:
        value = value.get(key) if isinstance(value, dict) else getattr(value, key, NO_DEFAULT)
    return value


def _from_nested(spec, head: str, key: str) -> Any:
    """Defaults of keywords that fill a nested settings model (e.g. CID's decoding settings)."""
    for field in spec.settings.model_fields.values():
        default = field.get_default(call_default_factory=True) if not field.is_required() else None
        fields = getattr(type(default), "model_fields", {})
        if head in fields and not key:
            return getattr(default, head)
    return NO_DEFAULT


def shown_default(value: Any) -> str | None:
    """A default as the help shows it (None: not shown)."""
    if value is NO_DEFAULT or value is None or value == () or value == "":
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (tuple, list)):
        return " ".join(shown_default(v) or "" for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Path):
        return str(value)
    return str(value)


# ------------------------------------------------------------------ options several methods share
MODEL = Option(
    "model",
    "--model",
    "-m",
    help="Registered name (see `biaslens models list`), hub name or local model folder; with "
    "--backend openai, the name the server serves.",
)
SEED = Option("seed", help="Random seed (>= 0).", type=int)
LIMIT = Option("limit", help="Keep at most N (seeded; 0: all).", type=int)
CI_LEVEL = Option(
    "ci_level", help="Confidence level of every interval (e.g. 0.9, 0.95, 0.99).", type=float
)
BOOTSTRAP = Option(
    "bootstrap",
    help="Bootstrap replicates over the sampled units for the intervals (0: none); seeded by "
    "--seed.",
    type=int,
)
PRONOUN_SCORING = Option(
    "mode",
    "--scoring",
    "--mode",
    help="exact: full-vocabulary pronoun probability; paper: top-5 sums, greedy decoding for "
    "causal models (App. G).",
)
GENERATION_TOKENS = Option(
    "generation_tokens", help="Paper scoring: greedy steps of causal/seq2seq models.", type=int
)
QA_MODE = Option(
    "mode",
    "--qa-mode",
    "--mode",
    help="auto (from the model kind), extractive or generative.",
)
QA_FILE = Option(
    "qa_file",
    help="SQuAD-format file: EM/F1 (and, for lei-train, QA rows mixed into training).",
    type=Path,
)
QA_LIMIT = Option("qa_limit", help="First N questions of --qa-file (0: all).", type=int)
SPAN_ADJUSTMENT = Option(
    "span_adjustment",
    help="Extractive S: none, articles (a preceding article, a following person noun) or "
    "reference (UnQover's full lists).",
)
QA_ORDER = Option(
    "qa_order",
    help="Extractive input: question-first (UnQover) or context-first (LEI fine-tuning).",
)
LAMS = Option(
    "lams",
    "--lam",
    help="λ values, e.g. --lam 0 5 50 (0 is plain greedy decoding).",
    type=float,
    multiple=True,
)
TOP_K_TOKENS = Option(
    "top_k",
    "--top-k-tokens",
    "--top-k",
    help="Restrict to the top-K tokens of p(·|x) (paper: 50).",
    type=int,
)
MAX_NEW_TOKENS = Option("max_new_tokens", help="At most N new tokens.", type=int)
