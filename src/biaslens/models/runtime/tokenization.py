"""Prompt tokenization shared by every backend that tokenizes locally (``hf``, ``vllm``,
``openai``), so that all of them send the model the same token ids."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from biaslens.errors import BiaslensError
from biaslens.models.base import ModelKind
from biaslens.models.options import Prompts
from biaslens.models.requests import RequestType


def encode_causal_prompts(
    tokenizer, texts: Sequence[str], add_bos: bool | None, prompts: Prompts | None = None
) -> list[list[int]]:
    """Prompt ids in one batched tokenizer call: the tokenizer's own special tokens
    (``add_bos=None``), or a forced (``True``) / suppressed (``False``) BOS. With
    ``prompts.chat`` (the backend's :class:`~biaslens.models.options.Prompts` options), each
    text is first put in the chat template (:func:`chat_texts`), which writes its own special
    tokens."""
    texts = list(texts)
    if not texts:
        return []
    if prompts is not None and prompts.chat:
        return tokenizer(chat_texts(tokenizer, texts, prompts.system), add_special_tokens=False)[
            "input_ids"
        ]
    if add_bos is None:
        return tokenizer(texts)["input_ids"]
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    if not add_bos or bos is None:
        return encoded
    return [ids if ids and ids[0] == bos else [bos, *ids] for ids in encoded]


def chat_texts(tokenizer, texts: Sequence[str], system: str = "") -> list[str]:
    """Each text as a user message (after ``system``, if given) in the tokenizer's chat
    template, the assistant's turn opened: what a chat model reads before it answers."""
    before = [{"role": "system", "content": system}] if system else []
    try:
        return [
            tokenizer.apply_chat_template(
                [*before, {"role": "user", "content": text}],
                add_generation_prompt=True,
                tokenize=False,
            )
            for text in texts
        ]
    except Exception as error:  # noqa: BLE001 - a template's own error (jinja2, its sandbox)
        raise BiaslensError(template_refusal(tokenizer, error, bool(system))) from None


def template_refusal(tokenizer, error: BaseException, system: bool) -> str:
    """One line: which chat template refused, and what it said (a template that raises, such as
    Gemma's on a system message, or one its sandbox stopped)."""
    name = getattr(tokenizer, "name_or_path", "") or "the model"
    said = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    kind = type(error).__name__
    hint = " (it may not take a system message: drop --system)" if system else ""
    return f"{name}: its chat template refused the prompt{hint}: {kind}: {said}".rstrip(": ")


def check_chat(tokenizer, kind, prompts: Prompts, name: str) -> None:
    """``--chat`` needs a causal model whose tokenizer has a chat template; else one line
    saying so."""
    if not prompts.chat:
        return
    if kind != ModelKind.CAUSAL:
        raise BiaslensError(
            f"--chat applies to causal chat models; {name!r} is a {kind.value} model"
        )
    if tokenizer is None:
        raise BiaslensError(
            "--endpoint completions with --chat needs the model's tokenizer (--tokenizer "
            "FOLDER): the prompts are put in its chat template here and sent as token ids; "
            "--endpoint chat sends them as chat messages instead"
        )
    if not getattr(tokenizer, "chat_template", None):
        raise BiaslensError(
            f"{name!r} has no chat template (no chat_template in its tokenizer files): --chat "
            "needs an instruct or chat model"
        )
    chat_texts(tokenizer, ["A question."], prompts.system)  # a template that refuses: said now


def chat_identity(prompts: Prompts) -> tuple[tuple[str, str], ...]:
    """What chat formatting adds to a model's identity (and so to every cache key)."""
    if not prompts.chat:
        return ()
    return (("chat", "template"), *((("system", prompts.system),) if prompts.system else ()))


def fit_left(
    sequences: list[list[int]],
    reserve: int,
    request_type: RequestType,
    max_length: int | None,
    bos: int | None,
    model_name: str,
) -> list[list[int]]:
    """Inputs cut from the left so that each leaves ``reserve`` positions of the model's
    context (``max_length``; ``None``: unbounded) for what follows it (continuation tokens,
    generated tokens); a leading ``bos`` is kept. One warning counts the inputs that were cut."""
    if max_length is None:
        return sequences
    limit = max_length - reserve
    if limit < 2:
        raise BiaslensError(
            f"{request_type.value}: {reserve} tokens of continuation or generation leave no "
            f"room for the input in the model's context of {max_length} tokens"
        )
    fitted, cut = [], 0
    for ids in sequences:
        if len(ids) <= limit:
            fitted.append(ids)
            continue
        cut += 1
        keep_bos = bos is not None and ids[0] == bos
        fitted.append([ids[0], *ids[len(ids) - limit + 1 :]] if keep_bos else ids[-limit:])
    if cut:
        warnings.warn(
            f"{cut} of {len(sequences)} {request_type.value} inputs are longer than the "
            f"{model_name} context of {max_length} tokens (minus {reserve} for "
            "the continuation) and were truncated from the left",
            stacklevel=4,  # the caller of the backend's fit_left
        )
    return fitted


class LocalTokenizer:
    """Tokenizer-side methods of a backend that holds the model's tokenizer (``tokenizer``), its
    context length (``max_length``; ``None``: unbounded) and ``identity``."""

    tokenizer: object
    max_length: int | None
    _decoded: dict[int, str]

    def encode_continuation(self, text: str) -> list[int]:
        """Ids of a continuation, without special tokens."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode_token(self, token_id: int) -> str:
        """One token's text (memoized: the same ids recur in every top-k)."""
        text = self._decoded.get(token_id)
        if text is None:
            text = self._decoded[token_id] = self.tokenizer.decode([token_id])
        return text

    def fit_left(
        self, sequences: list[list[int]], reserve: int, request_type: RequestType
    ) -> list[list[int]]:
        """Inputs cut from the left to leave ``reserve`` positions (:func:`fit_left`)."""
        return fit_left(
            sequences,
            reserve,
            request_type,
            self.max_length,
            self.tokenizer.bos_token_id,
            self.identity.name,
        )

    def encode_with_targets(self, requests) -> tuple[list[list[int]], dict[str, list[int]]]:
        """For next-token requests with target words: prompt ids cut from the left to leave
        room for the longest target, and each target's ids (a target that tokenizes to nothing
        is refused)."""
        distinct = dict.fromkeys(t for r in requests for t in r.targets)  # each encoded once
        targets = {t: self.encode_continuation(t) for t in distinct}
        empty = sorted(t for t, ids in targets.items() if not ids)
        if empty:
            raise BiaslensError(f"target words that tokenize to nothing: {empty}")
        longest = max((len(ids) for ids in targets.values()), default=1)
        prompts = self.encode_prompts([r.text for r in requests])
        return self.fit_left(prompts, longest - 1, RequestType.TOKEN_DISTRIBUTION), targets
