"""The command line is an interface: every command's flags are those recorded in
``tests/fixtures/cli_flags.json`` (a flag renamed, dropped or turned into a switch is a change a
user's scripts see). A deliberate change, or a new method's command, is recorded with
``BIASLENS_NO_PLUGINS=1 python tests/cli/test_flags.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

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
    if isinstance(command, click.Group):  # commands built when asked for count too
        for name in sorted(command.list_commands(None)):
            found.update(flags_of(command.get_command(None, name), f"{path} {name}"))
    return found


def current_flags() -> dict[str, list[str]]:
    from biaslens.cli import app

    return flags_of(app)


def test_every_command_takes_the_recorded_flags():
    """Read in a process of its own without plug-ins: biaslens's commands as it ships."""
    code = "import json, tests.cli.test_flags as t; print(json.dumps(t.current_flags()))"
    env = {**os.environ, "BIASLENS_NO_PLUGINS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert json.loads(done.stdout) == recorded


def test_a_changed_flag_is_seen():
    command = click.Command(
        "x", params=[click.Option(["--lam"], multiple=True), click.Argument(["run"])]
    )
    assert flags_of(command) == {"biaslens": ["--lam (several)", "<run>"]}


if __name__ == "__main__":
    text = json.dumps(current_flags(), indent=1, sort_keys=True, ensure_ascii=False)
    RECORDED.write_text(text, encoding="utf-8")
