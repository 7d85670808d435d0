"""The built-in backends, one package each: ``hf`` (transformers), ``vllm`` (a vLLM engine in
process), ``openai`` (an OpenAI-compatible server) and ``replicated`` (model replicas on Ray,
around any of them).

A package's ``__init__`` declares its backend (``BACKEND``, a
:class:`~biaslens.models.registry.RegisteredBackend`: its loader, its options, what ``--dry-run``
knows of a model) and imports nothing heavy; the registry finds every sub-package here. A
backend of one's own is the same declaration in one's own package, found through a
``biaslens.backends`` entry point.
"""
