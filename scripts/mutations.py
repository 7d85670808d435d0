"""Break each paper rule biaslens implements, one at a time, and check the conformance suite
notices: every mutation must make its tests fail.

Each mutation edits a copy of ``src/`` (the working tree is never touched), runs the named tests
against the copy and expects pytest to report failures (exit status 1: an import error or a
collection error does not count as caught). The unmutated tests run first and must pass.

    python scripts/mutations.py            # all rules (about half an hour on 2 cores)
    python scripts/mutations.py --list     # the rules, where each lives and its tests
    python scripts/mutations.py --only cid-top-k --only mgc-template
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIB = "tests/conformance/test_sib.py::"
QA = "tests/conformance/test_qa.py::"
CID = "tests/conformance/test_cid.py::"


@dataclass(frozen=True)
class Mutation:
    """One broken rule: ``edits`` are (file under src/, text, replacement), each text found
    exactly once; ``tests`` the pytest node ids that must then fail."""

    name: str
    rule: str
    edits: tuple[tuple[str, str, str], ...]
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation(
        "pronoun-list",
        "SIB App. E: the female list holds Her/her",
        (("biaslens/methods/sib/data/pronouns.py",
          '("She", "Her", "Female", "she", "her", "female")',
          '("She", "Female", "she", "female")'),),
        # the tiny causal model has " her" and " Her" as tokens (the tiny BERT has neither)
        (SIB + "test_sib_mgc_numbers_recomputed[llama-exact]",),
    ),
    Mutation(
        "mgc-template",
        "SIB App. D.1: 'In {w}, [MASK] {verb} {life_stage}.' (the comma after W)",
        (("biaslens/methods/sib/data/mgc.py",
          'TEMPLATE = "In {w}, " + MASK', 'TEMPLATE = "In {w} " + MASK'),),
        (SIB + "test_sib_mgc_numbers_recomputed[bert-mlm-exact]",),
    ),
    Mutation(
        "mgc-prompt-a",
        "SIB App. D.2: prompt A verbatim ('fill-in the gendered pronoun')",
        (("biaslens/methods/sib/data/mgc.py",
          "and fill-in the gendered", "and fill in the gendered"),),
        (SIB + "test_sib_mgc_numbers_recomputed[llama-exact]",),
    ),
    Mutation(
        "mgc-date-grid",
        "SIB reference code: linspace(1801, 2016, 30) cut to whole years, not rounded",
        (("biaslens/methods/sib/data/mgc.py",
          "return (np.rint(points) if rounded else points).astype(int)",
          "return np.rint(points).astype(int)"),),
        (SIB + "test_sib_mgc_numbers_recomputed[bert-mlm-exact]",),
    ),
    Mutation(
        "date-injection",
        "SIB Section 5: 'In {date}, ' + the sentence with its first letter lower-cased",
        (("biaslens/methods/sib/data/mgc.py",
          'return f"In {date}, {sentence[:1].lower()}{sentence[1:]}"',
          'return f"In {date}, {sentence}"'),),
        (SIB + "test_sib_detect_numbers_recomputed[bert-mlm-exact]",),
    ),
    Mutation(
        "top-5",
        "SIB App. G: the listed words among the top-5 tokens",
        (("biaslens/methods/sib/scoring/pronouns.py", "PAPER_TOP_K = 5", "PAPER_TOP_K = 4"),),
        (SIB + "test_sib_mgc_numbers_recomputed[bert-mlm-paper]",),
    ),
    Mutation(
        "greedy-steps",
        "SIB App. G: greedy decoding of up to 20 tokens (Method 1's reference code: 10)",
        (("biaslens/methods/sib/mgc/method.py", '"generation_tokens": 10,',
          '"generation_tokens": 12,'),
         ("biaslens/methods/sib/detect/settings.py",
          'default=20, ge=1, le=256, description="Paper scoring: greedy steps."',
          'default=16, ge=1, le=256, description="Paper scoring: greedy steps."')),
        (SIB + "test_sib_mgc_numbers_recomputed[llama-paper]",
         SIB + "test_sib_detect_numbers_recomputed[llama-top5]"),
    ),
    Mutation(
        "pronoun-step",
        "SIB App. G: the one step whose argmax is a listed word, else the mean over steps",
        (("biaslens/methods/sib/metrics/sib.py",
          "if len(pronoun_steps) == 1:", "if pronoun_steps:"),),
        # greedy decodes of the tiny models never put a pronoun first at two steps: the rule's
        # "several" branch is checked against hand-computed masses
        (SIB + "test_sib_mgc_numbers_recomputed[t5-paper]",
         "tests/methods/sib/metrics/test_sib.py::"
         "test_generation_mass_averages_steps_when_zero_or_several_pronouns"),
    ),
    Mutation(
        "detect-threshold",
        "SIB Section 5: a sentence is underspecified when the metric exceeds 0.5 pp",
        (("biaslens/methods/sib/detect/settings.py",
          'default=0.5, ge=0, le=100, description="Unspecified when metric > this (pp)."',
          'default=0.05, ge=0, le=100, description="Unspecified when metric > this (pp)."'),),
        (SIB + "test_sib_detect_numbers_recomputed[bert-mlm-exact]",
         SIB + "test_sib_detect_numbers_recomputed[roberta-mlm-paper]"),
    ),
    Mutation(
        "reply-spelling",
        "the reply's first word in either spelling (' She' after a cue, 'She' after a chat header)",
        (("biaslens/methods/sib/data/pronouns.py", 'spellings = ("",) if fills_slot else (" ", "")',
          'spellings = ("",) if fills_slot else (" ",)'),),
        ("tests/conformance/test_reply_start.py::"
         "test_exact_chat_scoring_reads_the_reply_as_sampled",),
    ),
    Mutation(
        "unqover-position",
        "UnQover: S̃(x1|a) = ½[S(x1 first) + S(x1 second)] (position correction)",
        (("biaslens/methods/qa/metrics/unqover.py",
          'joined["tilde_x1"] = 0.5 * (joined["s_first"] + joined["m_second"])',
          'joined["tilde_x1"] = joined["s_first"]'),),
        (QA + "test_unqover_numbers_recomputed[roberta-qa-None]",),
    ),
    Mutation(
        "unqover-negation",
        "UnQover: B(x1, a) = S̃(x1|a) − S̃(x1|ā) (negation correction)",
        (("biaslens/methods/qa/metrics/unqover.py",
          'both["b_x1"] = both["tilde_x1"] - both["tilde_x1_neg"]',
          'both["b_x1"] = both["tilde_x1"]'),),
        (QA + "test_unqover_numbers_recomputed[roberta-qa-None]",),
    ),
    Mutation(
        "unqover-half",
        "UnQover: C(x1, x2, a) = ½[B(x1, a) − B(x2, a)]",
        (("biaslens/methods/qa/metrics/unqover.py",
          'both["C"] = 0.5 * (both["b_x1"] - both["b_x2"])',
          'both["C"] = both["b_x1"] - both["b_x2"]'),),
        (QA + "test_unqover_numbers_recomputed[roberta-qa-None]",),
    ),
    Mutation(
        "unifiedqa-layout",
        "UnQover/LEI generative input: UnifiedQA's parts joined by a literal '\\n'",
        (("biaslens/methods/qa/scoring/qa.py", 'sep = "\\n" if causal else " \\\\n "',
          'sep = "\\n" if causal else " | "'),),
        (QA + "test_unqover_numbers_recomputed[t5-None]",),
    ),
    Mutation(
        "lei-prefix",
        "LEI: the intervention enters as 'Note that, ' + its first letter lower-cased",
        (("biaslens/methods/qa/data/lei_interventions.py",
          'return f"Note that, {intervention[0].lower()}{intervention[1:]} {question}"',
          'return f"Note that {intervention} {question}"'),),
        (QA + "test_lei_eval_numbers_recomputed[roberta-qa-None]",),
    ),
    Mutation(
        "lei-dominant",
        "LEI App. B.2: the dominant subject is the one the zero-shot bias C favours",
        (("biaslens/methods/qa/train/lei_data.py", "q0 = np.where(values > 0, 0, 1)",
          "q0 = np.where(values > 0, 1, 0)"),),
        ("tests/conformance/test_lei_train.py::"
         "test_lei_train_targets_and_evaluations_recomputed[roberta-qa-None]",),
    ),
    Mutation(
        "cid-top-k",
        "CID App. B: the top-K tokens of p(·|x), K = 50 throughout",
        (("biaslens/common/contrastive_defaults.py", "TOP_K = 50\n", "TOP_K = 40\n"),),
        (CID + "test_cid_audit_continuations_recomputed[llama-None]",),
    ),
    Mutation(
        "cid-contrast",
        "CID Eq. 1: Δ(w) = p(w|x) − p(w|x')",
        (("biaslens/decoding/contrastive.py", "delta = logprobs_x.exp() - logprobs_x_prime.exp()",
          "delta = logprobs_x_prime.exp() - logprobs_x.exp()"),),
        (CID + "test_cid_audit_continuations_recomputed[llama-None]",),
    ),
    Mutation(
        "cid-both-contexts",
        "CID Section 3: each generated token is appended to both x and x'",
        (("biaslens/decoding/contrastive.py",
          "logits = self._step(state, chosen.repeat_interleave(2))",
          "logits = self._step(state, torch.stack([chosen, chosen * 0], 1).flatten())"),),
        (CID + "test_cid_audit_continuations_recomputed[llama-None]",),
    ),
    Mutation(
        "cid-lambda-grid",
        "CID Section 4: λ ∈ {0, 10, 50} (the preset)",
        (("biaslens/methods/cid/audit.py", 'presets={"paper": {"lams": (0.0, 10.0, 50.0)}}',
          'presets={"paper": {"lams": (0.0, 5.0, 50.0)}}'),),
        (CID + "test_cid_audit_continuations_recomputed[llama-paper]",),
    ),
    Mutation(
        "toy-scm",
        "SIB Section 3 toy SCM: S := (W + G + N(0,1)) > 2α, X := W + γ·G + N(0,1)",
        (("biaslens/methods/sib/data/toy_scm.py", "x = w + gamma * g + noise[3]",
          "x = g + gamma * w + noise[3]"),),
        ("tests/conformance/test_toy.py::test_toy_summary_recomputed",),
    ),
    Mutation(
        "sampled-allocation",
        "Adaptive allocation keeps fixed K's sampling variance (Neyman, in whole blocks)",
        (("biaslens/scoring/allocation.py", "target = c.sum() / samples *",
          "target = 2 * c.sum() / samples *"),),
        ("tests/statistics/test_adaptive_allocation.py::"
         "test_the_allocation_matches_a_hand_worked_marginal_allocation",),
    ),
)  # fmt: skip


def check_edits(mutation: Mutation, src: Path) -> None:
    """Each edit's text occurs exactly once in its file (else the mutation has rotted)."""
    for file, text, _ in mutation.edits:
        found = (src / file).read_text(encoding="utf-8").count(text)
        if found != 1:
            raise SystemExit(f"{mutation.name}: {text!r} occurs {found} times in src/{file}")


def run_tests(tests: tuple[str, ...], src: Path, log: Path) -> int:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    with log.open("w") as out:
        return subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=out).returncode


def mutated_copy(mutation: Mutation, workdir: Path) -> Path:
    src = workdir / mutation.name / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    for file, text, replacement in mutation.edits:
        path = src / file
        path.write_text(path.read_text(encoding="utf-8").replace(text, replacement))
    return src


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the rules and stop")
    parser.add_argument("--only", action="append", default=[], help="run this rule (repeat)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = set(args.only) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown rules: {', '.join(sorted(unknown))}")
    for mutation in chosen:
        check_edits(mutation, ROOT / "src")
    if args.list:
        for m in chosen:
            print(f"{m.name:18} {m.rule}\n{'':18} src/{', src/'.join(e[0] for e in m.edits)}")
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="biaslens-mutations-"))
    tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
    if not args.no_baseline:
        started = time.monotonic()
        status = run_tests(tests, ROOT / "src", workdir / "baseline.log")
        verdict = "pass" if status == 0 else "FAIL"
        print(f"baseline ({len(tests)} tests): {verdict} in {time.monotonic() - started:.0f} s")
        if status != 0:
            print(f"the unmutated tests fail: see {workdir / 'baseline.log'}")
            return 1
    missed = []
    for mutation in chosen:
        started = time.monotonic()
        src = mutated_copy(mutation, workdir)
        status = run_tests(mutation.tests, src, workdir / f"{mutation.name}.log")
        verdict = {1: "caught"}.get(status, "MISSED" if status == 0 else f"ERROR (rc {status})")
        if verdict != "caught":
            missed.append(mutation.name)
        took = time.monotonic() - started
        print(f"{mutation.name:18} {verdict:8} {took:5.0f} s  {mutation.rule}", flush=True)
    print(f"{len(chosen) - len(missed)} of {len(chosen)} rules caught; logs in {workdir}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
