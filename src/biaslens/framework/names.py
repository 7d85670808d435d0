"""The names a method's settings answer to in Python: the settings keywords, and the CLI's own
names (a flag without its dashes: ``qa_mode`` for ``--qa-mode``, ``lam`` for ``--lam``), so
that what a user reads in ``--help`` works in ``biaslens.run(...)`` too. An unknown name is a
one-line error with the nearest known ones; :func:`settings_table` lists them all."""

from __future__ import annotations

import difflib
from typing import Any

from biaslens.common.options import Option, shown_default
from biaslens.errors import BiaslensError


def flag_names(option: Option) -> list[str]:
    """``--qa-mode/--no-qa-mode`` → ``["qa_mode", "no_qa_mode"]``."""
    return [
        part.lstrip("-").replace("-", "_")
        for flag in option.flags
        for part in flag.split("/")
        if part.startswith("--")
    ]


def setting_keywords(spec) -> set[str]:
    """The keywords the method's settings take directly (with those of a nested settings
    model its options fill, such as CID's decoding settings)."""
    known = set(spec.settings.model_fields) | {o.keyword.partition(".")[0] for o in spec.options}
    for field in spec.settings.model_fields.values():
        known |= set(getattr(field.annotation, "model_fields", {}))
    return known


def keywords_from_names(spec, values: dict[str, Any], also=frozenset()) -> dict:
    """``values`` by settings keyword: a keyword stays, a CLI name becomes its option's keyword
    (a single value of a several-valued option becomes a one-item tuple, a switch its setting);
    any other name is refused with the nearest names (``also``: other names the caller knows,
    offered as suggestions, or a function giving them: read only for a refusal)."""
    keywords = setting_keywords(spec)
    by_flag = {
        name: option
        for option in spec.options
        if not option.display
        for name in flag_names(option)
        if name not in keywords
    }
    result: dict[str, Any] = {}
    for name, value in values.items():
        if name in keywords:
            result[name] = value
            continue
        option = by_flag.get(name)
        if option is None:
            known = also() if callable(also) else also
            raise unknown_setting(spec, name, keywords | set(by_flag) | set(known))
        if option.sets is not None:
            if value:
                result.setdefault(option.keyword, option.sets)
            continue
        if option.multiple and value is not None and not isinstance(value, (list, tuple)):
            value = (value,)
        head, _, key = option.keyword.partition(".")
        if key:
            result.setdefault(head, {})[key] = value
        else:
            result[head] = value
    return result


def unknown_setting(spec, name: str, known: set[str]) -> BiaslensError:
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return BiaslensError(
        f"{spec.name} has no setting {name!r}{hint} (biaslens.settings({spec.name!r}) lists them)"
    )


def settings_table(spec) -> list[dict[str, Any]]:
    """One row per setting of ``spec`` as ``biaslens run`` declares it: the Python keyword,
    the flag, the value type, the default and the help."""
    rows = []
    for option in spec.options:
        if option.hidden or option.display:
            continue
        default = option.default
        rows.append(
            {
                "setting": option.keyword,
                "flag": option.flags[0],
                "type": option.type.__name__ + (" (several)" if option.multiple else ""),
                "default": shown_default(default) or "",
                "help": option.help,
            }
        )
    return rows
