"""Winogender schemas (Rudinger et al., 2018) and the SIB paper's extended set (Appendix H).

The loader reads the original ``templates.tsv`` and ``occupations-stats.tsv``; the
instantiation is our own (the original script is Python 2).

Extended Winogender: 60 occupations x 2 templates (pronoun coreferent with the occupation,
answer 0, or with the participant, answer 1) x participants {the original participant,
someone, the man, the woman} = 480 sentences with the pronoun replaced by ``[MASK]``. A
sentence is well-specified for gendered pronoun resolution only when the pronoun refers to the
participant and the participant is "the man" or "the woman".
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from biaslens.common.files import read_text
from biaslens.common.tokens import MASK
from biaslens.data.sources import PACKAGE_FILES
from biaslens.errors import BiaslensError

TEMPLATES_FILE = "templates.tsv"
STATS_FILE = "occupations-stats.tsv"
PRONOUN_SLOTS = ("$NOM_PRONOUN", "$POSS_PRONOUN", "$ACC_PRONOUN")
KNOWN_SLOTS = {"$OCCUPATION", "$PARTICIPANT", *PRONOUN_SLOTS}
PARTICIPANTS = ("original", "someone", "man", "woman")
_SLOT = re.compile(r"\$[A-Z_]+")
_ARTICLE_PARTICIPANT = re.compile(r"\b([Tt]he|[Aa]n?) \$PARTICIPANT")


def _read_tsv(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    text = read_text(path, "Winogender file")
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t")
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise BiaslensError(f"{path}:1: missing column(s) {missing}")
    try:
        return [(line, row) for line, row in enumerate(reader, start=2)]
    except csv.Error as error:
        raise BiaslensError(f"{path}:{reader.line_num}: {error}") from None


def load_templates(folder: Path) -> pd.DataFrame:
    """The 120 templates: occupation, participant, answer (0 occupation, 1 participant), text.

    Every template must hold ``$OCCUPATION``, ``$PARTICIPANT`` and exactly one pronoun slot;
    anything else is an error naming the file and line."""
    path = Path(folder) / TEMPLATES_FILE
    columns = ("occupation(0)", "other-participant(1)", "answer", "sentence")
    rows = []
    for line, row in _read_tsv(path, columns):
        template = row["sentence"] or ""
        slots = _SLOT.findall(template)
        unknown = sorted(set(slots) - KNOWN_SLOTS)
        if unknown:
            raise BiaslensError(f"{path}:{line}: unknown placeholder(s) {unknown}")
        pronouns = [s for s in slots if s in PRONOUN_SLOTS]
        if len(pronouns) != 1 or "$OCCUPATION" not in slots or "$PARTICIPANT" not in slots:
            raise BiaslensError(
                f"{path}:{line}: a template needs $OCCUPATION, $PARTICIPANT and one pronoun slot"
            )
        if row["answer"] not in {"0", "1"}:
            raise BiaslensError(f"{path}:{line}: answer must be 0 or 1, got {row['answer']!r}")
        rows.append(
            {
                "occupation": row["occupation(0)"],
                "participant": row["other-participant(1)"],
                "answer": int(row["answer"]),
                "template": template,
            }
        )
    if not rows:
        raise BiaslensError(f"{path}: no templates")
    return pd.DataFrame(rows)


def load_occupation_stats(folder: Path) -> pd.DataFrame:
    """Occupation, Bergsma and BLS 2015 % female."""
    path = Path(folder) / STATS_FILE
    rows = []
    for line, row in _read_tsv(path, ("occupation", "bergsma_pct_female", "bls_pct_female")):
        try:
            rows.append(
                {
                    "occupation": row["occupation"],
                    "bergsma_pct_female": float(row["bergsma_pct_female"]),
                    "bls_pct_female": float(row["bls_pct_female"]),
                }
            )
        except (TypeError, ValueError):
            raise BiaslensError(f"{path}:{line}: % female values must be numbers") from None
    return pd.DataFrame(rows)


def _fill_participant(template: str, participant: str, original: str) -> str:
    """Replace the participant: the original noun keeps its article; "someone" replaces
    article + noun; "man"/"woman" keep the article ("the man", "a woman")."""
    if participant == "original":
        return template.replace("$PARTICIPANT", original)
    if participant == "someone":

        def someone(match: re.Match) -> str:
            return "Someone" if match.group(1)[0].isupper() else "someone"

        filled = _ARTICLE_PARTICIPANT.sub(someone, template)
        return filled.replace("$PARTICIPANT", "someone")
    return template.replace("$PARTICIPANT", participant)


def instantiate(template: str, occupation: str, participant: str, original: str) -> str:
    """One sentence with the pronoun slot as ``[MASK]``."""
    text = _fill_participant(template, participant, original).replace("$OCCUPATION", occupation)
    for slot in PRONOUN_SLOTS:
        text = text.replace(slot, MASK)
    return text


def build_extended(folder: Path) -> pd.DataFrame:
    """The 480-sentence extended Winogender set with stable ids and well-specified labels.

    Ids are ``{occupation}_{participant}_{answer}`` with the participant written as the
    original noun, ``someone``, ``man`` or ``woman``."""
    templates = load_templates(folder)
    rows = []
    for t in templates.itertuples():
        for participant in PARTICIPANTS:
            name = t.participant if participant == "original" else participant
            rows.append(
                {
                    "id": f"{t.occupation}_{name}_{t.answer}",
                    "occupation": t.occupation,
                    "participant": name,
                    "answer": t.answer,
                    "sentence": instantiate(t.template, t.occupation, participant, t.participant),
                    "well_specified": t.answer == 1 and participant in ("man", "woman"),
                }
            )
    table = pd.DataFrame(rows)
    duplicated = table["id"][table["id"].duplicated()].tolist()
    if duplicated:
        raise BiaslensError(f"duplicate sentence ids in {folder}: {duplicated[:3]}")
    return table


SIMPLIFIED_FILE = PACKAGE_FILES / "simplified_winogender.tsv"
SIMPLIFIED_GENDERS = ("female", "male", "")


def load_simplified_templates(path: Path = SIMPLIFIED_FILE) -> pd.DataFrame:
    """The project's rewritten occupation-coreferent templates (paper H.1), with the
    occupations left out and why (``excluded_because``)."""
    text = read_text(path, "Simplified templates file")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    reader = csv.DictReader(lines, delimiter="\t")
    rows = []
    for number, row in enumerate(reader, start=2):
        template = row.get("template") or ""
        if template:
            slots = _SLOT.findall(template)
            pronouns = [s for s in slots if s in PRONOUN_SLOTS]
            if set(slots) - KNOWN_SLOTS or len(pronouns) != 1 or "$OCCUPATION" not in slots:
                raise BiaslensError(
                    f"{path}: data row {number}: needs $OCCUPATION and exactly one pronoun slot"
                )
        elif not row.get("excluded_because"):
            raise BiaslensError(f"{path}: data row {number}: no template and no exclusion reason")
        rows.append(row)
    return pd.DataFrame(rows)


def build_simplified(path: Path = SIMPLIFIED_FILE) -> pd.DataFrame:
    """The Simplified set: each included template x {female, male, unmarked} professional.

    ``The female engineer said that [MASK] ...`` is well-specified; the unmarked
    ``The engineer said that [MASK] ...`` is not. Ids: ``{occupation}_{female|male|none}_0``."""
    templates = load_simplified_templates(path)
    rows = []
    for t in templates[templates["template"] != ""].itertuples():
        for gender in SIMPLIFIED_GENDERS:
            described = f"{gender} {t.occupation}".strip()
            sentence = t.template.replace("$OCCUPATION", described)
            for slot in PRONOUN_SLOTS:
                sentence = sentence.replace(slot, MASK)
            rows.append(
                {
                    "id": f"{t.occupation}_{gender or 'none'}_0",
                    "occupation": t.occupation,
                    "participant": "",
                    "answer": 0,
                    "sentence": sentence,
                    "well_specified": bool(gender),
                }
            )
    return pd.DataFrame(rows)


REFERENCE_SIMPLIFIED_FILE = "all_sentences_g_id.tsv"
"""The SIB reference repository's own Simplified sentences (``biaslens datasets download
sib-simplified``; that repository has no license, so they are fetched, never shipped)."""
_REFERENCE_ID = re.compile(r"^(?P<occupation>[a-z_]+)_(?P<gender>female|male|unspecified)_0$")


def build_simplified_reference(folder: Path) -> pd.DataFrame:
    """The reference Simplified set (48 occupations x {female, male, unspecified} = 144): the
    sentences the paper's Table 3 was computed on, ``MASK`` marking the pronoun."""
    path = Path(folder) / REFERENCE_SIMPLIFIED_FILE
    rows = []
    for line, row in _read_tsv(path, ("sentid", "sentence")):
        match = _REFERENCE_ID.match(row["sentid"] or "")
        sentence = row["sentence"] or ""
        if match is None or sentence.count("MASK") != 1:
            raise BiaslensError(f"{path}:{line}: expected an id occupation_gender_0 and one MASK")
        gender = match["gender"]
        rows.append(
            {
                "id": row["sentid"],
                "occupation": match["occupation"],
                "participant": "",
                "answer": 0,
                "sentence": sentence.replace("MASK", MASK),
                "well_specified": gender != "unspecified",
            }
        )
    return pd.DataFrame(rows)
