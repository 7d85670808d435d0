"""The transformers backend (``--backend hf``, the default): masked, causal, seq2seq and
extractive-QA models in process. :func:`load_hf` loads one; :class:`HFBackend` answers
requests with it."""

from biaslens.models.hf.backend import HFBackend, load_hf

__all__ = ["HFBackend", "load_hf"]
