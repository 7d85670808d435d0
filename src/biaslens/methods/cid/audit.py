"""CID name-swap bias audit (CID paper Section 4, Appendix C).

For two name groups and a template, every name pair (a, b) gives x = template(a) and
x' = template(b) with pronouns matched to each name's gender. For each λ on the grid, the run
decodes CID(x; x', λ) (a continuation for group A's name) and CID(x'; x, λ) (for group B's);
λ = 0 is greedy decoding. It writes every continuation, the most common ones per group and λ
(like Fig. 3 / Appendix C.1), and a CSV for human rating. ``biaslens cid-ratings``
(:mod:`biaslens.methods.cid.ratings`) reads the rated CSV back and adds the fraction of biased
continuations per group and λ (Fig. 2) to the run. Ratings are never produced by the tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pandas as pd
from pydantic import Field, model_validator

from biaslens.common.options import FLAG, Flag
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole, AuditStep
from biaslens.framework.options import filled
from biaslens.framework.questions import Question
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.framework.settings import MethodSettings, ModelName, validated
from biaslens.methods.cid.data import cid_audit as names_data
from biaslens.methods.cid.metrics.cid import (
    FRACTION_BIASED,
    top_continuations,
)
from biaslens.methods.cid.outputs import AUDIT as CID_FILES_AUDIT
from biaslens.methods.cid.paired_ratings import paired_biased_fraction
from biaslens.methods.cid.ratings import RATE, RATING_COLUMNS, RATINGS_EXPORT
from biaslens.methods.cid.scoring.contrastive import DecodingSettings, decode_both_directions
from biaslens.models.base import LM
from biaslens.store.run import dataset_hash

METHOD = "cid-audit"
DEFAULT_GROUPS = ("us-male", "egypt-male")


class AuditSettings(MethodSettings):
    """Settings that decide an audit's results (the names and template text are stored too)."""

    model: ModelName = "default"
    group_a: str = DEFAULT_GROUPS[0]
    group_b: str = DEFAULT_GROUPS[1]
    names_a: tuple[str, ...]
    names_b: tuple[str, ...]
    gender_a: str
    gender_b: str
    template_id: Annotated[str, Flag("--template")] = Field(
        default=names_data.DEFAULT_TEMPLATE, description="Template id."
    )
    template: str
    decoding: Annotated[DecodingSettings, Flag(nested="fill", skip=("stop",))] = DecodingSettings()
    groups: Annotated[tuple[str, ...], FLAG] = Field(
        default=DEFAULT_GROUPS,
        exclude=True,
        description="Two name groups (paper App. C): us-male, us-female, mexico-male, "
        "mexico-female, egypt-male, egypt-female (or those of --names-file).",
    )
    templates_file: Annotated[Path | None, FLAG] = Field(
        default=None,
        exclude=True,
        description="YAML {id: text with {name} and {he}/{his}/{him}}.",
    )
    names_file: Annotated[Path | None, FLAG] = Field(
        default=None,
        exclude=True,
        description="YAML {group: {gender, names}} (default: paper App. C).",
    )

    @model_validator(mode="after")
    def _check(self) -> AuditSettings:
        if self.group_a == self.group_b:
            raise ValueError("choose two different name groups")
        names_data.check_template(self.template, f"template {self.template_id!r}")
        return self


def make_settings(**values) -> AuditSettings:
    """Settings from what the user gives (the defaults are the fields'): the two groups' names
    and the template's text are read from the name and template files and recorded."""
    fields = AuditSettings.model_fields
    groups, template_id, names_file, templates_file = (
        values.pop(name, fields[name].default)
        for name in ("groups", "template_id", "names_file", "templates_file")
    )
    if len(groups) != 2:
        raise BiaslensError(f"--groups takes two name groups, got {len(groups)}: {list(groups)}")
    name_groups = names_data.load_name_groups(names_file)
    templates = names_data.load_templates(templates_file)
    for group in groups:
        if group not in name_groups:
            raise BiaslensError(
                f"unknown name group {group!r}; known: {', '.join(sorted(name_groups))}"
            )
    if template_id not in templates:
        raise BiaslensError(
            f"unknown template {template_id!r}; known: {', '.join(sorted(templates))}"
        )
    a, b = (name_groups[g] for g in groups)
    return validated(
        AuditSettings,
        {
            **filled(AuditSettings, values),
            "group_a": a.name,
            "group_b": b.name,
            "names_a": a.names,
            "names_b": b.names,
            "gender_a": a.gender,
            "gender_b": b.gender,
            "template_id": template_id,
            "template": templates[template_id],
            "groups": tuple(groups),
            "names_file": names_file,
            "templates_file": templates_file,
        },
    )


def build_pairs(settings: AuditSettings) -> pd.DataFrame:
    group_a = names_data.NameGroup(settings.group_a, settings.gender_a, settings.names_a)
    group_b = names_data.NameGroup(settings.group_b, settings.gender_b, settings.names_b)
    pairs = names_data.audit_pairs(group_a, group_b, settings.template)
    return pairs.rename(columns={"x_a": "x", "x_b": "x_prime"})


def prepare(settings: AuditSettings, lm: LM) -> AuditSettings:
    lm.require("contrastive_generate")
    return settings


def run(ctx: RunContext, settings: AuditSettings) -> MethodOutput:
    """Decode all pairs, directions and λ values; count continuations; export for rating."""
    pairs = build_pairs(settings)
    decoded = decode_both_directions(ctx.lm, pairs, settings.decoding, ctx.progress, "CID audit")
    samples = decoded.merge(pairs[["pair", "name_a", "name_b"]], on="pair")
    forward = samples["direction"] == "forward"
    samples["group"] = forward.map({True: settings.group_a, False: settings.group_b})
    samples["name"] = samples["name_a"].where(forward, samples["name_b"])
    samples["contrast_name"] = samples["name_b"].where(forward, samples["name_a"])
    samples = samples.drop(columns=["name_a", "name_b"])
    counts = top_continuations(samples, ["group", "lam"], n=None)
    export = counts.assign(biased="").reset_index(names="id")
    return MethodOutput(
        metrics={
            "num_pairs": len(pairs),
            "num_continuations": len(samples),
            "distinct_continuations": {
                f"{g}|{lam:g}": int(n)
                for (g, lam), n in counts.groupby(["group", "lam"]).size().items()
            },
        },
        tables={
            "continuations": counts,
            RATINGS_EXPORT.removesuffix(".csv"): export[RATING_COLUMNS],
        },
        samples={"samples": samples},
        provenance={"dataset": {"name": "cid-names", "sha256": dataset_hash(pairs)}},
        notes=[
            "to rate: fill the `biased` column of ratings_to_fill.csv, then run "
            "`biaslens cid-ratings RUN_DIR FILE`"
        ],
    )


SHOWN_PER_CELL = 5


REPORT_PER_CELL = 3
"""Continuations the report shows per group and λ (the table holds them all)."""


def _report_continuations(counts: pd.DataFrame) -> pd.DataFrame:
    """The most common continuations of each group and λ (stored most common first)."""
    return counts.groupby(["group", "lam"], sort=False).head(REPORT_PER_CELL)


def _continuations_view(counts: pd.DataFrame) -> pd.DataFrame:
    """λ down, the two groups across, the most common continuations (with counts) per cell."""
    top = counts.groupby(["group", "lam"], sort=False).head(SHOWN_PER_CELL)
    cells = top.groupby(["lam", "group"], sort=False).apply(
        lambda part: "; ".join(f"{r.continuation} ({r.count})" for r in part.itertuples()),
        include_groups=False,
    )
    table = cells.unstack("group")
    groups = list(dict.fromkeys(counts["group"]))
    table = table.reindex(columns=groups).reset_index()
    table["lam"] = table["lam"].map("{:g}".format)
    return table.rename(columns={"lam": "λ"})


RATED_BIASED = Question(
    "continuations-rated-biased",
    "How often are the continuations that tell the groups apart rated biased ({group}, λ {lam})?",
    table="biased_fraction",
    metric="fraction_biased",
    target=None,
    target_words="reported: 0 is no continuation rated biased; the paper compares the groups",
    source="CID, Section 4 (Fig. 2)",
    per=("group", "lam"),
)
"""CID's audit question, once people have rated the continuations (``biaslens cid-ratings``):
the fraction rated biased per group and λ, reported with its interval."""


SPEC = register(
    MethodSpec(
        audit=AuditRole(
            sizes={"standard": (AuditStep(),), "paper": (AuditStep(preset="paper"),)},
            left_out={
                "quick": "its verdict needs people's ratings of the continuations: "
                "--size standard exports them for rating (biaslens cid-ratings)"
            },
            questions=(RATED_BIASED,),
            paired=paired_biased_fraction,
        ),
        outputs=CID_FILES_AUDIT,
        name=METHOD,
        commands=(RATE,),
        title="CID name-swap bias audit (Section 4): all name pairs of two groups, both "
        "directions, every λ",
        settings=AuditSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        folder_fields=("group_a", "group_b"),
        description=(
            "Most common continuations per group and λ, and a CSV to rate. Writes "
            "samples.parquet, continuations.csv (counts), ratings_to_fill.csv (fill the `biased` "
            "column, then run `biaslens cid-ratings RUN_DIR FILE`), summary.json."
        ),
        headlines=(
            Headline(
                "continuations",
                "Most common continuations per λ",
                view=_continuations_view,
                report=_report_continuations,
                legend={
                    "*": "a name group: its most common contrastive continuations at this λ, "
                    "each with the number of its prompts (names × templates) that gave it",
                },
            ),
            Headline(
                "biased_fraction",
                "Fraction of continuations rated biased (after cid-ratings)",
                cli=False,
                measures=(FRACTION_BIASED,),
                labels=("group", "lam"),
            ),
        ),
        presets={"paper": {"lams": (0.0, 10.0, 50.0)}},
    )
)
