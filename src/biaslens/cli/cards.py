"""``biaslens card push``: a bias card onto the model's hub page."""

from __future__ import annotations

from pathlib import Path

from biaslens.cli.params import declared_command
from biaslens.cli.render import console
from biaslens.common.options import Argument, Option


@declared_command(
    "push",
    Argument("folder", type=Path, help="An audited model's folder (it holds card.json)."),
    Argument("repo", help="The model repo on the hub (owner/name)."),
    Option(
        "namespace",
        default="biaslens",
        help="Where the probe sets live on the hub (`biaslens datasets export NAME "
        "--push-to-hub NAMESPACE/biaslens-METHOD`): the results' dataset ids.",
    ),
    Option(
        "no_pr",
        type=bool,
        default=False,
        help="Commit to the main branch instead of opening a pull request.",
    ),
    Option("dry_run", type=bool, default=False, help="Print the change and push nothing."),
)
def card_push(folder, repo, namespace, no_pr, dry_run) -> None:
    """Put the card on the model's hub page: a "Bias audit (biaslens)" section of its model
    card (replaced in place on a later push, every other line kept) and the Hub's
    .eval_results/biaslens.yaml (each question's value, interval and n), as a pull request.
    The token is huggingface_hub's own (`hf auth login` or HF_TOKEN), never written."""
    from biaslens.auditing.publish import plan_push, push

    change = plan_push(folder, repo, namespace)
    if dry_run:
        console.print(change.diff(), markup=False, highlight=False, soft_wrap=True)
        console.print(f"dry run: nothing was pushed to {repo}")
        return
    where = push(change, create_pr=not no_pr)
    console.print(f"pushed the bias card to {repo}: {where}")
