"""The README's commands name only commands and options that exist (a documented option that
does not exist is the first thing a new user trips over)."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from biaslens.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands() -> list[str]:
    """Every ``biaslens …`` command line in the README's code blocks (continuations joined)."""
    blocks, current, inside = [], [], False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            if inside:
                blocks.append("\n".join(current))
            current, inside = [], not inside
        elif inside:
            current.append(line)
    commands = []
    for block in blocks:
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            match = re.search(r"(?:^|[\s;&|(])(?:\S*/)?biaslens\s+(.*)$", line)
            if match and not line.startswith(("pip", "python")):
                commands.append(match.group(1))
    return commands


def resolve(words: list[str]):
    command = typer.main.get_command(app)
    path = []
    for word in words:
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        command, path = sub, [*path, word]
    return command, path


def test_readme_has_commands():
    assert len(readme_commands()) >= 15


def test_every_readme_command_and_option_exists():
    problems = []
    for line in readme_commands():
        words = line.replace("[", " ").replace("]", " ").replace("|", " ").split()
        command, path = resolve(words)
        if not path:
            problems.append(f"unknown command: biaslens {line}")
            continue
        if getattr(command, "commands", None):
            problems.append(f"incomplete command: biaslens {line}")
            continue
        known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        for word in words[len(path) :]:
            option = word.split("=")[0]
            if re.fullmatch(r"--?[a-zA-Z][\w-]*", option) and option not in known:
                problems.append(f"biaslens {' '.join(path)}: no option {option}")
    assert problems == []
