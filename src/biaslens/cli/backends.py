"""The backend options of a command, generated from what the backends declare
(:func:`biaslens.models.registry.declared_options`): ``--backend`` and every option of every
backend, its default, help and bounds as declared; the values become one
:class:`~biaslens.models.config.BackendConfig`, which parses and checks them."""

from __future__ import annotations

from typing import Any

import click

from biaslens.cli.params import to_click
from biaslens.common.options import Option
from biaslens.models.config import BackendConfig
from biaslens.models.registry import DEFAULT_BACKEND, backend_choices_help, declared_options


def backend_declarations() -> list[Option]:
    """``--backend`` and the backends' options that have a flag."""
    choice = Option("backend", help=backend_choices_help(), default=DEFAULT_BACKEND)
    return [choice, *(o for o, _ in declared_options().values() if o.rules.cli)]


def backend_params(group: str | None = None) -> list[click.Parameter]:
    return [to_click(option, group=group) for option in backend_declarations()]


def backend_config(values: dict[str, Any]):
    """The :class:`BackendConfig` of the backend options' values (popped from ``values``):
    the options that differ from their defaults."""
    given = {}
    for option in backend_declarations():
        value = values.pop(option.name)
        if value != option.default:
            given[option.keyword] = value
    return BackendConfig(**given)
