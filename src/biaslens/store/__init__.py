"""Run store: run directories, the request cache and the result of a run."""

from biaslens.store.cache import CachedLM, RequestCache
from biaslens.store.result import RunResult
from biaslens.store.run import RunStore, dataset_hash

__all__ = ["CachedLM", "RequestCache", "RunResult", "RunStore", "dataset_hash"]
