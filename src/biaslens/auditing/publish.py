"""A bias card where a model's users look: a "Bias audit (biaslens)" section of the model's
hub card, replaced in place on a later push and leaving every other line as it was, and
``.eval_results/biaslens.yaml``, the Hub's evaluation-results file (huggingface_hub's
:class:`~huggingface_hub.EvalResultEntry`: one entry per question of the card, the interval,
its level and n in ``notes``). Opened as a pull request unless asked otherwise; the token is
the one huggingface_hub reads (``hf auth login``, ``HF_TOKEN``) and is never written.

Every text of the section that comes from the card (the model's name, a run's note) is
literal Markdown (:func:`~biaslens.common.inert.markdown_text`), so a hostile value neither
runs nor breaks the page.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from biaslens.auditing.card import BiasCard
from biaslens.auditing.render import (
    NO_EVIDENCE_CAVEAT,
    answer_markdown,
    question_lines,
    summary_line,
)
from biaslens.common.inert import markdown_text
from biaslens.common.numbers import readable, readable_interval
from biaslens.errors import BiaslensError
from biaslens.version import __version__

BEGIN = "<!-- biaslens: bias audit (replaced on each push) -->"
END = "<!-- biaslens: end of bias audit -->"
HEADING = "## Bias audit (biaslens)"
EVAL_RESULTS = ".eval_results/biaslens.yaml"


def read_card(folder: Path | str) -> BiasCard:
    """The bias card of an audited model's folder (``card.json``)."""
    path = Path(folder) / "card.json"
    if not path.is_file():
        raise BiaslensError(f"{folder}: no card.json (a model's folder of `biaslens audit`)")
    try:
        return BiasCard.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as error:
        first = str(error).splitlines()[0]
        raise BiaslensError(f"{path}: not a bias card ({first})") from None


def card_section(card: BiasCard) -> str:
    """The model card's section: the card's summary, each question's answer and the caveat."""
    md = markdown_text
    lines = [BEGIN, HEADING, "", f"Model audited: {md(card.model)}.", ""]
    lines += [md(summary_line(card)) + ".", ""]
    lines += [f"- {answer_markdown(line)}" for line in question_lines(card)]
    lines += ["", md(NO_EVIDENCE_CAVEAT)]
    if card.family:
        lines += ["", f"Verdicts: {md(card.family)}."]
    lines += [
        "",
        f"Audit size {md(card.size)}, {md(card.created)}, biaslens {md(__version__)}; "
        "the values are in `.eval_results/biaslens.yaml`.",
        END,
    ]
    return "\n".join(lines) + "\n"


def with_section(readme: str, section: str) -> str:
    """``readme`` with its biaslens section replaced by ``section`` (appended where it has
    none); every other line is kept as it was."""
    start, stop = readme.find(BEGIN), readme.find(END)
    if start >= 0 and stop > start:
        tail = readme[stop + len(END) :]
        return readme[:start] + section.rstrip("\n") + tail
    if start >= 0 or stop >= 0:
        raise BiaslensError(
            "the model card has only one of biaslens's section markers: mend or remove it, "
            "then push again"
        )
    body = readme.rstrip("\n")
    return (body + "\n\n" if body else "") + section


def eval_entries(card: BiasCard, namespace: str):
    """One :class:`~huggingface_hub.EvalResultEntry` per question the card answers with a
    value: the probe set as ``NAMESPACE/biaslens-METHOD`` (``biaslens datasets export …
    --push-to-hub`` publishes it), the question (and its row) as the task."""
    from huggingface_hub import EvalResultEntry

    entries = []
    for answer in card.questions:
        if answer.value is None:
            continue
        where = "-".join(str(v) for v in answer.labels.values())
        interval = (
            f"{answer.ci_level:.2%} CI {readable_interval(answer.ci_low, answer.ci_high)} "
            "(family-wise)"
            if answer.ci_low is not None and answer.ci_level is not None
            else "no interval"
        )
        notes = (
            f"{answer.symbol} = {readable(answer.value)}, {interval}, n = {answer.n} "
            f"{answer.n_unit or ''}".rstrip()
            + f"; answer: {answer.answer}; step {answer.step}; audit size {card.size}; "
            f"biaslens {__version__}"
        )
        entries.append(
            EvalResultEntry(
                dataset_id=f"{namespace}/biaslens-{answer.method}",
                task_id=f"{answer.key}-{where}" if where else answer.key,
                value=float(answer.value),
                date=card.created,
                notes=notes,
            )
        )
    return entries


def eval_yaml(entries) -> str:
    """``.eval_results/biaslens.yaml``: the entries as huggingface_hub writes them."""
    from huggingface_hub import eval_result_entries_to_yaml

    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True)


@dataclass(frozen=True)
class CardPush:
    """What a push changes: the model card before and after, and the results file."""

    repo: str
    readme_before: str
    readme_after: str
    results: str

    def diff(self) -> str:
        """The change as a unified diff (what ``--dry-run`` prints)."""
        readme = difflib.unified_diff(
            self.readme_before.splitlines(keepends=True),
            self.readme_after.splitlines(keepends=True),
            "README.md",
            "README.md",
        )
        added = [f"+{line}\n" for line in self.results.splitlines()]
        return "".join(readme) + f"--- /dev/null\n+++ {EVAL_RESULTS}\n" + "".join(added)


def _hub_error(repo: str, error: Exception) -> BiaslensError:
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    return BiaslensError(f"card push {repo}: {message}")


def plan_push(folder: Path | str, repo: str, namespace: str) -> CardPush:
    """The change a push of ``folder``'s card to the model repo ``repo`` makes, read from the
    repo's current model card (none yet: a card of this section only)."""
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    card = read_card(folder)
    if constants.HF_HUB_OFFLINE:
        raise BiaslensError(f"card push {repo}: HF_HUB_OFFLINE is set: push when online")
    try:
        readme = Path(hf_hub_download(repo, "README.md")).read_text(encoding="utf-8")
    except EntryNotFoundError:
        readme = ""
    except (HfHubHTTPError, OSError, ValueError) as error:
        raise _hub_error(repo, error) from None
    return CardPush(
        repo,
        readme,
        with_section(readme, card_section(card)),
        eval_yaml(eval_entries(card, namespace)),
    )


def push(change: CardPush, create_pr: bool = True) -> str:
    """Commit the change (a pull request unless ``create_pr`` is False) as the logged-in user;
    returns the pull request's or the commit's address."""
    from huggingface_hub import CommitOperationAdd, HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if get_token() is None:
        raise BiaslensError(
            f"card push {change.repo}: not logged in to the hub: run `hf auth login` or set "
            "HF_TOKEN"
        )
    operations = [
        CommitOperationAdd("README.md", change.readme_after.encode()),
        CommitOperationAdd(EVAL_RESULTS, change.results.encode()),
    ]
    try:
        commit = HfApi().create_commit(
            change.repo,
            operations,
            commit_message=f"Bias audit (biaslens {__version__})",
            create_pr=create_pr,
        )
    except (HfHubHTTPError, OSError, ValueError) as error:
        raise _hub_error(change.repo, error) from None
    return commit.pr_url or commit.commit_url
