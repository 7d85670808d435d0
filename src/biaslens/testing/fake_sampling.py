"""The fake server's sampled replies (temperature above 0): ``n`` replies drawn from the model,
no log-probabilities, with the sampling faults of :class:`~.fake_faults.Faults`."""

from __future__ import annotations

import time

import torch

from biaslens.testing.fake_faults import Faults, logprobs_rows


def sampled_texts(model, tokenizer, context: list[int], body: dict, n: int) -> list[str]:
    """``n`` replies to ``context``, each token drawn from softmax(logits / temperature) cut to
    the smallest set holding ``top_p`` of it, with a generator seeded by ``seed``."""
    temperature = float(body["temperature"])
    top_p = float(body.get("top_p") or 1.0)
    seed = body.get("seed")
    generator = torch.Generator().manual_seed(int(seed) if seed is not None else time.time_ns())
    texts = []
    for _ in range(n):
        reply = list(context)
        for _ in range(int(body.get("max_tokens", 16))):
            probs = (logprobs_rows(model, reply)[-1] / temperature).softmax(-1).double()
            if top_p < 1.0:
                ordered, order = probs.sort(descending=True)
                outside = ordered.cumsum(0) - ordered >= top_p
                probs[order[outside]] = 0.0
            token = int(torch.multinomial(probs, 1, generator=generator))
            reply.append(token)
            if token == tokenizer.eos_token_id:
                break
        texts.append(tokenizer.decode(reply[len(context) :], skip_special_tokens=True))
    return texts


def dressed(text: str, index: int, style: str) -> str:
    """``text`` as :attr:`Faults.reply_style` dresses the ``index``-th reply."""
    if style == "plain" or (style.endswith("-half") and index % 2):
        return text
    lead = len(text) - len(text.lstrip())
    word, _, rest = text[lead:].partition(" ")
    if style in ("bold", "bold-half"):
        return f"{text[:lead]}**{word}** {rest}" if word else text
    if style == "quoted":
        return f'{text[:lead]}"{word}" {rest}' if word else text
    return f"Answer: {text}"


def chat_sample(model, tokenizer, context: list[int], body: dict, faults: Faults) -> dict:
    """``n`` replies drawn from the model (:func:`sampled_texts`); no log-probabilities."""
    n = 1 if faults.sampling == "one" else int(body.get("n") or 1)
    n += 2 if faults.sampling == "more" else 0
    if faults.sampling == "ignore-seed":
        body = {k: v for k, v in body.items() if k != "seed"}
    choices = []
    for index, text in enumerate(sampled_texts(model, tokenizer, context, body, n)):
        message = {"role": "assistant", "content": dressed(text, index, faults.reply_style)}
        finish = "length"
        if faults.sampling == "refuse-odd" and index % 2:
            message = {"role": "assistant", "content": None, "refusal": "I can't."}
        if faults.sampling == "filter-odd" and index % 2:
            message, finish = {"role": "assistant", "content": "she [filtered]"}, "content_filter"
        choices.append(
            {"index": index, "message": message, "logprobs": None, "finish_reason": finish}
        )
    served = body.get("model")
    if faults.served_model is not None and len(faults.requests) > faults.served_after:
        served = faults.served_model
    return {"object": "chat.completion", "model": served, "choices": choices}


def complete_sampled(model, tokenizer, body: dict, faults: Faults) -> dict:
    """``/v1/completions`` at a temperature above 0: ``n`` drawn replies per prompt."""
    prompts = body["prompt"]
    if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
        prompts = [prompts]
    n = 1 if faults.sampling == "one" else int(body.get("n") or 1)
    choices = []
    for prompt in prompts:
        ids = tokenizer(prompt)["input_ids"] if isinstance(prompt, str) else list(prompt)
        for index, text in enumerate(sampled_texts(model, tokenizer, ids, body, n)):
            text = dressed(text, index, faults.reply_style)
            choices.append(
                {"index": len(choices), "text": text, "logprobs": None, "finish_reason": "length"}
            )
    return {"object": "text_completion", "model": body.get("model"), "choices": choices}
