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
    yield  # the registry finds the real plug-ins again once plugins.load is itself again


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


def test_a_class_that_declares_what_it_lacks_is_refused_when_defined():
    """The contract on the class: declaring a request type without its method fails at the
    class statement, so a plug-in's module (its entry point) fails to import, in one line."""
    with pytest.raises(TypeError) as refused:

        class Lacks(LM):
            answers = frozenset({RequestType.GENERATE, RequestType.SAMPLE})

            def sample(self, requests, progress=None):
                return []

    assert str(refused.value).endswith("Lacks declares that it answers generate but does not "
                                       "implement it")  # fmt: skip
    with pytest.raises(TypeError, match=r"names unknown request types \['guess'\]"):

        class Unknown(LM):
            answers = frozenset({"guess"})

    class Whole(LM):
        answers = frozenset({RequestType.SAMPLE})

        def sample(self, requests, progress=None):
            return []

    assert Whole.answers == {RequestType.SAMPLE}


def test_every_built_in_backend_class_declares_what_it_implements():
    """Each built-in LM class declares its request types (inherited or its own), and the
    contract holds for each: defining it did not raise, and what it declares it implements."""
    import importlib

    from biaslens.models.base import unimplemented

    classes = {
        "biaslens.models.backends.hf.backend": "HFBackend",
        "biaslens.models.backends.openai.completions": "OpenAIBackend",
        "biaslens.models.backends.openai.chat": "ChatEndpointBackend",
        "biaslens.models.runtime.forwarding": "ForwardingLM",
    }
    for module, name in classes.items():
        cls = getattr(importlib.import_module(module), name)
        assert cls.answers and unimplemented(cls, cls.answers) == [], name
    assert (
        RequestType.SAMPLE
        not in importlib.import_module("biaslens.models.backends.hf.backend").HFBackend.answers
    )


BROKEN_BACKEND = """
from biaslens.models.base import LM
from biaslens.models.options import BackendOptions
from biaslens.models.registry import RegisteredBackend
from biaslens.models.requests import RequestType


class HalfDone(LM):
    answers = frozenset({RequestType.GENERATE, RequestType.SAMPLE})

    def sample(self, requests, progress=None):
        return []


BACKEND = RegisteredBackend("half-done", "contract_plugin:HalfDone", "declares more than it does",
                            local=False, options=BackendOptions)
"""


def test_a_plugin_backend_that_lacks_a_declared_method_is_refused_at_registration(
    tmp_path, monkeypatch, capsys
):
    """Installed as a user installs a plug-in (an entry point in a distribution's metadata):
    the registry refuses it when it loads the entry point, in one line naming the class and
    what it lacks, and every other backend works."""
    from biaslens.models.registry import backends, get_backend

    (tmp_path / "contract_plugin.py").write_text(BROKEN_BACKEND)
    info = tmp_path / "contract_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: contract-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[biaslens.backends]\nhalf-done = contract_plugin:BACKEND\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.refresh()
    try:
        assert "half-done" not in backends() and "hf" in backends()
        warned = [line for line in capsys.readouterr().err.splitlines() if "half-done" in line]
        assert len(warned) == 1
        assert "contract_plugin.HalfDone declares that it answers generate but does not " \
               "implement it" in warned[0]  # fmt: skip
        with pytest.raises(BiaslensError, match="could not be loaded: TypeError: contract_plugin"):
            get_backend("half-done")
    finally:
        monkeypatch.undo()
        plugins.refresh()
