"""One self-contained ``report.html`` for one or several run directories.

Plots are embedded as base64 PNG, styles are inline: the file opens without a network. Every
value from a run (model outputs, user prompts, file names) goes through Jinja2's HTML
autoescaping, and values of secret-looking environment variables (tokens, keys, passwords) are
redacted from the finished page, so a report can be shared.
"""

from __future__ import annotations

import base64
import math
import os
import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from biaslens.common import atomic
from biaslens.common.numbers import readable, readable_column, readable_interval
from biaslens.errors import BiaslensError
from biaslens.framework.estimates import findings, interval_notes, meanings
from biaslens.framework.registry import find_method
from biaslens.report.run_view import RunView, load_run
from biaslens.version import __version__

MAX_TABLE_ROWS = 200
MAX_CELL_CHARS = 300
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|AUTH|CREDENTIAL", re.I)
SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:token|secret|password|passwd|api_?key|access_?key|credentials?)(?:$|[_\-.])",
    re.I,
)
"""Settings keys whose values are credentials (``api_key``, ``hf_token``), not e.g. the
``tokenizers`` version or ``max_new_tokens``."""
REDACTED = "[redacted]"


@dataclass
class Cell:
    text: str
    link: str | None = None
    numeric: bool = False


@dataclass
class HtmlTable:
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    anchors: list[str | None]
    note: str = ""


def _cell(value) -> Cell:
    text, numeric = _format(value)
    return Cell(text, numeric=numeric)


def _format(value) -> tuple[str, bool]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—", False
    if isinstance(value, bool):
        return str(value), False
    if isinstance(value, float):
        if value in (math.inf, -math.inf):
            return "∞" if value > 0 else "−∞", True
        if value.is_integer() and abs(value) < 1e9:
            return str(int(value)), True
        return readable(value), True
    if isinstance(value, int):
        return str(value), True
    value = value.tolist() if hasattr(value, "tolist") else value
    if isinstance(value, list | tuple) and value and all(isinstance(v, float) for v in value):
        value = "[" + ", ".join(f"{v:.3g}" for v in value) + "]"  # e.g. top_probs
    text = str(value)
    return (text[:MAX_CELL_CHARS] + "…" if len(text) > MAX_CELL_CHARS else text), False


def _cells(frame: pd.DataFrame) -> list[list[Cell]]:
    """The frame's cells, each float column in one notation (:func:`readable_column`)."""
    columns = [frame.iloc[:, i].tolist() for i in range(frame.shape[1])]
    texts = [readable_column(values) for values in columns]
    return [
        [
            Cell(text[row], numeric=True) if text[row] is not None else _cell(values[row])
            for text, values in zip(texts, columns, strict=True)
        ]
        for row in range(len(frame))
    ]


def _link_columns(table: pd.DataFrame, samples: pd.DataFrame | None) -> list[str]:
    """Key columns a table shares with the samples (text, boolean or few distinct values)."""
    if samples is None:
        return []
    keys = []
    for column in table.columns:
        if column not in samples.columns or column in ("mu", "count", "n"):
            continue
        values = samples[column]
        if values.dtype == object or values.dtype == bool or str(values.dtype) == "string":
            keys.append(column)
        elif values.nunique(dropna=True) <= 64:
            keys.append(column)
    return keys


def _sample_index(samples: pd.DataFrame, keys: list[str], row: pd.Series) -> int | None:
    mask = pd.Series(True, index=samples.index)
    for key in keys:
        try:
            mask &= samples[key].astype(str) == str(row[key])
        except (TypeError, ValueError):
            return None
    hits = mask.to_numpy().nonzero()[0]
    return int(hits[0]) if len(hits) else None


def _table(
    title: str,
    frame: pd.DataFrame,
    prefix: str,
    samples: pd.DataFrame | None = None,
    linked: set[int] | None = None,
) -> HtmlTable:
    keys = _link_columns(frame, samples)
    shown = frame.head(MAX_TABLE_ROWS)
    columns = [str(c) for c in shown.columns]
    rows, anchors = [], []
    for (_, row), cells in zip(shown.iterrows(), _cells(shown), strict=True):
        if keys and samples is not None:
            index = _sample_index(samples, keys, row)
            if index is not None and linked is not None:
                linked.add(index)
                cells[columns.index(keys[0])].link = f"#{prefix}-sample-{index}"
        rows.append(cells)
        anchors.append(None)
    note = f"first {MAX_TABLE_ROWS} of {len(frame)} rows" if len(frame) > MAX_TABLE_ROWS else ""
    return HtmlTable(title, columns, rows, anchors, note)


def _samples_table(
    samples: pd.DataFrame, prefix: str, linked: set[int], limit: int, total: int
) -> HtmlTable:
    indices = sorted(set(range(min(limit, len(samples)))) | linked)
    shown = samples.iloc[indices]
    columns = [str(c) for c in shown.columns]
    rows = _cells(shown)
    anchors = [f"{prefix}-sample-{i}" for i in indices]
    note = f"{len(indices)} of {total:,} rows (the first {limit} and every linked row"
    note += f"; links among the first {len(samples):,})" if total > len(samples) else ")"
    return HtmlTable("Per-sample rows", ["#", *columns], _numbered(rows, indices), anchors, note)


def _numbered(rows: list[list[Cell]], indices: list[int]) -> list[list[Cell]]:
    return [[Cell(str(i), numeric=True), *row] for i, row in zip(indices, rows, strict=True)]


def _flatten(value, prefix: str = "") -> list[tuple[str, str]]:
    """Scalars of nested settings / metrics as (dotted key, text); long lists summarised."""
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if item in (None, "") and str(key).endswith("sha256"):
                continue  # the hash of a file the run was not given
            if SECRET_KEY.search(str(key)) and not str(key).endswith(("sha256", "_env")):
                out.append((name, REDACTED))
            else:
                out.extend(_flatten(item, name))
        return out
    if isinstance(value, list) and (len(value) > 12 or any(isinstance(v, dict) for v in value)):
        return [(prefix, f"[{len(value)} items]")]
    return [(prefix, _format(value)[0])]


def _reading(view: RunView) -> dict:
    """The run's headline values in words: each metric's meaning, a table of values with their
    intervals and n, and the warnings the terminal prints (few units, no bias inside)."""
    estimates = [e for e in view.summary.get("estimates") or [] if isinstance(e, dict)]
    spec = find_method(view.method)
    if not estimates:
        return {"findings": [], "meanings": [], "table": None, "notes": []}
    rows = []
    for e in estimates:
        low, high = e.get("ci_low"), e.get("ci_high")
        interval = (
            f"{readable_interval(low, high)} ({e['ci_level']:.0%} {e.get('interval') or ''}"
            + (", conservative" if e.get("conservative") else "")
            + ")"
            if low is not None and high is not None
            else f"no interval: {e.get('no_interval') or 'not computed'}"
        )
        value = readable(e["value"]) if e.get("value") is not None else "—"
        if e.get("caution"):
            value += " (read with care: see the notes)"
        if e.get("mostly_noise"):
            value += f" (plug-in mostly noise: cross-fitted {readable(e['crossfit'])})"
        n = e.get("n")
        rows.append(
            {
                "metric": e.get("symbol"),
                "row": ", ".join(f"{k} {v}" for k, v in (e.get("labels") or {}).items()),
                "value": value,
                "interval": interval,
                "n": f"{n:,} {e.get('n_unit') or ''}".strip() if n is not None else "—",
                "unit": e.get("unit"),
                "no bias": e.get("no_bias"),
                "direction": e.get("better"),
            }
        )
    return {
        "findings": findings(estimates),
        "meanings": meanings(spec) if spec else [],
        "table": _table("Headline values with their intervals", pd.DataFrame(rows), "est"),
        "notes": interval_notes(estimates),
    }


def _png(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _run_context(index: int, view: RunView, max_samples: int) -> dict:
    prefix = f"r{index}"
    linked: set[int] = set()
    tables = [
        _table(title, frame, prefix, view.samples, linked) for title, frame in view.tables.values()
    ]
    samples = (
        _samples_table(view.samples, prefix, linked, max_samples, view.total_samples)
        if view.samples is not None
        else None
    )
    summary = view.summary
    model = summary.get("model") if isinstance(summary.get("model"), dict) else {}
    hashes = [
        (k, v)
        for k, v in _flatten({k: v for k, v in summary.items() if k not in ("metrics", "notes")})
        if "sha256" in k
    ]
    metadata = [
        ("method", view.method),
        ("run directory", str(view.root)),
        ("created", str(summary.get("created", "?"))),
        ("model", str(model.get("name", view.model_name))),
        ("model kind", str(model.get("kind", "—"))),
        ("parameters", _format(model.get("num_parameters"))[0]),
        *(
            (label, str(model[key]))
            for key, label in (
                ("random_tensors", "RANDOM tensors (--allow-missing-weights)"),
                ("unused_checkpoint_tensors", "checkpoint tensors not used"),
            )
            if model.get(key)
        ),
        *(
            (label, str(model[key]))
            for key, label in (
                ("repo_id", "hub repository"),
                ("revision", "hub revision asked for"),
                ("commit_sha", "hub commit"),
                ("converted_from", "converted from"),
            )
            if model.get(key)
        ),
        ("biaslens", _build_line(summary)),
        ("git revision", str(summary.get("git_revision") or "—")),
    ]
    return {
        "id": prefix,
        "label": view.label,
        "method": view.method,
        "metadata": metadata,
        "hashes": hashes,
        "versions": _flatten(summary.get("versions", {})),
        "settings": _flatten(view.settings),
        "metrics": _flatten(summary.get("metrics", {})),
        "notes": [str(n) for n in summary.get("notes") or []],
        "reading": _reading(view),
        "tables": tables,
        "plots": [(p.stem, _png(p)) for p in view.plots],
        "samples": samples,
    }


def _comparisons(views: list[RunView]) -> list[HtmlTable]:
    """Per method with several runs: each headline table stacked with a ``run`` column."""
    out = []
    methods = sorted({v.method for v in views})
    for method in methods:
        group = [v for v in views if v.method == method]
        if len(group) < 2:
            continue
        names = [n for n in group[0].tables if all(n in v.tables for v in group)]
        for name in names:
            frames = [v.tables[name][1].assign(run=v.label, model=v.model_name) for v in group]
            stacked = pd.concat(frames, ignore_index=True)
            first = ["run", "model"]
            stacked = stacked[[*first, *[c for c in stacked.columns if c not in first]]]
            title = f"{method}: {group[0].tables[name][0]} — {len(group)} runs"
            out.append(_table(title, stacked, f"cmp-{method}"))
    return out


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look like credentials (8+ characters)."""
    environ = os.environ if environ is None else environ
    return sorted(
        {v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= 8}, key=len
    )[::-1]


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def render_report(views: list[RunView], max_samples: int = 50) -> str:
    """The report page for loaded runs."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    if not views:
        raise BiaslensError("no run directories to report")
    env = Environment(
        loader=PackageLoader("biaslens.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    page = env.get_template("report.html.j2").render(
        runs=[_run_context(i, v, max_samples) for i, v in enumerate(views)],
        comparisons=_comparisons(views),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        version=__version__,
    )
    return redact(page, secret_values())


def write_report(
    run_dirs: list[Path | str], output: Path | str | None = None, max_samples: int = 50
) -> Path:
    """Load, render and write (atomically) ``report.html``; by default into the only run
    directory, or the current folder for several runs. Of several, a folder that is not a
    finished run (interrupted, foreign) is skipped with a warning naming it, as ``compare``
    does; one given alone is an error."""
    if len(run_dirs) == 1:
        views = [load_run(run_dirs[0])]
    else:
        views = []
        for folder in run_dirs:
            try:
                views.append(load_run(folder))
            except BiaslensError as error:
                warnings.warn(f"skipped {folder}: {error}", stacklevel=2)
        if not views:
            raise BiaslensError("no finished run among " + " ".join(map(str, run_dirs)))
    if output is None:
        output = Path(run_dirs[0]) / "report.html" if len(views) == 1 else Path("report.html")
    output = Path(output)
    atomic.write_bytes(output, render_report(views, max_samples).encode("utf-8"))
    return output


def _build_line(summary: dict) -> str:
    """The biaslens that wrote the run: version, commit, and whether its tree was modified."""
    build = summary.get("biaslens")
    if not isinstance(build, dict):  # runs written before the build record
        return "—"
    commit = str(build.get("commit") or "unknown commit")
    dirty = " (modified source tree)" if build.get("dirty") else ""
    return f"{build.get('version', '?')} from {build.get('source', '?')}, {commit}{dirty}"
