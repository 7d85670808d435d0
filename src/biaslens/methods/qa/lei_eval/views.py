"""lei-eval's terminal view: per set, each metric with its interval or why there is none."""

from __future__ import annotations

import pandas as pd

from biaslens.common.numbers import readable, readable_interval
from biaslens.metrics.meanings import mostly_noise


def with_interval(table: pd.DataFrame, column: str, prefix: str | None = None) -> list[str]:
    """``value [low, high]`` per row, or the value and why there is no interval."""
    prefix = prefix or column
    cells = []
    for _, row in table.iterrows():
        value = row.get(column)
        if value is None or value != value:
            cells.append("—")
            continue
        text = readable(float(value))
        if column in ("mu", "eta", "theta4") and row.get("caution"):
            text += " (sparse)"
        crossfit = row.get(f"{column}_crossfit")
        if crossfit is not None and crossfit == crossfit:
            text += f" / {readable(float(crossfit))}"  # plug-in / cross-fitted, as unqover shows
            if mostly_noise(float(value), float(crossfit)):
                text += " (mostly noise)"
        low, high = row.get(f"{prefix}_ci_low"), row.get(f"{prefix}_ci_high")
        if low is not None and low == low and high == high:
            text += " " + readable_interval(low, high)
        elif f"{prefix}_ci_low" in table:
            text += f" [no interval: {row.get(f'{prefix}_ci_note') or 'undefined'}]"
        cells.append(text)
    return cells


def mu_view(table: pd.DataFrame) -> pd.DataFrame:
    """Per set: each metric with its interval (or why there is none), the desired μ, the gap,
    the specified win rate, and the units, subjects and templates behind the intervals."""
    view = pd.DataFrame({"set": table["set"], "scoring": table["scoring"]})
    for column, label in (
        ("mu", "μ"),
        ("desired_mu", "desired μ"),
        ("gap", "gap"),
        ("eta", "η"),
        ("theta4", "θ4"),
        ("delta", "δ"),
        ("epsilon", "ε"),
    ):
        view[label] = with_interval(table, column)
    if "specified_win_rate" in table:
        view["win rate"] = with_interval(table, "specified_win_rate")
    for column in ("contexts", "units", "subjects", "templates"):
        if column in table:
            view[column] = table[column]
    return view


def change_view(table: pd.DataFrame) -> pd.DataFrame:
    """Per intervention set: μ there, μ with none on the same contexts, and the change with
    its paired interval (or why there is none)."""
    return pd.DataFrame(
        {
            "set": table["set"],
            "μ": [readable(float(v)) for v in table["mu"]],
            "μ, no intervention": [readable(float(v)) for v in table["mu_none"]],
            "change of μ": with_interval(table, "mu_change"),
        }
    )
