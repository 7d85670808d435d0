"""``load_model(name, config)``: a registered name, a hub name or a local folder, loaded on the
backend ``config`` chooses (and inside the wrappers its options switch on, such as model
replicas); what a multi-model run checks of each model before the first one loads."""

from __future__ import annotations

from biaslens.errors import BiaslensError
from biaslens.models.base import LM, unimplemented
from biaslens.models.checkpoints.local import locate_model, weight_files
from biaslens.models.checkpoints.reference import CheckpointRef, checkpoint_ref
from biaslens.models.checkpoints.registered import (
    RegisteredModel,
    registered_model,
    resolve_name,
)
from biaslens.models.config import BackendConfig
from biaslens.models.options import Checkpoint, model_kind_of
from biaslens.models.registry import get_backend, wrappers


def load_model(name: str, config: BackendConfig | None = None, backend: str | None = None) -> LM:
    """Load a registered name (``default``), a hub name or a local path on a backend
    (``config.backend``, or ``backend`` if given; the default backend otherwise)."""
    config = config or BackendConfig()
    if backend is not None:
        config = config.with_options(backend=backend)
    spec = get_backend(config.backend)
    for wrapper in wrappers():
        if wrapper.switch in config.given():
            return wrapper.load()(name, config, load_model)
    entry = registered_model(name)
    if entry is not None and not entry.answers_requests:
        raise BiaslensError(
            f"{resolve_name(name)!r} is a {entry.kind} model; it serves similarity scoring, "
            "not LM requests"
        )
    loader = spec.load()
    if not spec.local:
        return checked_contract(spec.name, loader(resolve_name(name), config))
    return checked_contract(spec.name, loader(checkpoint_of(name, config.options), config))


def checked_contract(backend: str, lm: LM) -> LM:
    """``lm`` if it is an :class:`LM` that implements every request type it declares it
    answers; else it is closed and the backend refused in one line, before any request
    (a backend's capabilities depend on the model it loaded: a masked LM answers other
    requests than a causal one, so they are checked here, not when the backend registers)."""
    if not isinstance(lm, LM):
        raise BiaslensError(
            f"the {backend} backend's loader returned {type(lm).__name__}, not a biaslens LM"
        )
    lacking = unimplemented(type(lm), lm.capabilities)
    if lacking:
        close = getattr(lm, "close", None)
        if callable(close):
            close()
        raise BiaslensError(
            f"the {backend} backend's {type(lm).__name__} declares that it answers "
            f"{', '.join(lacking)} but does not implement {'it' if len(lacking) == 1 else 'them'}"
            "; the backend cannot be used until it does"
        )
    return lm


def checkpoint_of(name: str, options: Checkpoint) -> CheckpointRef:
    """The checkpoint ``name`` names, resolved once with ``--revision``: a registered model's
    folder (made or fetched now; a registered model takes no revision), else a local folder
    or a hub name (:func:`~biaslens.models.checkpoints.reference.checkpoint_ref`)."""
    entry = registered_model(name)
    if entry is None:
        return checkpoint_ref(name, options.revision)
    key = resolve_name(name)
    _check_no_revision(key, entry, options)
    return CheckpointRef.at(entry.folder(options.offline), key)


def _check_no_revision(key: str, entry: RegisteredModel, options: Checkpoint) -> None:
    if options.revision is not None:
        where = f"; name {entry.hub_repo} with --revision instead" if entry.hub_repo else ""
        raise BiaslensError(f"{key} is a registered model: --revision applies to hub names{where}")


def checkpoint_folder(name: str, config: BackendConfig):
    """The checkpoint folder of ``name`` for a backend that loads one (None for a served
    model): a registered model's, else a local or hub one, checked without loading it."""
    if not get_backend(config.backend).local:
        return None
    ref = checkpoint_of(name, config.options)
    if registered_model(name) is not None:
        return ref.path
    return locate_model(ref, config.options.offline, model_kind_of(config.options))[0]


def check_loadable(name: str, config: BackendConfig | None = None) -> None:
    """Check, without loading weights, that ``name`` can be loaded on ``config``'s backend:
    a registered name, or a local model folder for the backends that load one (a served
    model is the server's to check). A one-line error names what is wrong."""
    config = config or BackendConfig()
    entry = registered_model(name)
    if entry is not None and get_backend(config.backend).local:
        _check_no_revision(resolve_name(name), entry, config.options)  # its folder: on load
        return
    checkpoint_folder(name, config)


def weight_bytes(name: str, config: BackendConfig) -> int | None:
    """The size of the weight files of a model loaded in process (None for a served one): a
    lower bound of the memory each of its replicas holds."""
    folder = checkpoint_folder(name, config)
    return None if folder is None else sum(path.stat().st_size for path in weight_files(folder))
