"""`biaslens card push`: the bias card on a model's hub page, by the real ``huggingface_hub``
client against the test hub on 127.0.0.1 — a pull request with the model card's section and
``.eval_results/biaslens.yaml``, read back with huggingface_hub's own readers; a second push
replaces only its own section; a hostile value stays inert; ``--dry-run`` pushes nothing."""

from __future__ import annotations

import pytest
import yaml
from huggingface_hub import ModelCard, parse_eval_result_entries

from biaslens.auditing.card import BiasCard, QuestionAnswer
from biaslens.auditing.publish import BEGIN, END

from .conftest import TOKEN

pytestmark = pytest.mark.slow

README = "---\nlicense: mit\n---\n# A model\n\nIts own words, kept as they are.\n"
HOSTILE = "<script>alert(1)</script> **bold** [link](http://evil.example)"


def _answer(value: float, low: float, high: float, answer: str) -> QuestionAnswer:
    return QuestionAnswer(
        step="sib-mgc", method="sib-mgc", key="pronoun-moves-with-w",
        question="Does the gendered pronoun move with an irrelevant W (dates, prompt A)?",
        source="SIB, Section 4", metric="female_minus_male_slope", symbol="slope(f − m)",
        labels={"prompt": "A", "w_kind": "dates"}, value=value, unit="pp/step",
        meaning="the female − male slope", target=0.0, target_words="0: no trend",
        answer=answer, ci_low=low, ci_high=high, ci_level=0.975, run_ci_low=low,
        run_ci_high=high, run_ci_level=0.95, interval="trend interval", n=450,
        n_unit="frame × W values", detectable=None, caveat=None,
        finding=f"slope(f − m) = {value} [{low}, {high}]", run="sib-mgc", report=None,
    )  # fmt: skip


def _card_folder(tmp_path, name: str, value: float, model: str = "tiny"):
    folder = tmp_path / name
    folder.mkdir()
    answer = _answer(value, value - 0.01, value + 0.01, "evidence")
    card = BiasCard(model=model, size="quick", created="2026-12-07T12:00:00Z",
                    questions=[answer], family="Holm over 1 question")  # fmt: skip
    (folder / "card.json").write_text(card.model_dump_json())
    return folder


def _files(client, repo_id: str, ref: str) -> dict[str, bytes]:
    repo = client.hub.repos[repo_id]
    return repo.commits[repo.refs[ref]]


def test_a_push_opens_a_pull_request_that_the_hubs_readers_read(client, tmp_path):
    client.hub.repo("org/carded").add({"README.md": README.encode(), "config.json": b"{}"})
    folder = _card_folder(tmp_path, "first", 0.0042)
    done = client.cli("card", "push", str(folder), "org/carded", HF_TOKEN=TOKEN)
    assert done.returncode == 0, done.stderr
    assert "/org/carded/discussions/1" in done.stdout
    assert TOKEN not in done.stdout + done.stderr
    main = _files(client, "org/carded", "main")
    assert main["README.md"] == README.encode()  # a pull request: main is untouched
    pushed = _files(client, "org/carded", "refs/pr/1")
    readme = pushed["README.md"].decode()
    assert readme.startswith(README.rstrip("\n")) and readme.count(BEGIN) == 1
    assert "## Bias audit (biaslens)" in readme and "0.0042" in readme
    card_file = tmp_path / "README.md"
    card_file.write_text(readme)
    assert ModelCard.load(card_file).data.license == "mit"  # the header survives
    entries = parse_eval_result_entries(yaml.safe_load(pushed[".eval_results/biaslens.yaml"]))
    [entry] = entries
    assert entry.value == pytest.approx(0.0042)
    assert entry.dataset_id == "biaslens/biaslens-sib-mgc"
    assert entry.task_id == "pronoun-moves-with-w-A-dates"
    assert "97.50% CI" in entry.notes and "n = 450" in entry.notes
    assert all(TOKEN.encode() not in content for content in pushed.values())


def test_a_second_push_replaces_only_its_own_section(client, tmp_path):
    client.hub.repo("org/again").add({"README.md": README.encode()})
    for name, value in (("first", 0.0042), ("second", 0.0077)):
        folder = _card_folder(tmp_path, name, value)
        done = client.cli("card", "push", str(folder), "org/again", "--no-pr", HF_TOKEN=TOKEN)
        assert done.returncode == 0, done.stderr
    readme = _files(client, "org/again", "main")["README.md"].decode()
    assert readme.count(BEGIN) == 1 and readme.count(END) == 1
    assert "0.0077" in readme and "0.0042" not in readme
    before, _, _ = readme.partition(BEGIN)
    assert before.rstrip("\n") == README.rstrip("\n")  # every other line as it was


def test_a_hostile_value_is_inert_and_a_dry_run_pushes_nothing(client, tmp_path):
    client.hub.repo("org/hostile").add({"README.md": README.encode()})
    folder = _card_folder(tmp_path, "hostile", 0.0042, model=HOSTILE)
    done = client.cli("card", "push", str(folder), "org/hostile", "--dry-run", HF_TOKEN=TOKEN)
    assert done.returncode == 0, done.stderr
    assert "+## Bias audit (biaslens)" in done.stdout and "nothing was pushed" in done.stdout
    assert not client.hub.requests("POST", contains="/commit/")
    assert "<script>" not in done.stdout and "&lt;script&gt;" in done.stdout
    done = client.cli("card", "push", str(folder), "org/hostile", "--no-pr", HF_TOKEN=TOKEN)
    readme = _files(client, "org/hostile", "main")["README.md"].decode()
    assert "<script>" not in readme and "[link](http" not in readme


def test_no_login_or_no_card_is_one_line(client, tmp_path):
    client.hub.repo("org/nologin").add({"README.md": README.encode()})
    folder = _card_folder(tmp_path, "card", 0.0042)
    done = client.cli("card", "push", str(folder), "org/nologin", HF_TOKEN=None)
    assert done.returncode != 0 and len(done.error_lines) == 1
    assert "not logged in to the hub" in done.error_lines[0]
    done = client.cli("card", "push", str(tmp_path), "org/nologin", HF_TOKEN=TOKEN)
    assert done.returncode != 0 and "no card.json" in done.error_lines[0]


def test_an_audit_pushes_its_card_when_asked(client, tmp_path):
    """`biaslens audit --push-to-hub`: the audited hub model's card, as a pull request to the
    model's own repo (no model card yet: the section alone); several models are refused first."""
    from tests.conftest import DATA

    done = client.cli("audit", "-m", "org/tiny-llama", "--methods", "sib-detect", "--data-dir",
                      str(DATA), "-o", str(tmp_path / "audit"), "--push-to-hub",
                      "org/tiny-llama", HF_TOKEN=TOKEN)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "/org/tiny-llama/discussions/" in done.stdout
    [ref] = [r for r in client.hub.repos["org/tiny-llama"].refs if r.startswith("refs/pr/")]
    pushed = _files(client, "org/tiny-llama", ref)
    assert pushed["README.md"].decode().startswith(BEGIN)
    entries = parse_eval_result_entries(yaml.safe_load(pushed[".eval_results/biaslens.yaml"]))
    assert entries and {e.dataset_id for e in entries} == {"biaslens/biaslens-sib-detect"}
    two = client.cli("audit", "-m", "a", "-m", "b", "--push-to-hub", "org/x", HF_TOKEN=TOKEN)
    assert two.returncode != 0 and "one model's card" in two.error_lines[0]
