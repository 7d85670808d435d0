"""LEI few-shot fine-tuning with group losses (Zhao et al. 2021, Appendix B.2).

Extractive QA models: the ethical / adversarial / irrelevant losses of
:mod:`biaslens.methods.qa.train.lei_losses` on p_start / p_end of the subjects' gold spans, plus the
SQuAD span cross-entropy on mixed-in QA rows. Generative (causal or seq2seq) models: the same losses
on the candidate probabilities normalised over the two subjects (UnifiedQA input, as scored in
zero-shot evaluation), plus the language-modeling loss of the gold answer on mixed-in QA rows.

Batches hold about as many ethical as adversarial and irrelevant examples; the loss of a batch
is Σ_type weight_type · mean loss of its examples of that type. QA rows are spread evenly over
the batches: ``qa_ratio`` of them per intervention example (1/3 gives the official train files'
3/4 intervention, 1/4 SQuAD mix). An epoch's order depends on (seed, epoch) only.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.lei import intervene_question
from biaslens.methods.qa.scoring.qa import QAMode, subject_choice_request, unifiedqa_prompt
from biaslens.methods.qa.train import lei_losses as L
from biaslens.methods.qa.train.config import LeiTrainConfig, LossWeights
from biaslens.methods.qa.train.lei_data import LeiTrainingSet, balanced_order
from biaslens.models.base import ModelKind
from biaslens.models.trainable import TrainableLM
from biaslens.progress import NoProgress, Progress

__all__ = ["LeiTrainConfig", "LeiTrainer", "LossWeights"]


@dataclass
class _Encoded:
    """Token ids of the examples, prepared once before training."""

    ids: list  # extractive: sequence ids; generative: prompt ids
    spans: list  # extractive: ((start, end) token of first, of second); generative: choice ids


class LeiTrainer:
    """Fine-tunes the model of a :class:`TrainableLM` in place with the LEI objective."""

    def __init__(
        self,
        lm: TrainableLM,
        config: LeiTrainConfig,
        mode: QAMode,
        autocast: torch.dtype | None = None,
    ) -> None:
        """``autocast``: run the forward passes in this dtype (e.g. bfloat16) while the model's
        own weights, which the optimizer updates, stay in their dtype (float32)."""
        if not isinstance(lm, TrainableLM):
            raise BiaslensError("LEI fine-tuning needs a trainable in-process model (--backend hf)")
        if (mode == "extractive") != (lm.kind == ModelKind.EXTRACTIVE_QA):
            raise BiaslensError(f"a {lm.kind.value} model cannot be trained in {mode} mode")
        self.lm = lm
        self.config = config
        self.mode = mode
        self.causal = lm.kind == ModelKind.CAUSAL
        self.autocast = autocast

    # ------------------------------------------------------------------ encoding
    def encode(self, examples: pd.DataFrame) -> _Encoded:
        """Sequences and subject positions (extractive) or prompts and choices (generative),
        built exactly as zero-shot scoring builds them."""
        b = self.lm
        if self.mode == "generative":
            requests = [
                subject_choice_request(
                    row.question, row.first, row.second, row.context, row.intervention, self.causal
                )
                for row in examples.itertuples(index=False)
            ]
            prompts, choices = b.encode_choice_requests(requests)
            return _Encoded(prompts, [tuple(c) for c in choices])
        ids, spans = [], []
        for row in examples.itertuples(index=False):
            subjects = ((row.first, row.first_start), (row.second, row.second_start))
            sequence, token_spans = b.encode_spans(
                intervene_question(row.question, row.intervention),
                row.context,
                [(int(start), int(start) + len(text)) for text, start in subjects],
                self.config.context_first,
            )
            for (text, _), span in zip(subjects, token_spans, strict=True):
                if span is None:
                    raise BiaslensError(f"key {row.key!r}: {text!r} lies outside the input")
            ids.append(sequence)
            spans.append(tuple(token_spans))
        return _Encoded(ids, spans)

    def encode_qa(self, qa: pd.DataFrame) -> _Encoded:
        """QA rows: gold start/end tokens (extractive; rows whose answer is truncated away are
        dropped) or prompt and gold answer ids (generative)."""
        b = self.lm
        ids, spans = [], []
        for row in qa.itertuples(index=False):
            if self.mode == "extractive":
                start = int(row.answer_start)
                sequence, (span,) = b.encode_spans(
                    row.question,
                    row.context,
                    [(start, start + len(row.answer))],
                    self.config.context_first,
                )
                if span is None:
                    continue
                ids.append(sequence)
                spans.append(span)
            else:
                prompt = unifiedqa_prompt((row.question, row.context), self.causal)
                answer = (" " + row.answer.strip()) if self.causal else row.answer.strip()
                ids.append(b.encode_prompts([prompt])[0])
                spans.append(b.encode_continuation(answer))
        return _Encoded(ids, spans)

    # ------------------------------------------------------------------ forward passes
    def subject_probs(self, encoded: _Encoded, batch: np.ndarray) -> torch.Tensor:
        """(batch, 2 subjects, K) probabilities, with gradients."""
        b = self.lm
        if self.mode == "extractive":
            start, end = b.start_end_logprobs([encoded.ids[i] for i in batch])
            first = torch.tensor([encoded.spans[i][0] for i in batch], device=b.device)
            second = torch.tensor([encoded.spans[i][1] for i in batch], device=b.device)
            rows = torch.arange(len(batch), device=b.device)
            probs = [
                torch.stack([start[rows, span[:, 0]], end[rows, span[:, 1]]], -1)
                for span in (first, second)
            ]
            return torch.stack(probs, 1).exp()
        prompts = [encoded.ids[i] for i in batch for _ in range(2)]
        choices = [encoded.spans[i][c] for i in batch for c in range(2)]
        logprobs = b.continuation_logprobs(prompts, choices).view(len(batch), 2)
        return logprobs.softmax(-1).unsqueeze(-1).float()

    def qa_losses(self, encoded: _Encoded, batch: np.ndarray) -> torch.Tensor:
        """Per row: SQuAD span cross-entropy (extractive) or answer LM loss (generative)."""
        b = self.lm
        if self.mode == "extractive":
            start, end = b.start_end_logprobs([encoded.ids[i] for i in batch])
            gold = torch.tensor([encoded.spans[i] for i in batch], device=b.device)
            return L.span_cross_entropy(start, end, gold[:, 0], gold[:, 1])
        answers = [encoded.spans[i] for i in batch]
        logprobs = b.continuation_logprobs([encoded.ids[i] for i in batch], answers)
        lengths = torch.tensor([len(a) for a in answers], device=b.device)
        return L.answer_lm_loss(logprobs, lengths).float()

    def intervention_losses(
        self, data: LeiTrainingSet, encoded: _Encoded, batch: np.ndarray
    ) -> dict[str, torch.Tensor]:
        """Mean loss per intervention type present in the batch."""
        probs = self.subject_probs(encoded, batch)
        types = data.examples["intervention_type"].to_numpy()[batch]
        out = {}
        for name in ("ethical", "adversarial", "irrelevant"):
            mask = types == name
            if not mask.any():
                continue
            rows = torch.as_tensor(np.flatnonzero(mask), device=probs.device)
            part = probs[rows]
            if name == "ethical":
                loss = L.ethical_loss(part)
            elif name == "adversarial":
                dominant = torch.as_tensor(data.dominant[batch][mask], device=probs.device)
                loss = L.adversarial_loss(part, dominant)
            else:
                reference = torch.as_tensor(data.reference[batch][mask], device=probs.device)
                loss = L.irrelevant_loss(part, reference)
            if self.config.loss_reduction == "reference":
                out[name] = loss.sum() / 2  # summed over rows, the total halved (mutils.py)
            else:
                out[name] = loss.mean()
        return out

    # ------------------------------------------------------------------ training
    def _forward_precision(self):
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(self.lm.device.type, dtype=self.autocast)

    def epoch_batches(
        self, data: LeiTrainingSet, n_qa: int, epoch: int
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(intervention indices, QA indices) per step of ``epoch``; depends on seed and epoch."""
        rng = np.random.default_rng([self.config.seed, epoch])
        batches = balanced_order(data.examples["intervention_type"], self.config.batch_size, rng)
        wanted = round(self.config.qa_ratio * len(data)) if n_qa else 0
        qa = np.resize(rng.permutation(n_qa), wanted) if wanted else np.array([], dtype=int)
        shares = np.array_split(qa, len(batches))
        return list(zip(batches, shares, strict=True))

    def train(
        self,
        data: LeiTrainingSet,
        qa: pd.DataFrame | None = None,
        progress: Progress | None = None,
        on_epoch_end: Callable[[int], None] | None = None,
    ) -> pd.DataFrame:
        """Train for ``config.epochs`` epochs; returns the per-step loss log."""
        from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

        if len(data) == 0:
            raise BiaslensError("no training examples")
        config, model = self.config, self.lm.model
        progress = progress or NoProgress()
        torch.manual_seed(config.seed)
        encoded = self.encode(data.examples)
        encoded_qa = self.encode_qa(qa) if qa is not None and len(qa) else _Encoded([], [])
        steps_per_epoch = math.ceil(len(data) / config.batch_size)  # as balanced_order cuts
        total = steps_per_epoch * config.epochs
        optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad],
            lr=config.learning_rate,
            weight_decay=config.weight_decay,
        )
        warmup = math.floor(config.warmup_ratio * total)
        scheduler = (
            get_linear_schedule_with_warmup(optimizer, warmup, total)
            if config.schedule == "linear"
            else get_constant_schedule_with_warmup(optimizer, warmup)
        )
        weights = config.weights.model_dump()
        tick = progress.task(f"LEI fine-tuning ({self.lm.identity.name})", total)
        log = []
        model.train()
        try:
            for epoch in range(config.epochs):
                for step, (batch, qa_batch) in enumerate(
                    self.epoch_batches(data, len(encoded_qa.ids), epoch)
                ):
                    with self._forward_precision():
                        losses = self.intervention_losses(data, encoded, batch)
                        if len(qa_batch):
                            losses["qa"] = self.qa_losses(encoded_qa, qa_batch).mean()
                    loss = sum(weights[name] * value for name, value in losses.items())
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    log.append(
                        {
                            "epoch": epoch + 1,
                            "step": epoch * steps_per_epoch + step + 1,
                            "loss": float(loss.detach()),
                            "lr": scheduler.get_last_lr()[0],
                            **{f"loss_{k}": float(v.detach()) for k, v in losses.items()},
                        }
                    )
                    tick(1)
                if on_epoch_end is not None:
                    on_epoch_end(epoch + 1)
        finally:
            model.eval()
        return pd.DataFrame(log)
