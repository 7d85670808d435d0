"""``load_model(name, config)``: a registered name, a hub name or a local folder, loaded on the
backend ``config`` chooses (and inside the wrappers its options switch on, such as model
replicas); what a multi-model run checks of each model before the first one loads."""

from __future__ import annotations

from biaslens.errors import BiaslensError
from biaslens.models.base import LM
from biaslens.models.checkpoints.local import locate_model, weight_files
from biaslens.models.config import BackendConfig
from biaslens.models.registry import (
    RegisteredModel,
    get_backend,
    registered_model,
    resolve_name,
    wrappers,
)


def load_model(name: str, config: BackendConfig | None = None, backend: str | None = None) -> LM:
    """Load a registered name (``default``), a hub name or a local path on a backend
    (``config.backend``, or ``backend`` if given; the default backend otherwise)."""
    config = config or BackendConfig()
    if backend is not None:
        config = config.with_options(backend=backend)
    spec = get_backend(config.backend)
    for wrapper in wrappers():
        option = wrapper.switch
        if getattr(config, option) != BackendConfig.default_of(option):
            return wrapper.load()(name, config, load_model)
    key = resolve_name(name)
    entry = registered_model(name)
    if entry is not None and not entry.answers_requests:
        raise BiaslensError(
            f"{key!r} is a {entry.kind} model; it serves similarity scoring, not LM requests"
        )
    loader = spec.load()
    if not spec.local:
        return loader(key, config)
    if entry is None:
        return loader(name, config)
    _check_no_revision(key, entry, config)
    return loader(str(entry.folder(config.offline)), config, display_name=key)


def _check_no_revision(key: str, entry: RegisteredModel, config: BackendConfig) -> None:
    if config.revision is not None:
        where = f"; name {entry.hub_repo} with --revision instead" if entry.hub_repo else ""
        raise BiaslensError(f"{key} is a registered model: --revision applies to hub names{where}")


def checkpoint_folder(name: str, config: BackendConfig):
    """The checkpoint folder of ``name`` for a backend that loads one (None for a served
    model): a registered model's, else a local or hub one, checked without loading it."""
    if not get_backend(config.backend).local:
        return None
    entry = registered_model(name)
    if entry is not None:
        _check_no_revision(resolve_name(name), entry, config)
        return entry.folder(config.offline)
    return locate_model(name, config.revision, config.offline, config.model_kind)[0]


def check_loadable(name: str, config: BackendConfig | None = None) -> None:
    """Check, without loading weights, that ``name`` can be loaded on ``config``'s backend:
    a registered name, or a local model folder for the backends that load one (a served
    model is the server's to check). A one-line error names what is wrong."""
    config = config or BackendConfig()
    entry = registered_model(name)
    if entry is not None and get_backend(config.backend).local:
        _check_no_revision(resolve_name(name), entry, config)  # its folder is made on load
        return
    checkpoint_folder(name, config)


def weight_bytes(name: str, config: BackendConfig) -> int | None:
    """The size of the weight files of a model loaded in process (None for a served one): a
    lower bound of the memory each of its replicas holds."""
    folder = checkpoint_folder(name, config)
    return None if folder is None else sum(path.stat().st_size for path in weight_files(folder))
