"""The backend contract: a backend whose model declares a request type it does not implement
is refused in one line when it loads, before any request, and the model it loaded is closed.
The plug-in backend here is registered as an entry point would register it."""

from __future__ import annotations

import pytest

from biaslens.common import plugins
from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.base import LM, Exactness, ModelIdentity, ModelKind
from biaslens.models.options import BackendOptions
from biaslens.models.registry import RegisteredBackend
from biaslens.models.requests import RequestType

CLOSED: list[str] = []


class Declares(LM):
    """Says it answers generate and sample requests; implements only ``sample``."""

    def __init__(self, name: str) -> None:
        self.identity = ModelIdentity(name, ModelKind.CAUSAL, "0" * 64, backend="broken")

    @property
    def capabilities(self):
        return {RequestType.GENERATE: Exactness.EXACT, RequestType.SAMPLE: Exactness.EXACT}

    def sample(self, requests, progress=None):
        return []

    def close(self) -> None:
        CLOSED.append(self.identity.name)


class Keeps(Declares):
    """The same, with ``generate`` too: the contract holds."""

    def generate(self, requests, progress=None):
        return []


def load_broken(name, config):
    return Declares(name)


def load_whole(name, config):
    return Keeps(name)


def load_other(name, config):
    return object()


@pytest.fixture
def plugin_backends(monkeypatch):
    entries = {
        name: RegisteredBackend(name, f"{__name__}:{loader}", "a test backend", local=False,
                                options=BackendOptions)
        for name, loader in (("broken", "load_broken"), ("whole", "load_whole"),
                             ("other", "load_other"))
    }  # fmt: skip
    monkeypatch.setattr(plugins, "load", lambda group: entries if group == plugins.BACKENDS else {})
    monkeypatch.setattr(plugins, "failures", lambda group: {})
    yield
    from biaslens.models import registry

    registry._FOUND[:] = [None, None]


def test_a_backend_that_lacks_a_declared_request_type_is_refused_at_load(plugin_backends):
    CLOSED.clear()
    with pytest.raises(BiaslensError) as refused:
        load_model("m", BackendConfig(backend="broken"))
    message = str(refused.value)
    assert "broken backend's Declares declares that it answers" in message
    assert "generate" in message and "sample" not in message.split("answers")[1].split(" but")[0]
    assert "\n" not in message and CLOSED == ["m"]


def test_a_backend_that_keeps_the_contract_loads(plugin_backends):
    lm = load_model("m", BackendConfig(backend="whole"))
    assert isinstance(lm, Keeps)


def test_a_loader_that_returns_no_lm_is_refused(plugin_backends):
    with pytest.raises(BiaslensError, match="returned object, not a biaslens LM"):
        load_model("m", BackendConfig(backend="other"))
