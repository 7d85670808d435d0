"""Benchmark: LEI fine-tuning examples/s, biaslens trainer vs a plain per-example loop.

Both train one epoch on the same LEI religion train examples with the same losses, optimizer
(AdamW) and effective batch size. (a) biaslens ``LeiTrainer``: examples encoded once, balanced
padded batches, one forward per batch (both candidates of a generative model in it); (b) a plain
loop: each example tokenized when used and run alone (generative: one forward per candidate),
gradients accumulated over the batch. Models: the tiny extractive model built at run time and
SmolLM2-135M (generative), or ``--model PATH``. Prints examples/s and the ratio.

    python benchmarks/bench_lei_train.py --examples 48
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

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from biaslens.methods.qa.data import lei  # noqa: E402
from biaslens.methods.qa.scoring.qa import qa_mode_for, subject_choice_request  # noqa: E402
from biaslens.methods.qa.train import lei_losses as L  # noqa: E402
from biaslens.methods.qa.train.lei import LeiTrainConfig, LeiTrainer  # noqa: E402
from biaslens.methods.qa.train.lei_data import LeiTrainingSet, file_reference, training_set  # noqa: E402
from biaslens.models import BackendConfig, load_model  # noqa: E402
from biaslens.models.base import ModelKind  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "lei"


def examples(n: int, generative: bool, lei_dir: Path) -> LeiTrainingSet:
    path = lei.split_path("religion/train_256", lei_dir)
    split = lei.read_split(path)
    data = training_set(split, file_reference(split, path), path)
    keep = np.arange(min(n, len(data)))
    reference = data.reference[keep]
    if generative:
        reference = np.full((len(keep), 2, 1), 0.5)
    dominant = np.where(data.dominant[keep] < 0, -1, data.dominant[keep])
    return LeiTrainingSet(data.examples.iloc[keep].reset_index(drop=True), reference, dominant)


def example_loss(lm, row, reference, dominant, generative: bool) -> torch.Tensor:
    """The plain loop's loss of one example: tokenize now, one forward (per candidate)."""
    tokenizer, model = lm.tokenizer, lm.model
    if generative:
        causal = lm.kind == ModelKind.CAUSAL
        request = subject_choice_request(
            row.question, row.first, row.second, row.context, row.intervention, causal
        )
        logps = []
        for choice in request.choices:
            p = tokenizer(request.prompt)["input_ids"]
            c = tokenizer(choice, add_special_tokens=False)["input_ids"]
            ids = torch.tensor([p + c])
            logits = model(input_ids=ids).logits[0, len(p) - 1 : -1].float().log_softmax(-1)
            logps.append(logits[torch.arange(len(c)), torch.tensor(c)].sum())
        probs = torch.stack(logps).softmax(-1).view(1, 2, 1)
    else:
        ids, spans = lm.encode_spans(
            lei.intervene_question(row.question, row.intervention),
            row.context,
            [
                (s, s + len(t))
                for t, s in ((row.first, row.first_start), (row.second, row.second_start))
            ],
        )
        out = model(input_ids=torch.tensor([ids]))
        start, end = out.start_logits[0].softmax(-1), out.end_logits[0].softmax(-1)
        probs = torch.stack([torch.stack([start[a], end[b]]) for a, b in spans]).unsqueeze(0)
    if row.intervention_type == "ethical":
        return L.ethical_loss(probs)[0]
    if row.intervention_type == "adversarial":
        return L.adversarial_loss(probs, torch.tensor([dominant]))[0]
    return L.irrelevant_loss(probs, torch.tensor(reference).unsqueeze(0))[0]


def plain_loop(lm, data: LeiTrainingSet, batch_size: int, lr: float, generative: bool) -> float:
    model = lm.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    start = time.perf_counter()
    for i, row in enumerate(data.examples.itertuples(index=False)):
        loss = example_loss(lm, row, data.reference[i], data.dominant[i], generative)
        (loss / batch_size).backward()
        if (i + 1) % batch_size == 0 or i + 1 == len(data):
            optimizer.step()
            optimizer.zero_grad()
    model.eval()
    return len(data) / (time.perf_counter() - start)


def measure(model: str, n: int, batch_size: int, lei_dir: Path) -> None:
    lm = load_model(model, BackendConfig(device="cpu"))
    mode = qa_mode_for(lm)
    data = examples(n, mode == "generative", lei_dir)
    config = LeiTrainConfig(learning_rate=1e-5, epochs=1, batch_size=batch_size)
    start = time.perf_counter()
    LeiTrainer(lm, config, mode).train(data)
    fast = len(data) / (time.perf_counter() - start)
    lm = load_model(model, BackendConfig(device="cpu"))  # fresh weights for the baseline
    naive = plain_loop(lm, data, batch_size, 1e-5, mode == "generative")
    print(
        f"{lm.identity.name} ({mode}, {len(data)} examples, batch {batch_size}): "
        f"biaslens {fast:.2f} examples/s, plain loop {naive:.2f} examples/s, "
        f"ratio {fast / naive:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", help="model(s) (default: tiny + default)")
    parser.add_argument("--examples", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lei-dir", type=Path, default=SHARED)
    args = parser.parse_args()
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    if args.model:
        models = args.model
    else:
        from biaslens.testing.tiny_models import build_roberta_qa

        models = [str(build_roberta_qa(Path(tempfile.mkdtemp()) / "roberta-qa")), "default"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device cpu")
    for model in models:
        measure(model, args.examples, args.batch_size, args.lei_dir)


if __name__ == "__main__":
    main()
