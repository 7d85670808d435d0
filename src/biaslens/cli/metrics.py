"""The commands methods add besides ``biaslens run`` (their ``MethodSpec.commands``):
``biaslens metrics …`` (a method's metrics of stored outputs, without a model) and top-level
ones (adding people's ratings to a finished run). Built from the method registry when asked
for; this module names no method."""

from __future__ import annotations

from collections.abc import Callable

import click

from biaslens.cli.params import declared_command
from biaslens.cli.render import console, print_table, print_warning
from biaslens.framework.hooks import CommandContext, MethodCommand


def _context(method: str) -> CommandContext:
    from biaslens.runner import amend_run

    return CommandContext(
        method, table=print_table, line=console.print, warning=print_warning, amend_run=amend_run
    )


def method_commands(group: str | None) -> dict[str, tuple[str, MethodCommand]]:
    """The methods' commands under ``group`` (None: the top level), by name: the method each
    belongs to, and the command."""
    from biaslens.framework.registry import methods

    return {
        command.name: (spec.name, command)
        for spec in methods().values()
        for command in spec.commands
        if command.group == group
    }


def click_command(method: str, command: MethodCommand) -> click.Command:
    """The click command of one of ``method``'s commands: its declared parameters, calling its
    ``run`` with a :class:`CommandContext`; its help is ``run``'s docstring."""

    def invoke(**values):
        command.run(_context(method), **values)

    invoke.__doc__ = command.run.__doc__
    return declared_command(command.name, *command.params)(invoke)


class LazyGroup(click.Group):
    """A command group whose commands are built when first asked for (``build()`` returns
    them): the methods' commands need the method registry, which ``biaslens --help`` does not
    import."""

    def __init__(self, *args, build: Callable[[], list[click.Command]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.build, self.built = build, False

    def _commands(self) -> None:
        if not self.built:
            self.built = True
            for command in self.build():
                self.add_command(command)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        self._commands()
        return super().get_command(ctx, name)
