"""Benchmark: extractive UnQover scoring through biaslens vs a per-example transformers pipeline.

The same LEI contexts (religion noniid test, with their interventions in the question) are
scored (a) by biaslens ``span_scores``: batched, length-sorted, both subjects and both
questions read from one forward pass per question; (b) one unbatched
forward per (question, subject) with ``AutoModelForQuestionAnswering``, the way the UnQover
code reads one answer span at a time (transformers 5 removed the ``question-answering``
pipeline, so the baseline calls the model directly). Prints questions/s and the ratio; the
model is the tiny extractive model built at run time (or ``--model PATH`` for a real one).

    python benchmarks/bench_qa_scoring.py --contexts 200
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import AutoModelForQuestionAnswering, AutoTokenizer  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from biaslens.data import lei  # noqa: E402
from biaslens.experiments.qa_scoring import extractive_scores  # noqa: E402
from biaslens.models import BackendConfig, load_model  # noqa: E402
from biaslens.progress import NoProgress  # noqa: E402
from biaslens.testing.tiny_models import build_roberta_qa  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "lei"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="extractive-QA folder (default: tiny)")
    parser.add_argument("--contexts", type=int, default=200)
    parser.add_argument("--lei-dir", type=Path, default=SHARED)
    args = parser.parse_args()
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    model = args.model or str(build_roberta_qa(Path(tempfile.mkdtemp()) / "roberta-qa"))
    rows = lei.read_split(lei.split_path("religion/noniid_test", args.lei_dir))
    rows = rows.head(args.contexts)
    questions = 2 * len(rows)

    lm = load_model(model, BackendConfig(device="cpu", batch_size="auto"))
    start = time.perf_counter()
    extractive_scores(lm, rows, NoProgress())
    fast = questions / (time.perf_counter() - start)

    tokenizer = AutoTokenizer.from_pretrained(model)
    qa = AutoModelForQuestionAnswering.from_pretrained(model).eval()
    start = time.perf_counter()
    for row in rows.itertuples():
        for question in (row.question, row.negated_question):
            asked = lei.intervene_question(question, row.intervention)
            for subject_start, subject in (
                (row.first_start, row.first),
                (row.second_start, row.second),
            ):
                enc = tokenizer(
                    asked, row.context, return_offsets_mapping=True, return_tensors="pt"
                )
                offsets = enc.pop("offset_mapping")[0].tolist()
                ids = enc.sequence_ids(0)
                end = subject_start + len(subject)
                a = next(
                    i for i, (x, y) in enumerate(offsets) if ids[i] == 1 and x <= subject_start < y
                )
                b = next(i for i, (x, y) in enumerate(offsets) if ids[i] == 1 and x < end <= y)
                with torch.no_grad():
                    out = qa(**enc)
                _ = (out.start_logits[0].softmax(-1)[a] * out.end_logits[0].softmax(-1)[b]).sqrt()
    naive = questions / (time.perf_counter() - start)
    print(
        f"biaslens span_scores: {fast:,.1f} questions/s; per-example loop: {naive:,.1f} "
        f"questions/s; ratio {fast / naive:.1f}x ({questions} questions, {model})"
    )


if __name__ == "__main__":
    main()
