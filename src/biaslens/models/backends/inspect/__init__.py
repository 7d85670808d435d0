"""Any provider inspect_ai's model layer reaches (``--backend inspect``, extra
``biaslens[inspect]``): Anthropic, Google, OpenAI, Bedrock, Azure, Together, vLLM, any
OpenAI-compatible server (``openai-api/<service>/<model>``) and inspect's ``mockllm``, with
inspect's connection limit, retries and batch mode (``--batch``). The model is asked as a chat
model (:mod:`.backend`), through :mod:`.client`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from biaslens.errors import BiaslensError
from biaslens.models.options import BackendOptions, OptionRules, Prompts, Served
from biaslens.models.registry import RegisteredBackend


def _batch(value: Any) -> int:
    """``--batch``: off (0), on (inspect's batch size), or the fewest requests per batch."""
    if value in (True, "on", "true"):
        return 100
    if value in (False, None, "off", "false"):
        return 0
    try:
        size = int(value)
    except (TypeError, ValueError):
        size = -1
    if isinstance(value, bool) or size < 0:
        raise BiaslensError(
            f"--batch takes on, off or a number of requests per batch, got {value!r}"
        )
    return size


def _model_args(value: Any) -> dict:
    if not isinstance(value, dict):
        raise BiaslensError(f"model_args takes a dict of inspect model arguments, got {value!r}")
    return dict(value)


def shown_arguments(arguments: dict) -> dict[str, str]:
    """Model arguments as a run records them and the model's identity reads them."""
    return {str(k): repr(v) for k, v in sorted(arguments.items(), key=lambda kv: str(kv[0]))}


class InspectOptions(Prompts, Served, BackendOptions):
    """The inspect backend's options: where and how hard the provider is asked
    (:class:`Served`), causal chat prompts, batch mode and inspect's model arguments."""

    batch: Annotated[int | str, OptionRules(parse=_batch, record="set", compare=False)] = Field(
        0,
        description="inspect backend: send requests through the provider's batch API (OpenAI, "
        "Anthropic, Google, Together: about half the price, answers within hours): on, or the "
        "fewest requests per batch; off by default.",
    )
    model_args: Annotated[
        dict[str, Any],
        OptionRules(parse=_model_args, cli=False, recorded_as=shown_arguments),
    ] = Field(
        default_factory=dict,
        description="inspect backend: provider arguments passed to inspect's get_model (as "
        "its -M options); part of the model's identity.",
    )

    @model_validator(mode="before")
    @classmethod
    def _asked_as_a_chat_model(cls, values: Any) -> Any:
        """inspect asks every model with chat messages: each prompt is a user message (after
        ``--system``), as ``--chat`` says; ``chat=False`` cannot be honoured."""
        if isinstance(values, dict):
            if values.get("chat") is False:
                raise BiaslensError(
                    "--backend inspect sends every prompt as a chat message: it cannot run "
                    "without --chat (the openai backend's completions endpoint can)"
                )
            values = {**values, "chat": True}
        return values


BACKEND = RegisteredBackend(
    "inspect",
    "biaslens.models.backends.inspect.backend:load_inspect",
    "any provider of inspect_ai's model layer: anthropic/…, google/…, openai/…, "
    "openai-api/<service>/<model> with --base-url",
    local=False,
    summary="a model of inspect_ai's providers, named provider/model",
    options=InspectOptions,
    planner="biaslens.models.backends.inspect.backend:plan_inspect",
    packages=("inspect_ai",),
)
