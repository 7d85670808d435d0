"""CID name-swap bias audit (CID paper Section 4, Appendix C).

For two name groups and a template, every name pair (a, b) gives x = template(a) and
x' = template(b) with pronouns matched to each name's gender. For each λ on the grid, the run
decodes CID(x; x', λ) (a continuation for group A's name) and CID(x'; x, λ) (for group B's);
λ = 0 is greedy decoding. It writes every continuation, the most common ones per group and λ
(like Fig. 3 / Appendix C.1), and a CSV for human rating. ``import_ratings`` reads the rated CSV
back and computes the fraction of biased continuations per group and λ (Fig. 2). Ratings are
never produced by the tool.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import model_validator

from biaslens.common.files import read_table, read_text
from biaslens.data import cid_audit as names_data
from biaslens.errors import BiaslensError
from biaslens.framework import options as O
from biaslens.framework.estimates import collect as collect_estimates
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.framework.settings import MethodSettings, validated
from biaslens.methods.cid.outputs import AUDIT as CID_FILES_AUDIT
from biaslens.metrics.cid import (
    FRACTION_BIASED,
    biased_fraction,
    biased_fraction_intervals,
    top_continuations,
)
from biaslens.models.base import LM
from biaslens.scoring.cid import DecodingSettings, decode_both_directions
from biaslens.store.result import RunResult
from biaslens.store.run import CONFIG_FILE, RunStore, dataset_hash, read_config

METHOD = "cid-audit"
RATINGS_EXPORT = "ratings_to_fill.csv"
RATING_COLUMNS = ["id", "group", "lam", "continuation", "count", "biased"]
TRUE_WORDS = {"1", "yes", "y", "true", "biased"}
FALSE_WORDS = {"0", "no", "n", "false", "not biased"}


class AuditSettings(MethodSettings):
    """Settings that decide an audit's results (the names and template text are stored too)."""

    model: str = "default"
    group_a: str = "us-male"
    group_b: str = "egypt-male"
    names_a: tuple[str, ...]
    names_b: tuple[str, ...]
    gender_a: str
    gender_b: str
    template_id: str
    template: str
    decoding: DecodingSettings = DecodingSettings()

    @model_validator(mode="after")
    def _check(self) -> AuditSettings:
        if self.group_a == self.group_b:
            raise ValueError("choose two different name groups")
        names_data.check_template(self.template, f"template {self.template_id!r}")
        return self


def make_settings(
    model: str = "default",
    groups: tuple[str, str] = ("us-male", "egypt-male"),
    template_id: str = names_data.DEFAULT_TEMPLATE,
    names_file: Path | None = None,
    templates_file: Path | None = None,
    **decoding,
) -> AuditSettings:
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
            "model": model,
            "group_a": a.name,
            "group_b": b.name,
            "names_a": a.names,
            "names_b": b.names,
            "gender_a": a.gender,
            "gender_b": b.gender,
            "template_id": template_id,
            "template": templates[template_id],
            "decoding": validated(DecodingSettings, decoding),
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


def _pair_intervals(finished: RunResult, rated: pd.DataFrame, level):
    """Each generated continuation with its rating (through the export's ids, which number
    the continuation counts of the samples), with intervals over the crossed design of the
    two groups' names."""
    samples = finished.samples
    counts = top_continuations(samples, ["group", "lam"], n=None).reset_index(names="id")
    if len(counts) != len(rated) or not counts["count"].equals(rated["count"].astype(int)):
        raise BiaslensError(
            f"{finished.run_dir}: the ratings export does not match the run's samples; rerun "
            "the audit"
        )
    verdict = counts[["group", "lam", "continuation", "id"]].assign(
        biased=counts["id"].map(rated.set_index("id")["biased"]).astype(int)
    )
    per_sample = samples.merge(verdict, on=["group", "lam", "continuation"], how="left")
    return biased_fraction_intervals(per_sample, ["group", "lam"], level)


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


SPEC = register(
    MethodSpec(
        outputs=CID_FILES_AUDIT,
        name=METHOD,
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
        options=(
            O.MODEL,
            O.Option(
                "groups",
                help="Two name groups (paper App. C): us-male, us-female, mexico-male, "
                "mexico-female, egypt-male, egypt-female (or those of --names-file).",
                multiple=True,
            ),
            O.Option("template_id", "--template", help="Template id."),
            O.Option(
                "templates_file",
                help="YAML {id: text with {name} and {he}/{his}/{him}}.",
                type=Path,
            ),
            O.Option(
                "names_file",
                help="YAML {group: {gender, names}} (default: paper App. C).",
                type=Path,
            ),
            O.LAMS,
            O.TOP_K_TOKENS,
            O.MAX_NEW_TOKENS,
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


@dataclass
class RatingsResult:
    fractions: pd.DataFrame
    table_path: Path
    plot_path: Path


def _parse_biased(value: str, where: str) -> int:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return 1
    if word in FALSE_WORDS:
        return 0
    raise BiaslensError(f"{where}: field 'biased' must be 1/0 (or yes/no), got {value!r}")


def read_ratings(path: Path, exported: pd.DataFrame) -> pd.DataFrame:
    """Read a rated copy of the export; every row must match an exported continuation."""
    handle = io.StringIO(read_text(path, "ratings file"), newline="")
    with handle:
        reader = csv.DictReader(handle)
        missing = [
            c for c in ("id", "continuation", "biased") if c not in (reader.fieldnames or [])
        ]
        if missing:
            raise BiaslensError(f"{path}: missing column(s) {missing}")
        by_id = exported.set_index("id")
        seen: dict[int, int] = {}
        unrated = []
        for number, row in enumerate(reader, start=2):
            where = f"{path}:{number}"
            try:
                key = int(row["id"])
            except (TypeError, ValueError):
                raise BiaslensError(
                    f"{where}: field 'id' is not an exported id: {row['id']!r}"
                ) from None
            if key not in by_id.index:
                raise BiaslensError(f"{where}: id {key} is not in the exported continuations")
            expected = by_id.loc[key, "continuation"]
            expected = "" if pd.isna(expected) else str(expected)
            if (row["continuation"] or "") != expected:
                raise BiaslensError(
                    f"{where}: continuation {row['continuation']!r} does not match the exported "
                    f"one for id {key} ({expected!r})"
                )
            if key in seen:
                raise BiaslensError(f"{where}: id {key} rated twice")
            if not (row["biased"] or "").strip():
                unrated.append(key)
                continue
            seen[key] = _parse_biased(row["biased"], where)
    if unrated or len(seen) < len(exported):
        absent = sorted(set(exported["id"]) - set(seen) - set(unrated))
        raise BiaslensError(
            f"{path}: {len(unrated)} row(s) without a rating and {len(absent)} exported row(s) "
            f"missing (first: {(unrated + absent)[:5]}); rate every exported continuation"
        )
    return exported.assign(biased=exported["id"].map(seen))


def import_ratings(
    run_dir: Path | str,
    ratings: Path | str,
    ci_level: float = 0.95,
    bootstrap: int = 1000,
    seed: int = 0,
) -> RatingsResult:
    """Fraction of biased continuations per group and λ from a rated export (Fig. 2), with its
    interval over the crossed design of the groups' names (``bootstrap`` 0: none; any other
    value keeps them: they are not resampled, and ``seed`` is not used by them)."""
    import matplotlib.pyplot as plt

    from biaslens.plots.cid import biased_heatmap

    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise BiaslensError(f"{run_dir}: not a biaslens run directory (no {CONFIG_FILE})")
    config = read_config(run_dir)
    if config.get("method") != METHOD:
        raise BiaslensError(f"{run_dir} holds a {config.get('method')} run, not a {METHOD} run")
    finished = RunResult.load(run_dir)  # a finished run, its outputs as it wrote them
    export_path = run_dir / RATINGS_EXPORT
    if not export_path.exists():
        raise BiaslensError(f"{run_dir}: no {RATINGS_EXPORT}; the run did not finish")
    exported = read_table(
        export_path, "ratings export", ("id", "group", "lam", "continuation", "count"), ("id",),
        keep_default_na=False,
    )  # fmt: skip
    if not len(exported):
        raise BiaslensError(f"{export_path}: the ratings export is empty; rerun the audit")
    ids = pd.to_numeric(exported["id"], errors="coerce")
    if ids.isna().any() or (ids != ids.round()).any():
        row = int(ids.isna().to_numpy().nonzero()[0][0]) if ids.isna().any() else 0
        raise BiaslensError(
            f"{export_path}:{row + 2}: id {exported['id'].iloc[row]!r} is not a whole number; "
            "the ratings export is damaged, rerun the audit"
        )
    exported["id"] = ids.astype(int)
    exported["continuation"] = exported["continuation"].astype(str)
    rated = read_ratings(Path(ratings), exported)
    fractions = biased_fraction(rated, ["group", "lam"])
    if bootstrap > 0:
        fractions = fractions.merge(_pair_intervals(finished, rated, ci_level), on=["group", "lam"])
    settings = config["settings"]
    figure = biased_heatmap(
        fractions, f"{settings['model']}: {settings['group_a']} vs {settings['group_b']}"
    )
    store = RunStore(run_dir, METHOD, settings, config.get("runtime"), config.get("model"))
    with store:  # the run's outputs change together: the summary names the new ones
        store.write_table("ratings", rated)
        table_path = store.write_table("biased_fraction", fractions)
        try:
            plot_path = store.write_plot("biased_fraction", figure)
        finally:
            plt.close(figure)
        # a later import replaces the estimates of an earlier one
        kept = [
            e
            for e in finished.summary.get("estimates") or []
            if e.get("table") != "biased_fraction"
        ]
        estimates = collect_estimates(SPEC, {"biased_fraction": fractions}, ci_level)
        store.extend_summary({**finished.summary, "estimates": [*kept, *estimates]})
    return RatingsResult(fractions, table_path, plot_path)
