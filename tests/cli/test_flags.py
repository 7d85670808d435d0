"""The command line is an interface: every command's flags are those recorded in
``tests/fixtures/cli_flags.json`` (a flag renamed, dropped or turned into a switch is a change a
user's scripts see; record a deliberate one there)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from biaslens.cli import app

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "cli_flags.json"


def flags_of(command: click.Command, path: str = "biaslens") -> dict[str, list[str]]:
    """Every command's parameters as ``--flag --alias`` (options, with ``(several)`` and
    ``(switch)``) and ``<name>`` (arguments)."""
    found = {}
    shown = []
    for param in command.params:
        if param.param_type_name == "argument":
            shown.append(f"<{param.name}>" + (" (several)" if param.nargs == -1 else ""))
            continue
        shown.append(
            " ".join(sorted(param.opts) + sorted(param.secondary_opts))
            + (" (several)" if param.multiple else "")
            + (" (switch)" if param.is_flag else "")
        )
    found[path] = sorted(shown)
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found.update(flags_of(sub, f"{path} {name}"))
    return found


def test_every_command_takes_the_recorded_flags():
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert flags_of(app) == recorded


def test_a_changed_flag_is_seen():
    command = click.Command(
        "x", params=[click.Option(["--lam"], multiple=True), click.Argument(["run"])]
    )
    assert flags_of(command) == {"biaslens": ["--lam (several)", "<run>"]}
