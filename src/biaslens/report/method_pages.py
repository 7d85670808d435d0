"""One documentation page per method, written from what the code declares (``docs/methods/``).

A page holds what the method measures and the paper's definition (the method module's own
docstring), its headline metrics with their definition, range, no-bias value and direction
(:class:`~biaslens.metrics.meanings.Measure`), its settings with their defaults and help, the
values ``--preset paper`` restores, its rows of the departures table (``docs/fidelity.md``) and
its output files.
``scripts/docs.sh`` writes them; a test checks they are current.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from biaslens.framework.names import settings_table
from biaslens.framework.presets import ByModel
from biaslens.framework.registry import MethodSpec, methods


def _settings_table(spec: MethodSpec) -> list[str]:
    """Each setting as ``biaslens run NAME --help`` and ``biaslens.settings(NAME)`` show it
    (:func:`~biaslens.framework.names.settings_table`): its keyword and flag, its default
    (``all`` for a limit not given) and its help."""
    lines = ["| setting | flag | default | meaning |", "|---|---|---|---|"]
    for row in settings_table(spec):
        if row["setting"] == "model":
            continue
        default = row["default"] or ("all" if row["setting"] == "limit" else "—")
        meaning = row["help"].replace("|", "\\|")
        lines.append(f"| `{row['setting']}` | `{row['flag']}` | `{default}` | {meaning} |")
    return lines


def _preset_lines(spec: MethodSpec) -> list[str]:
    lines = []
    for preset, values in spec.presets.items():
        if not values:
            lines += [f"`--preset {preset}` sets nothing: the defaults are its choices.", ""]
            continue
        lines.append(f"`--preset {preset}` sets:")
        lines.append("")
        for key, value in values.items():
            shown = "chosen by the model's class" if isinstance(value, ByModel) else f"`{value}`"
            lines.append(f"- `{key}`: {shown}")
        lines.append("")
    return lines or ["This method has no preset.", ""]


def departures(fidelity: str, method: str) -> list[str]:
    """The rows of the departures table (the first table of ``fidelity`` whose first column is
    ``method``) whose method cell names ``method``."""
    lines = fidelity.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"\|\s*method\s*\|", line)), None)
    if start is None:
        raise ValueError("the fidelity page has no departures table (a '| method |' header)")
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    header, chosen = rows[:2], []
    for row in rows[2:]:
        names = re.split(r"[,\s]+", row.split("|")[1].strip())
        if method in names:
            chosen.append(row)
    return [*header, *chosen] if chosen else ["biaslens follows the paper here: no departures."]


def page(spec: MethodSpec, fidelity: str) -> str:
    """The Markdown page of ``spec``."""
    module = inspect.getmodule(spec.body)
    doc = inspect.cleandoc(module.__doc__ or "") if module is not None else ""
    lines = [f"# {spec.name}", "", f"**{spec.title}**", "", doc, "", "## Headline metrics", ""]
    measures = [m for h in spec.headlines for m in h.measures]
    for measure in dict.fromkeys(measures):
        lines.append(
            f"- **{measure.symbol}** (`{measure.column}`): {measure.line().split(': ', 1)[1]}"
        )
    if not measures:
        lines.append("This method reports tables without a headline metric.")
    lines += ["", "## Settings", "", *_settings_table(spec), "", "## The paper preset", ""]
    lines += _preset_lines(spec)
    lines += ["## Departures from the paper", "", *departures(fidelity, spec.name), ""]
    lines += ["## Output files", ""]
    lines += [f"- `{f.name}`: {f.what}" for f in spec.outputs]
    lines += ["", "Every column is described in [the results reference](../results.md).", ""]
    return "\n".join(lines)


def write_pages(folder: Path, fidelity: Path) -> list[Path]:
    """Write every method's page under ``folder`` (the departures read from ``fidelity``, the
    documentation's page on the paper preset); returns the paths written."""
    text = fidelity.read_text(encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in methods().values():
        path = folder / f"{spec.name}.md"
        path.write_text(page(spec, text), encoding="utf-8")
        written.append(path)
    return written


NAV_SECTION = "  - Method reference:"
"""The line of ``mkdocs.yml``'s nav under which the method pages are listed."""


def with_method_nav(mkdocs_yml: str, folder: str = "methods") -> str:
    """``mkdocs.yml``'s text with the method reference section of its nav listing one page per
    registered method (in the registry's order), so that a new method needs no edit there."""
    lines = mkdocs_yml.splitlines()
    if NAV_SECTION not in lines:
        raise ValueError(f"mkdocs.yml has no nav line {NAV_SECTION.strip()!r}")
    start = lines.index(NAV_SECTION) + 1
    end = start
    while end < len(lines) and lines[end].startswith("      "):
        end += 1
    entries = [f"      - {folder}/{name}.md" for name in methods()]
    return "\n".join([*lines[:start], *entries, *lines[end:]]) + "\n"


def write_nav(mkdocs_yml: Path) -> None:
    """Rewrite ``mkdocs.yml``'s method reference nav (:func:`with_method_nav`)."""
    text = mkdocs_yml.read_text(encoding="utf-8")
    mkdocs_yml.write_text(with_method_nav(text), encoding="utf-8")
