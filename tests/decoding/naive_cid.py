"""A deliberately simple CID reference: one example at a time, no cache, no padding.

At every step it runs the model on the full x + y and x' + y sequences separately and picks the
next token from Eq. 1 of the CID paper written out with plain Python over the top-K tokens.
"""

from __future__ import annotations

import math

import torch


def next_token_logprobs(model, prompt: list[int], generated: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        if model.config.is_encoder_decoder:
            start = model.config.decoder_start_token_id
            out = model(
                input_ids=torch.tensor([prompt]),
                decoder_input_ids=torch.tensor([[start, *generated]]),
            )
        else:
            out = model(input_ids=torch.tensor([prompt + generated]))
    return out.logits[0, -1].float().log_softmax(-1)


def naive_cid(
    model, x: list[int], x_prime: list[int], lam: float, top_k: int, steps: int, eos,
    generator: torch.Generator | None = None,
):  # fmt: skip
    """Greedy CID, or sampling at temperature 1 when ``generator`` is given."""
    generated: list[int] = []
    for _ in range(steps):
        lp_x = next_token_logprobs(model, x, generated)
        lp_xp = next_token_logprobs(model, x_prime, generated)
        candidates = set(lp_x.topk(top_k).indices.tolist())
        scores = torch.full_like(lp_x, -math.inf)
        best, best_score = None, -math.inf
        for w in sorted(candidates):
            p, p_prime = math.exp(lp_x[w].item()), math.exp(lp_xp[w].item())
            scores[w] = lam * (p - p_prime) + lp_x[w].item()  # log of exp(λΔ)·p
            if scores[w] > best_score:
                best, best_score = w, scores[w].item()
        if generator is not None:
            best = int(torch.multinomial(scores.softmax(-1), 1, generator=generator))
        generated.append(best)
        if best in eos:
            break
    return generated
