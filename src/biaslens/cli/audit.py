"""``biaslens audit``: every method that applies to a model, a plan first, one bias card."""

from __future__ import annotations

import re
from pathlib import Path

from biaslens.cli.backends import backend_config, backend_params
from biaslens.cli.params import command, to_click
from biaslens.cli.render import console, print_table, with_progress
from biaslens.common.files import read_models_file
from biaslens.common.options import Option
from biaslens.errors import BiaslensError
from biaslens.framework import options as shared
from biaslens.framework.settings import MODEL_HELP

AUDIT_OPTIONS = (
    Option("models", "--model", "-m", multiple=True, help=f"{MODEL_HELP} Several: several models."),
    shared.MODELS_FILE,
    Option(
        "size",
        default="quick",
        help="quick: minutes on a laptop CPU for a small model (subsets of each probe); "
        "standard: each method's defaults; paper: the papers' protocol on their full sets.",
    ),
    Option(
        "methods",
        multiple=True,
        help="Only these methods (default: every method that applies to the model).",
    ),
    Option(
        "output",
        "--output",
        "-o",
        type=Path,
        help="Audit folder (default: audits/<model>-<size>).",
    ),
    shared.DATA_DIR,
    shared.CACHE_DIR,
    Option(
        "dry_run",
        type=bool,
        default=False,
        help="Print the plan (requests, tokens, estimated time and cost per method) and stop: "
        "no model is loaded and no server is called.",
    ),
    shared.PRICE,
    Option(
        "push_to_hub",
        help="After the card: open a pull request putting it on this model repo's hub page "
        "(one model; `biaslens card push` does it for a finished audit).",
    ),
    Option(
        "detect",
        type=float,
        help="An effect to look for, in each question's own unit (e.g. 0.01): after the card, "
        "each question with no evidence says whether this size would detect it, or about how "
        "much more data would (its interval narrows as one over the root of the data).",
    ),
)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not measured yet"
    if seconds < 90:
        return f"~{seconds:.0f} s"
    return f"~{seconds / 60:.0f} min"


def short_reason(reason: str, limit: int = 240) -> str:
    """A method's reason as one terminal line: long parenthesised lists (every missing file)
    left out, at most ``limit`` characters (the card keeps it whole)."""
    reason = re.sub(r" \([^()]{60,}\)", "", reason)
    return reason if len(reason) <= limit else reason[: limit - 1] + "…"


def print_plan(audit, prices=None) -> None:
    """The plan of one model: requests, tokens, estimated time (and cost) per step."""
    import pandas as pd

    from biaslens.runner.plan import estimated_cost

    if audit.unavailable is not None:
        console.print(
            f"audit plan — {audit.model}: cannot be audited (why: at the end)",
            markup=False,
            highlight=False,
        )
        return
    rows, reasons = [], []
    for planned in audit.plan:
        if planned.left_out is not None:
            rows.append(
                {
                    "step": planned.step.name,
                    "requests": "—",
                    "tokens": "—",
                    "time": "—",
                    "status": "left out (below)",
                }
            )
            reasons.append(f"  {planned.step.name}: {short_reason(planned.left_out)}")
            continue
        if planned.finished:
            rows.append(
                {
                    "step": planned.step.name,
                    "requests": "—",
                    "tokens": "—",
                    "time": "—",
                    "status": "finished (read back)",
                }
            )
            continue
        rows.append(
            {
                "step": planned.step.name,
                "requests": "not counted" if planned.requests is None else f"{planned.requests:,}",
                "tokens": "—" if planned.tokens is None else f"{planned.tokens:,}",
                "time": _duration(planned.seconds),
                "status": "to run" if planned.not_counted is None else "to run (not counted)",
            }
        )
        if planned.not_counted is not None:  # in full: it is why the cost has no bound
            reasons.append(f"  {planned.step.name}: not counted: {planned.not_counted}")
    print_table(f"audit plan — {audit.model}", pd.DataFrame(rows))
    for line in reasons:
        console.print(line, markup=False, highlight=False)
    uncounted = [
        p.step.name
        for p in audit.plan
        if p.left_out is None and not p.finished and p.requests is None
    ]
    if prices is not None and uncounted:
        console.print(
            f"estimated cost: not estimated: {len(uncounted)} step(s) to run could not be "
            f"counted ({', '.join(uncounted)}: why above), and a bound that leaves them out "
            "would be no bound",
            markup=False,
            highlight=False,
        )
    elif prices is not None:
        table = pd.DataFrame(
            [
                {
                    "request_type": p.step.name,
                    "prompt_tokens": p.prompt_tokens or 0,
                    "completion_tokens_at_most": p.completion_tokens or 0,
                }
                for p in audit.plan
                if p.left_out is None
            ]
        )
        console.print(estimated_cost(table, *prices))


def audit(**values) -> None:
    """Audit a model in one command: every method that applies to its class, planned first,
    then run into one folder, and a bias card (card.md, card.html, card.json) whose first lines
    are its questions, each with its family-wise verdict and interval. Rerunning the same
    command resumes and reuses every finished run."""
    from biaslens.auditing.render import detect_lines, question_lines, summary_line
    from biaslens.auditing.run import run_audit
    from biaslens.runner.plan import parse_price

    backend = backend_config(values)
    models = list(values["models"] or ())
    if values["models_file"] is not None:
        models += read_models_file(values["models_file"])
    if not models:
        models = ["default"]
    if values.get("push_to_hub") and len(models) != 1:
        raise BiaslensError(
            f"--push-to-hub puts one model's card on its hub page; {len(models)} models were "
            "given: push each card with `biaslens card push FOLDER REPO`"
        )
    prices = parse_price(values["price"]) if values["price"] is not None else None
    if prices is not None and not values["dry_run"]:
        raise BiaslensError("--price estimates the audit's cost with --dry-run: add --dry-run")
    result = with_progress(
        lambda progress: run_audit(
            models,
            size=values["size"],
            methods=values["methods"] or None,
            output=values["output"],
            backend=backend,
            data_dir=values["data_dir"],
            cache_dir=values["cache_dir"],
            progress=progress,
            dry_run=values["dry_run"],
            on_plan=lambda a: print_plan(a, prices),
        )
    )
    if values["dry_run"]:
        console.print("nothing was loaded or sent (--dry-run)")
        _fail_unaudited(result.models)
        return
    for model_audit in result.models:
        card = model_audit.card
        if card is None:
            continue
        console.print(f"\nBias card — {card.model} ({card.size})", markup=False)
        console.print(f"  {summary_line(card)}", markup=False, highlight=False)
        for line in question_lines(card):
            console.print(f"  {line}", markup=False, highlight=False)
        if values.get("detect") is not None:
            for line in detect_lines(card, values["detect"]):
                console.print(f"  {line}", markup=False, highlight=False)
        if card.rows:
            console.print(
                f"  {len(card.rows)} supporting number(s) with their intervals: see the card",
                markup=False,
            )
        for failed in card.failed:
            console.print(f"  failed: {failed.step}: {failed.error}", markup=False)
        console.print(f"  requests: {model_audit.computed} computed, {model_audit.reused} reused")
        console.print(f"  card: {model_audit.folder / 'card.md'} (and card.html, card.json)")
    if result.comparison is not None:
        console.print(f"across models: {result.comparison}")
    _fail_unaudited(result.models)
    if values.get("push_to_hub"):
        from biaslens.auditing.publish import plan_push, push

        [model_audit] = result.models
        where = push(plan_push(model_audit.folder, values["push_to_hub"], "biaslens"))
        console.print(f"pushed the bias card to {values['push_to_hub']}: {where}")


def _fail_unaudited(audits) -> None:
    """An audit in which some model could not be audited ends non-zero, saying so once per
    model (the others' cards are written)."""
    missing = [a for a in audits if a.unavailable is not None]
    if missing:
        said = "; ".join(f"{a.model}: {a.unavailable}" for a in missing)
        raise BiaslensError(
            f"{len(missing)} of {len(audits)} model(s) could not be audited (no card): {said}"
        )


def audit_command():
    params = [to_click(o) for o in AUDIT_OPTIONS] + backend_params()
    keywords = {o.name: o.keyword for o in AUDIT_OPTIONS if o.name != o.keyword}
    return command("audit", audit, params, keywords=keywords)
