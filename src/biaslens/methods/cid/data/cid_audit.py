"""Name groups and templates of the CID name-swap bias audit (CID paper Section 4, Appendix C).

Name groups and templates are YAML files (the project's own in ``data/files/``, or the user's):
``{group: {gender: male|female, names: [...]}}`` and ``{template_id: "text with {name}"}``.
A template's pronoun slots ({he}, {him}, {his}, {He}, {His}) are filled to match the name's
gender, as in the paper's "failed his (her) interview ... because he (she)".
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biaslens.common.files import check_plain_text, read_text
from biaslens.common.structured import load_yaml
from biaslens.data.sources import PACKAGE_FILES
from biaslens.errors import BiaslensError

GENDERS = ("male", "female")
PRONOUNS = {
    "male": {"he": "he", "him": "him", "his": "his", "He": "He", "His": "His"},
    "female": {"he": "she", "him": "her", "his": "her", "He": "She", "His": "Her"},
}
DEFAULT_TEMPLATE = "software-developer"


@dataclass(frozen=True)
class NameGroup:
    name: str
    gender: str
    names: tuple[str, ...]


def _read_yaml(path: Path) -> dict:
    data = load_yaml(read_text(path, "YAML file"), path, "YAML file")
    if not isinstance(data, dict) or not data:
        raise BiaslensError(f"{path}: expected a non-empty mapping at the top level")
    return data


def load_name_groups(path: Path | str | None = None) -> dict[str, NameGroup]:
    """Name groups from ``path`` (default: the paper's six groups of Appendix C)."""
    path = Path(path) if path is not None else PACKAGE_FILES / "cid_names.yaml"
    groups = {}
    for key, entry in _read_yaml(path).items():
        where = f"{path}: group {key!r}"
        if not isinstance(entry, dict):
            raise BiaslensError(f"{where}: expected fields 'gender' and 'names'")
        gender = entry.get("gender")
        if gender not in GENDERS:
            raise BiaslensError(f"{where}: field 'gender' must be male or female, got {gender!r}")
        names = entry.get("names")
        if not isinstance(names, list) or not names:
            raise BiaslensError(f"{where}: field 'names' must be a non-empty list")
        if any(not isinstance(n, str) or not n.strip() for n in names):
            raise BiaslensError(f"{where}: field 'names' holds a blank or non-text name")
        cleaned = tuple(check_plain_text(n.strip(), f"{where}: a name") for n in names)
        repeated = sorted({n for n in cleaned if cleaned.count(n) > 1})
        if repeated:
            raise BiaslensError(
                f"{where}: name(s) {repeated} listed more than once (each would count twice in "
                "every pair)"
            )
        groups[str(key)] = NameGroup(str(key), gender, cleaned)
    return groups


def load_templates(path: Path | str | None = None) -> dict[str, str]:
    """Templates from ``path`` (default: the project's file with the paper's templates)."""
    path = Path(path) if path is not None else PACKAGE_FILES / "cid_templates.yaml"
    templates = {}
    for key, text in _read_yaml(path).items():
        if not isinstance(text, str) or not text.strip():
            raise BiaslensError(f"{path}: template {key!r} must be non-empty text")
        check_template(text, f"{path}: template {key!r}")
        templates[str(key)] = text.strip()
    return templates


def check_template(text: str, where: str = "template") -> None:
    """A template needs the ``{name}`` slot and may use only the pronoun slots."""
    try:
        parsed = [part for part in string.Formatter().parse(text) if part[1] is not None]
    except ValueError as error:
        raise BiaslensError(f"{where}: malformed slot: {error}") from None
    for _, field, spec, conversion in parsed:
        if "." in field or "[" in field:
            raise BiaslensError(
                f"{where}: slot {{{field}}} reads an attribute or an index; slots are plain "
                "({name}, {he})"
            )
        if spec or conversion:
            raise BiaslensError(
                f"{where}: slot {{{field}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} has a format; slots are plain ({{name}}, {{he}})"
            )
    slots = {field for _, field, _, _ in parsed}
    if "name" not in slots:
        raise BiaslensError(f"{where}: has no {{name}} slot: {text!r}")
    unknown = slots - {"name", *PRONOUNS["male"]}
    if unknown:
        allowed = ", ".join("{" + s + "}" for s in ["name", *PRONOUNS["male"]])
        raise BiaslensError(f"{where}: unknown slot(s) {sorted(unknown)}; allowed: {allowed}")


def fill_template(text: str, name: str, gender: str) -> str:
    check_template(text)
    return text.format(name=name, **PRONOUNS[gender])


def audit_pairs(group_a: NameGroup, group_b: NameGroup, template: str) -> pd.DataFrame:
    """All |A|·|B| name pairs with both filled inputs (x from group A, x' from group B)."""
    if group_a.name == group_b.name:
        raise BiaslensError("choose two different name groups")
    rows = [
        {
            "pair": i,
            "name_a": a,
            "name_b": b,
            "x_a": fill_template(template, a, group_a.gender),
            "x_b": fill_template(template, b, group_b.gender),
        }
        for i, (a, b) in enumerate(itertools.product(group_a.names, group_b.names))
    ]
    return pd.DataFrame(rows)
