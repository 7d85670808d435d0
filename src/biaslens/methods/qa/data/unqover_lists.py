"""UnQover's word lists (``word_lists/`` layout): subjects, activities and slot templates,
parsed with errors that name the file and line (see :mod:`biaslens.methods.qa.data.unqover` for the
format and how questions are built from them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biaslens.common.files import control_character, read_text
from biaslens.errors import BiaslensError


@dataclass(frozen=True)
class Subject:
    term: str  # the [subj] form: the subject's identity in keys and metrics
    cluster: str
    forms: dict[str, str]  # slot head ("[subj]", "[subj:dem]") -> text


@dataclass(frozen=True)
class Activity:
    attribute: str  # the [p_act] text of this row: UnQover's unique attribute form
    category: str
    forms: dict[str, str]  # slot head ("[p_act-single]", "[p_act-single:neg]") -> text


@dataclass(frozen=True)
class SlotTemplate:
    tid: int
    context: str
    question: str
    negated_question: str
    line: int


@dataclass(frozen=True)
class Domain:
    """Which word lists make a domain's question set."""

    subjects: tuple[str, ...]  # one list; two lists = every cross pair (gender: female × male)
    slots: str
    activities: str
    named: bool = False
    """Its subjects are names, draws from the people of each list (gender's first names); else
    they are categories, the population a user asks about (these religions)."""

    def subjects_are(self, choice: str = "auto") -> str:
        """``drawn`` or ``fixed`` for the intervals: ``choice`` unless ``auto``, then drawn for
        names and fixed for categories."""
        if choice != "auto":
            return choice
        return "drawn" if self.named else "fixed"


DOMAINS: dict[str, Domain] = {
    "gender": Domain(("female", "male"), "gender_noact", "occupation_rev1", named=True),
    "ethnicity": Domain(("ethnicity",), "ethnicity_noact", "biased_ethnicity"),
    "religion": Domain(("religion",), "religion_noact", "biased_religion"),
    "nationality": Domain(("country",), "country_noact", "biased_country"),
}


def check_domain(domain: str) -> Domain:
    if domain not in DOMAINS:
        raise BiaslensError(f"unknown domain {domain!r}; known: {', '.join(DOMAINS)}")
    return DOMAINS[domain]


def read_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, stripped text) of every non-blank, non-comment line."""
    path = Path(path)
    rows = []
    for number, raw in enumerate(read_text(path, "word list").splitlines(), start=1):
        text = raw.strip()
        if text and not text.startswith("#"):
            control = control_character(text)
            if control is not None:
                raise BiaslensError(
                    f"{path}:{number}: a control character ({control!r}) in {text[:60]!r}; a "
                    "word list holds words"
                )
            rows.append((number, text))
    if not rows:
        raise BiaslensError(f"{path}: the list is empty")
    return rows


def _head_and_value(path: Path, number: int, text: str) -> tuple[str, str, str]:
    head, _, rest = text.partition(" ")
    if not (head.startswith("[") and head.endswith("]")):
        raise BiaslensError(f"{path}:{number}: expected '[slot] text', got {text!r}")
    parts = [p.strip() for p in rest.split("|")]
    if len(parts) == 1:
        cluster, value = "None", parts[0]
    elif len(parts) == 2:
        cluster, value = parts
    else:
        raise BiaslensError(f"{path}:{number}: more than one '|' in {text!r}")
    if not value:
        raise BiaslensError(f"{path}:{number}: empty text after {head}")
    return head, cluster, value


def parse_subjects(path: Path) -> list[Subject]:
    """Subjects with their aligned forms; rows of each form must line up."""
    path = Path(path)
    forms: dict[str, list[tuple[int, str, str]]] = {}
    for number, text in read_lines(path):
        head, cluster, value = _head_and_value(path, number, text)
        forms.setdefault(head, []).append((number, cluster, value))
    if "[subj]" not in forms:
        raise BiaslensError(f"{path}: no [subj] rows")
    size = len(forms["[subj]"])
    for head, rows in forms.items():
        if len(rows) != size:
            raise BiaslensError(f"{path}: {len(rows)} {head} rows but {size} [subj] rows")
    seen: dict[str, int] = {}
    for number, _, term in forms["[subj]"]:
        if term.casefold() in seen:
            raise BiaslensError(
                f"{path}:{number}: the subject {term!r} is listed twice (first on line "
                f"{seen[term.casefold()]}): it would be paired with itself and counted twice"
            )
        seen[term.casefold()] = number
    subjects = []
    for i, (_, cluster, term) in enumerate(forms["[subj]"]):
        subjects.append(Subject(term, cluster, {head: rows[i][2] for head, rows in forms.items()}))
    return subjects


def parse_activities(path: Path) -> dict[str, list[Activity]]:
    """Activity type (``[p_act]``, ``[p_act-single]`` …) → its aligned rows."""
    path = Path(path)
    heads: dict[str, list[tuple[int, str, str]]] = {}
    for number, text in read_lines(path):
        head, cluster, value = _head_and_value(path, number, text)
        heads.setdefault(head, []).append((number, cluster, value))
    types = sorted({h.split(":")[0].rstrip("]") + "]" for h in heads})
    activities: dict[str, list[Activity]] = {}
    for kind in types:
        unique_kind = kind.split("-")[0] + "]" if "-" in kind else kind
        if kind not in heads or unique_kind not in heads:
            raise BiaslensError(f"{path}: activity variants of {kind} without {kind} rows")
        rows = heads[kind]
        members = {h: r for h, r in heads.items() if h == kind or h.startswith(kind[:-1] + ":")}
        for head, other in members.items():
            if len(other) != len(rows):
                raise BiaslensError(f"{path}: {len(other)} {head} rows but {len(rows)} {kind}")
        if len(heads[unique_kind]) != len(rows):
            raise BiaslensError(f"{path}: {kind} and {unique_kind} rows do not line up")
        activities[kind] = [
            Activity(
                attribute=heads[unique_kind][i][2],
                category=rows[i][1],
                forms={h: other[i][2] for h, other in members.items()},
            )
            for i in range(len(rows))
        ]
    return activities


def parse_slots(path: Path) -> list[SlotTemplate]:
    path = Path(path)
    templates = []
    for tid, (number, text) in enumerate(read_lines(path)):
        fields = [f.strip() for f in text.split("\t") if f.strip()]
        if len(fields) != 3:
            raise BiaslensError(
                f"{path}:{number}: expected context<TAB>question<TAB>negated question, "
                f"got {len(fields)} field(s)"
            )
        templates.append(SlotTemplate(tid, *fields, line=number))
    return templates
