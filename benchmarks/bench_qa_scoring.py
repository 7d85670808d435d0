"""Benchmark: extractive UnQover/LEI scoring (``span_scores``) — biaslens vs a competent
batched transformers script vs the per-example loop of the UnQover code, on the same questions.

Requests: LEI religion noniid-test contexts with their interventions in the question, each
asked as the question and its negation; S(x) = sqrt(p_start · p_end) of both subjects.
Approaches:

* biaslens ``--batch-size auto`` (a fresh size memo, its probe timed too): length-sorted
  batches, both subjects read from one forward pass per question;
* a competent transformers script: length-sorted, padded batches of 32 questions, one forward
  pass per question, padding kept out of the softmax, both subjects read from it;
* the UnQover code's approach: one unbatched forward pass per (question, subject).

lm-evaluation-harness has no request type for start/end span probabilities, so it has no row
here. Prints questions/s, biaslens's speed-up over each, agreement (max |Δ S| against biaslens),
the CPU and its fp32 matmul peak. The model is the tiny extractive model built at run time, or
``--model PATH`` for a real one (e.g. a RoBERTa-SQuAD folder).

    python benchmarks/bench_qa_scoring.py --contexts 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import torch  # noqa: E402

from biaslens.methods.qa.data import lei  # noqa: E402
from biaslens.methods.qa.scoring.qa import extractive_scores  # noqa: E402
from biaslens.models import BackendConfig, load_model  # noqa: E402
from biaslens.progress import NoProgress  # noqa: E402
from biaslens.testing.tiny_models import build_roberta_qa  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "lei"


def questions_of(rows) -> list[tuple[str, str, list[tuple[int, int]]]]:
    """(question, context, subject character spans) per asked question, in biaslens's order
    (per context: the question, then its negation)."""
    out = []
    for row in rows.itertuples():
        spans = [
            (row.first_start, row.first_start + len(row.first)),
            (row.second_start, row.second_start + len(row.second)),
        ]
        for question in (row.question, row.negated_question):
            out.append((lei.intervene_question(question, row.intervention), row.context, spans))
    return out


def token_span(offsets, sequence_ids, start: int, end: int) -> tuple[int, int]:
    first = next(i for i, (a, b) in enumerate(offsets) if sequence_ids[i] == 1 and a <= start < b)
    last = next(i for i, (a, b) in enumerate(offsets) if sequence_ids[i] == 1 and a < end <= b)
    return first, last


def batched_script(model, tokenizer, asked, batch_size: int = 32) -> list[float]:
    """S of both subjects per question: sorted, padded batches, one forward per question."""
    order = sorted(range(len(asked)), key=lambda i: len(asked[i][0]) + len(asked[i][1]))
    scores: list[list[float]] = [[]] * len(asked)
    for start in range(0, len(order), batch_size):
        batch = [asked[i] for i in order[start : start + batch_size]]
        enc = tokenizer(
            [q for q, _, _ in batch],
            [c for _, c, _ in batch],
            return_offsets_mapping=True,
            padding=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping").tolist()
        with torch.inference_mode():
            out = model(**enc)
        padding = enc["attention_mask"] == 0  # kept out of the softmax
        starts = out.start_logits.masked_fill(padding, float("-inf")).softmax(-1)
        ends = out.end_logits.masked_fill(padding, float("-inf")).softmax(-1)
        for row, (i, (_, _, spans)) in enumerate(zip(order[start:], batch, strict=False)):
            sequence_ids = enc.sequence_ids(row)
            pair = []
            for a, b in spans:
                first, last = token_span(offsets[row], sequence_ids, a, b)
                pair.append(float((starts[row, first] * ends[row, last]).sqrt()))
            scores[i] = pair
    return [s for pair in scores for s in pair]


def per_example(model, tokenizer, asked) -> list[float]:
    """The UnQover code's way: one unbatched forward per (question, subject)."""
    out = []
    for question, context, spans in asked:
        for a, b in spans:
            enc = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")
            offsets = enc.pop("offset_mapping")[0].tolist()
            first, last = token_span(offsets, enc.sequence_ids(0), a, b)
            with torch.inference_mode():
                result = model(**enc)
            p_start = result.start_logits[0].softmax(-1)[first]
            p_end = result.end_logits[0].softmax(-1)[last]
            out.append(float((p_start * p_end).sqrt()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="extractive-QA folder (default: tiny)")
    parser.add_argument("--contexts", type=int, default=200)
    parser.add_argument("--lei-dir", type=Path, default=SHARED)
    args = parser.parse_args()
    harness.start()
    model = args.model or str(build_roberta_qa(Path(tempfile.mkdtemp()) / "roberta-qa"))
    rows = lei.read_split(lei.split_path("religion/noniid_test", args.lei_dir))
    rows = rows.head(args.contexts).reset_index(drop=True)
    asked = questions_of(rows)
    n = len(asked)

    lm = load_model(model, BackendConfig(device="cpu", batch_size="auto"))
    extractive_scores(lm, rows.head(2), NoProgress())  # load and warm up
    lm.sizers.clear()
    seconds, table = harness.timed(lambda: extractive_scores(lm, rows, NoProgress()))
    table = table.sort_values(["row", "negated"], kind="stable")
    reference = [s for pair in zip(table["s_first"], table["s_second"], strict=True) for s in pair]
    rows_out = [harness.Row("biaslens span_scores, batch auto", n, seconds)]
    for label, approach in (
        ("transformers script, batch 32", batched_script),
        ("UnQover code: one forward per (question, subject)", per_example),
    ):
        seconds, scores = harness.timed(
            lambda approach=approach: approach(lm.model, lm.tokenizer, asked)
        )
        rows_out.append(
            harness.Row(label, n, seconds, harness.max_abs_difference(scores, reference))
        )
    harness.print_table(
        f"Extractive S(x), {n} questions ({lm.identity.name})", "questions", rows_out
    )


if __name__ == "__main__":
    main()
