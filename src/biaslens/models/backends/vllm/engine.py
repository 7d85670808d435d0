"""The vLLM backend (``--backend vllm``): a causal model in an in-process ``vllm.LLM`` engine.

Every request type of a causal model is answered exactly (see
:mod:`biaslens.models.runtime.served`):

* next-token top-k: ``SamplingParams(max_tokens=1, logprobs=k)``;
* exact log-probabilities of given next tokens: ``logprob_token_ids`` (up to 128 ids a call),
  which reads the same cached prompt prefix (prefix caching on) instead of re-running it;
* greedy decoding: ``temperature=0`` with ``logprobs=k`` at every step.

Masked, seq2seq and extractive-QA models stay on the transformers backend. The engine is
created in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0`` unless set): vLLM's worker
processes are then not spawned, so it also works from scripts without a ``__main__`` guard.
On CPU the engine runs eagerly (``enforce_eager``): torch.compile's warm-up costs more than it
saves on the short runs of an audit. ``VLLM_CPU_KVCACHE_SPACE`` (GiB) bounds its memory.
"""

from __future__ import annotations

import os
from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.models.base import ModelIdentity, ModelKind
from biaslens.models.checkpoints.local import (
    TOKENIZER_FILES,
    detect_kind,
    model_fingerprint,
    model_source,
    refuse_custom_code,
    weights_sha256,
)
from biaslens.models.checkpoints.reference import CheckpointRef
from biaslens.models.config import BackendConfig
from biaslens.models.runtime.served import TokenLevelBackend, TopK, model_eos_ids
from biaslens.models.runtime.tokenization import chat_identity, check_chat

MAX_IDS_PER_CALL = 128
"""vLLM's limit on ``logprob_token_ids`` per request."""
INSTALL_HINT = (
    "the vllm backend needs vLLM: `pip install 'biaslens[vllm]'` on a GPU machine, or "
    "`bash scripts/install.sh --vllm` for the CPU build (its own virtualenv, .venv-vllm)"
)


def _import_vllm():
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    # vLLM's CPU build drops to one thread unless told otherwise; use the machine
    os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    try:
        import vllm
        from vllm.inputs import TokensPrompt
    except ImportError as error:
        raise BiaslensError(f"{INSTALL_HINT} ({error})") from None
    except Exception as error:  # e.g. CUDA builds of torchvision beside a CPU torch
        raise BiaslensError(f"vLLM is installed but does not import: {error}") from None
    return vllm, TokensPrompt


class VLLMBackend(TokenLevelBackend):
    """Answers the requests of a causal model with an in-process vLLM engine."""

    chunk_size = 256

    def __init__(self, engine, tokenizer, identity: ModelIdentity, config: BackendConfig, folder):
        super().__init__(tokenizer, identity, config, model_eos_ids(folder))
        self.engine = engine
        vllm, self._prompt = _import_vllm()
        self._params = vllm.SamplingParams
        self.max_length = engine.llm_engine.model_config.max_model_len

    def _run(self, contexts: list[list[int]], params) -> list:
        prompts = [self._prompt(prompt_token_ids=list(c)) for c in contexts]
        return self.engine.generate(prompts, params, use_tqdm=False)

    def top_k(self, contexts, k) -> list[TopK]:
        if not contexts:
            return []
        params = self._params(max_tokens=1, temperature=0.0, logprobs=k, ignore_eos=True)
        tops = []
        for output in self._run(contexts, params):
            step = output.outputs[0].logprobs[0]
            ranked = sorted(step.items(), key=lambda item: (-item[1].logprob, item[0]))
            tops.append([(int(t), float(p.logprob)) for t, p in ranked[:k]])
        return tops

    def logprobs_of(self, contexts, token_ids) -> list[list[float]]:
        """One engine call: each context with its own ``logprob_token_ids`` (in slices of
        128); the contexts' shared prefixes come from the prefix cache."""
        rows, params = [], []
        for i, ids in enumerate(token_ids):
            for start in range(0, len(ids), MAX_IDS_PER_CALL):
                rows.append((i, ids[start : start + MAX_IDS_PER_CALL]))
                params.append(
                    self._params(
                        max_tokens=1,
                        temperature=0.0,
                        ignore_eos=True,
                        logprob_token_ids=list(ids[start : start + MAX_IDS_PER_CALL]),
                    )
                )
        results: list[list[float]] = [[] for _ in contexts]
        if not rows:
            return results
        outputs = self._run([contexts[i] for i, _ in rows], params)
        for (i, ids), output in zip(rows, outputs, strict=True):
            step = output.outputs[0].logprobs[0]
            results[i] += [float(step[t].logprob) for t in ids]
        return results

    def greedy(self, contexts, max_new_tokens, k):
        params = self._params(
            max_tokens=max_new_tokens, temperature=0.0, logprobs=k, ignore_eos=True
        )
        results = []
        for output in self._run(contexts, params):
            completion = output.outputs[0]
            steps = [
                [
                    (int(t), float(p.logprob))
                    for t, p in sorted(step.items(), key=lambda item: (-item[1].logprob, item[0]))[
                        :k
                    ]
                ]
                for step in completion.logprobs
            ]
            results.append((list(completion.token_ids), steps))
        return results

    def close(self) -> None:
        engine, self.engine = self.engine, None
        del engine


def load_vllm(checkpoint: CheckpointRef, config: BackendConfig | None = None):
    """Load the causal model at ``checkpoint`` (a local folder or hub snapshot) into a vLLM
    engine."""
    from transformers import AutoConfig

    config = config or BackendConfig(backend="vllm")
    vllm, _ = _import_vllm()
    settings = config.options
    folder = checkpoint.folder(settings.offline)
    refuse_custom_code(folder)
    try:
        kind = detect_kind(AutoConfig.from_pretrained(folder, trust_remote_code=False))
    except (OSError, ValueError) as error:
        raise BiaslensError(f"{folder}: cannot load the model config ({error})") from None
    if kind != ModelKind.CAUSAL:
        raise BiaslensError(
            f"the vllm backend serves causal LMs; {checkpoint.name} is a {kind.value} model: use "
            "the transformers backend (--backend hf)"
        )
    if not any((folder / n).is_file() for n in TOKENIZER_FILES):
        raise BiaslensError(f"{folder}: no tokenizer files; save the tokenizer next to the model")
    if settings.chat:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
        check_chat(tokenizer, kind, settings, checkpoint.name)
    device = "cpu" if settings.device in ("cpu",) else settings.device
    on_cpu = device == "cpu" or not _cuda_available()
    dtype = settings.dtype if settings.dtype != "auto" else ("float32" if on_cpu else "auto")
    options = {"enforce_eager": on_cpu, **settings.engine_options, "trust_remote_code": False}
    if settings.batch_size != "auto":
        options.setdefault("max_num_seqs", settings.batch_size)
    try:
        engine = vllm.LLM(
            model=str(folder),
            tokenizer=str(folder),
            dtype=dtype,
            enable_prefix_caching=True,
            max_logprobs=-1,
            seed=0,
            **options,
        )
    except Exception as error:
        raise BiaslensError(
            f"vLLM could not start {folder}: {type(error).__name__}: {error}"
        ) from None
    model_config = engine.llm_engine.model_config
    resolved = str(model_config.dtype).removeprefix("torch.")
    identity = ModelIdentity(
        name=checkpoint.name,
        kind=kind,
        fingerprint=model_fingerprint(Path(folder)),
        num_parameters=None,
        backend="vllm",
        numerics=(
            ("dtype", resolved),
            ("device_type", "cpu" if on_cpu else "cuda"),
            ("add_bos", str(settings.add_bos)),
            *chat_identity(settings),
        ),
        weights_sha256=weights_sha256(Path(folder)),
        details=(("vllm_version", vllm.__version__),),
        source=model_source(Path(folder), checkpoint),
    )
    return VLLMBackend(engine, engine.get_tokenizer(), identity, config, folder)


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False
