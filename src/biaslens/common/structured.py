"""JSON and YAML read as untrusted input: no YAML aliases (an alias bomb of nine levels expands
to gigabytes), a bounded nesting depth (a deeply nested file is a ``RecursionError`` elsewhere),
and one-line errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from biaslens.errors import BiaslensError

MAX_DEPTH = 64
"""The deepest nesting read: biaslens's own files nest a few levels."""


class _NoAliasLoader(yaml.SafeLoader):
    """yaml's safe loader, refusing anchors' aliases (biaslens never writes them)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.YAMLError(
                f"line {event.start_mark.line + 1}: a YAML alias (*{event.anchor}); aliases "
                "are not read (biaslens never writes them)"
            )
        return super().compose_node(parent, index)


def load_yaml(text: str, path: Path | str, what: str) -> Any:
    """``text`` (the contents of ``path``) as YAML: safe types only, no aliases, bounded depth."""
    try:
        value = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        value = _too_deep(path, what)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f":{where.line + 1}" if where is not None else ""
        problem = getattr(error, "problem", None) or " ".join(str(error).split())
        raise _error(
            f"{path}{line}: cannot read the {what}: not valid YAML ({problem[:300]})"
        ) from None
    _check_depth(value, path, what)
    return value


def load_json(text: str, path: Path | str, what: str) -> Any:
    """``text`` (the contents of ``path``) as JSON, with a bounded depth."""
    try:
        value = json.loads(text)
    except RecursionError:
        value = _too_deep(path, what)
    except json.JSONDecodeError as error:
        raise _error(f"{path}: unreadable {what} ({error})") from None
    _check_depth(value, path, what)
    return value


def _check_depth(value: Any, path, what: str) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            _too_deep(path, what)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _too_deep(path, what: str):
    raise _error(f"{path}: the {what} nests deeper than {MAX_DEPTH} levels; not read")


def _error(message: str):
    return BiaslensError(message)
