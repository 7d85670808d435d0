"""The options of the methods: those several methods share, and where a method option's default
comes from.

A method lists its :class:`~biaslens.common.options.Option`\\ s in its
:class:`~biaslens.framework.spec.MethodSpec`; ``biaslens run METHOD`` is generated from them
(:mod:`biaslens.cli.methods`). An option names the settings keyword it fills (what
``biaslens.run(method, keyword=...)`` takes), its flags and its help; its default is not
written there but read from the method (:func:`option_default`), so the help can never
disagree with what a run does.

Values given on the command line are passed on as they are (lists as tuples); the settings
model validates them, and ``None`` means "not given" so that ``--preset`` can fill it.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from biaslens.common.options import (  # noqa: F401 - the names a method's options use
    NO_DEFAULT,
    Option,
    shown_default,
)


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
    help="Bootstrap replicates for the intervals (0: none; otherwise at least 200), seeded by "
    "--seed; where the intervals are a jackknife over the crossed design of subjects and "
    "templates (unqover, lei-eval) the value only turns them on or off.",
    type=int,
)
PRONOUN_SCORING = Option(
    "mode",
    "--scoring",
    "--mode",
    help="exact: full-vocabulary pronoun probability; paper: top-5 sums, greedy decoding for "
    "causal models (App. G); sampled: the share of --samples replies drawn at temperature 1 "
    "that begin with each pronoun (chosen with a note where the model gives no "
    "probabilities).",
    deprecated=(("--mode", "--scoring"),),
)
SAMPLES = Option(
    "samples",
    help="Sampled scoring (models that give no probabilities): replies drawn per prompt at "
    "temperature 1, in blocks of 10 (a rerun with a larger K reuses the first draws).",
    type=int,
)
MIN_PRONOUN_MASS = Option(
    "min_pronoun_mass",
    help="Exact scoring: refuse when the pronouns hold less than this mean share of the "
    "probability at the slot (0 to 1; 0 goes on anyway, recorded in the run's settings).",
    type=float,
)
GENERATION_TOKENS = Option(
    "generation_tokens", help="Paper scoring: greedy steps of causal/seq2seq models.", type=int
)
QA_MODE = Option(
    "mode",
    "--qa-mode",
    "--mode",
    help="auto (from the model kind), extractive or generative.",
    deprecated=(("--mode", "--qa-mode"),),
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
    deprecated=(("--top-k", "--top-k-tokens"),),
)
MAX_NEW_TOKENS = Option("max_new_tokens", help="At most N new tokens.", type=int)
