"""``biaslens cid-ratings``: people's ratings of a CID audit's continuations, added to the
finished audit run (paper Fig. 2): the fraction of continuations rated biased per name group
and λ, with its interval over the crossed design of the two groups' names.

The audit writes ``ratings_to_fill.csv``; a rater fills its ``biased`` column; this reads the
rated copy back (every row must match an exported continuation) and adds ``ratings.csv``,
``biased_fraction.csv`` and its plot to the run, through the runner
(:class:`~biaslens.framework.hooks.Amendment`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from biaslens.common.files import read_table, read_text
from biaslens.common.options import Argument, Option
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import Amendment, CommandContext, MethodCommand
from biaslens.framework.options import options_of
from biaslens.framework.settings import CiLevel, MethodSettings, Replicates, validated
from biaslens.framework.spec import MethodOutput
from biaslens.methods.cid.metrics.cid import (
    biased_fraction,
    biased_fraction_intervals,
    top_continuations,
)
from biaslens.metrics.intervals.core import LEVEL
from biaslens.store.result import RunResult

RATINGS_EXPORT = "ratings_to_fill.csv"
"""What the audit writes for raters (:data:`RATING_COLUMNS`, ``biased`` left empty)."""
RATINGS_TABLE = "ratings.csv"
"""What ``biaslens cid-ratings`` adds to the run: the export with every ``biased`` filled."""
RATING_COLUMNS = ["id", "group", "lam", "continuation", "count", "biased"]
TRUE_WORDS = {"1", "yes", "y", "true", "biased"}
FALSE_WORDS = {"0", "no", "n", "false", "not biased"}


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


def read_export(run_dir: Path) -> pd.DataFrame:
    """The run's ``ratings_to_fill.csv`` as the audit wrote it (its ids whole numbers)."""
    export_path = run_dir / RATINGS_EXPORT
    if not export_path.exists():
        raise BiaslensError(f"{run_dir}: no {RATINGS_EXPORT}; the run did not finish")
    exported = read_table(
        export_path,
        "ratings export",
        ("id", "group", "lam", "continuation", "count"),
        ("id",),
        keep_default_na=False,
    )
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
    return exported


def rated_samples(finished: RunResult, rated: pd.DataFrame) -> pd.DataFrame:
    """Each generated continuation of the run (one row per prompt and λ) with its rating
    ``biased`` (0/1), through the export's ids, which number the continuation counts of the
    samples."""
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
    return samples.merge(verdict, on=["group", "lam", "continuation"], how="left")


def read_rated(run_dir: Path) -> pd.DataFrame | None:
    """The ratings ``biaslens cid-ratings`` added to a finished audit run (``ratings.csv``), or
    None where none were added yet."""
    path = Path(run_dir) / RATINGS_TABLE
    if not path.exists():
        return None
    rated = read_table(path, "ratings", ("id", "group", "lam", "continuation", "count", "biased"),
                       ("id",), keep_default_na=False)  # fmt: skip
    return rated.assign(continuation=rated["continuation"].astype(str))


def ratings_amendment(ratings: Path | str, ci_level: float = LEVEL, bootstrap: int = 1000):
    """The rated export ``ratings`` as an addition to an audit run: the fraction of biased
    continuations per group and λ (Fig. 2), with its interval over the crossed design of the
    groups' names (``bootstrap`` 0: none; any other value keeps them, not resampled)."""
    from biaslens.methods.cid.plots import biased_heatmap

    def compute(finished: RunResult) -> MethodOutput:
        rated = read_ratings(Path(ratings), read_export(finished.run_dir))
        fractions = biased_fraction(rated, ["group", "lam"])
        if bootstrap > 0:
            per_sample = rated_samples(finished, rated)
            intervals = biased_fraction_intervals(per_sample, ["group", "lam"], ci_level)
            fractions = fractions.merge(intervals, on=["group", "lam"])
        settings = finished.settings
        figure = biased_heatmap(
            fractions, f"{settings['model']}: {settings['group_a']} vs {settings['group_b']}"
        )
        return MethodOutput(
            metrics={},
            tables={RATINGS_TABLE.removesuffix(".csv"): rated, "biased_fraction": fractions},
            figures={"biased_fraction": figure},
        )

    return Amendment(compute, ci_level)


class RatingSettings(MethodSettings):
    """The settings ``cid-ratings`` takes, declared by the same types as every method's (their
    bounds and defaults live there: :data:`~biaslens.framework.settings.CiLevel`,
    :data:`~biaslens.framework.settings.Replicates`)."""

    ci_level: CiLevel
    bootstrap: Replicates = 1000


def rate(ctx: CommandContext, run_dir, ratings, ci_level, bootstrap, unused_seed=None) -> None:
    """Fraction of biased continuations per group and λ from human ratings (paper Fig. 2)."""
    settings = validated(RatingSettings, {"ci_level": ci_level, "bootstrap": bootstrap})
    ci_level, bootstrap = settings.ci_level, settings.bootstrap
    amended = ctx.amend(run_dir, ratings_amendment(ratings, ci_level, bootstrap))
    fractions = amended.output.tables["biased_fraction"]
    shown = int(round(ci_level * 100))
    rows = []
    for row in fractions.itertuples():
        if not bootstrap:
            interval = "- (--bootstrap 0)"
        elif row.fraction_ci_low == row.fraction_ci_low:
            interval = f"[{row.fraction_ci_low:.2f}, {row.fraction_ci_high:.2f}]"
        else:
            interval = f"no interval: {row.fraction_ci_note}"
        rows.append(
            {
                "group": row.group,
                "λ": f"{row.lam:g}",
                "biased": f"{row.biased:g}",
                "continuations": str(row.continuations),
                "fraction": f"{row.fraction_biased:.2f}",
                f"{shown}% CI": interval,
                "pairs": str(row.pairs) if bootstrap else "-",
                "names": str(row.names) if bootstrap else "-",
            }
        )
    ctx.line(
        "biased: continuations rated biased; continuations: all generated in the cell; "
        "fraction: biased / continuations; CI: over both groups' names as draws; pairs: name "
        "pairs in the cell; names: the fewer of the two groups' names (the CI's n)"
    )
    ctx.table("fraction of biased continuations", pd.DataFrame(rows), None)
    ctx.line(f"table: {amended.paths['biased_fraction']}")
    ctx.line(f"plot: {amended.paths['plots/biased_fraction']}")
    ctx.line(f"report: {amended.report}")


RATE = MethodCommand(
    "cid-ratings",
    rate,
    params=(
        Argument("run_dir", type=Path, help="A cid-audit run directory."),
        Argument("ratings", type=Path, help="The rated copy of ratings_to_fill.csv."),
        *options_of(RatingSettings),
        Option(
            "unused_seed",
            "--seed",
            type=int,
            hidden=True,
            help="Unused (kept so that older command lines run).",
            deprecated=(("--seed", "nothing: the intervals are not resampled"),),
        ),
    ),
)
