"""Helpers for testing a method or a backend of one's own, offline (``docs/development.md``,
"Testing a plug-in").

- :mod:`.tiny_models`: tiny random BERT-MLM, RoBERTa-QA/MLM, BART, T5, Llama and GPT-2
  checkpoints with a tokenizer trained on the spot over the probes' sentences, built in a
  second and loaded like any model (``biaslens.testing.tiny_models.build(name, folder)``);
  their numbers mean nothing, their shapes and code paths are real.
- :mod:`.fake_server`: an OpenAI-compatible server around a transformers causal model,
  answering with log-probabilities from a real forward pass (``create_app``, ``serve``);
  :class:`~.fake_faults.Faults` breaks its protocol on purpose (shifted log-probabilities,
  none at all, an API key asked for, replies dressed in markdown).

biaslens's own test machinery (a hub-compatible server, a fault-injecting proxy) is not
shipped: it lives in the repository's ``tests/support/``.
"""
