"""The README's and the manual's commands name only commands and options that exist (a documented
option that does not exist is the first thing a new user trips over)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from biaslens.cli import app
from biaslens.framework.registry import methods

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GENERATED = ("methods/", "results.md")


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return [p for item in nav for p in _nav_pages(item)]


def manual_pages() -> list[Path]:
    """The README, then the written pages of the documentation site in its order (pages
    generated from the code are checked against the code instead)."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages = [p for p in _nav_pages(nav) if not p.startswith(GENERATED)]
    return [README, *(ROOT / "docs" / p for p in pages)]


def manual_text() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in manual_pages())


def readme_commands() -> list[str]:
    """Every ``biaslens …`` command line in the manual's code blocks (continuations joined)."""
    blocks, current, inside = [], [], False
    for line in manual_text().splitlines():
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
    command = app
    path = []
    for word in words:  # commands built when asked for (click's get_command) count too
        sub = command.get_command(None, word) if isinstance(command, click.Group) else None
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
        if isinstance(command, click.Group):
            problems.append(f"incomplete command: biaslens {line}")
            continue
        known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        for word in words[len(path) :]:
            option = word.split("=")[0]
            if re.fullmatch(r"--?[a-zA-Z][\w-]*", option) and option not in known:
                problems.append(f"biaslens {' '.join(path)}: no option {option}")
    assert problems == []


def python_blocks() -> list[str]:
    """The manual's ```python blocks (an excerpt of a file is fenced with its title, ```python
    title="FILE (excerpt)", and is not run here: its file is, by its own tests)."""
    return re.findall(r"```python\n(.*?)```", manual_text(), flags=re.S)


def test_every_module_path_the_readme_names_exists():
    import importlib

    names = set(re.findall(r"`(biaslens(?:\.[A-Za-z_]\w*)+)", manual_text()))
    assert len(names) >= 8
    missing = []
    for name in sorted(names):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                target = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            try:
                for attribute in parts[cut:]:
                    target = getattr(target, attribute)
            except AttributeError:
                missing.append(name)
            break
        else:
            missing.append(name)
    assert missing == []


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_blocks_run(index, tiny_models, tmp_path, monkeypatch, capsys):
    """Each block runs as written, on a tiny model where it names the default one."""
    block = python_blocks()[index]
    assert '"default"' in block or "'default'" not in block
    code = block.replace('"default"', repr(str(tiny_models["llama"])))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"manual python block {index}", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert printed.strip(), "the block prints its result"


def test_no_readme_command_uses_a_deprecated_spelling():
    deprecated = {
        flag
        for spec in methods().values()
        for option in spec.options
        for flag, _ in option.deprecated
    }
    assert {"--mode", "--top-k", "--head-words"} <= deprecated
    used = [
        (command, word)
        for command in readme_commands()
        for word in re.findall(r"--[\w-]+", command)
        if word in deprecated
    ]
    assert not used


def test_reading_the_results_explains_every_headline_metric():
    """Each metric a method declares as headline has its row in "Reading the results"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Reading the results", 1)[1].split("\n## ", 1)[0]
    for spec in methods().values():
        for headline in spec.headlines:
            for measure in headline.measures:
                assert measure.symbol in section or f"`{measure.column}`" in section, (
                    spec.name,
                    measure.column,
                )


def test_every_excerpt_names_a_file_that_exists():
    titles = re.findall(r'```python title="([^"]+) \(excerpt\)"', manual_text())
    assert titles and all((ROOT / title).is_file() for title in titles), titles
