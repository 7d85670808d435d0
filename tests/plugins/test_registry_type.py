"""The one registry type: lazy entries imported and type-checked when first used, a name
registered twice refused, a frozen registry closed, and one registry per kind of entry."""

from __future__ import annotations

import pytest

from biaslens.common.registry import Registry


class Entry:
    def __init__(self, name: str) -> None:
        self.name = name


LAZY = Entry("lazy")


def test_a_lazy_entry_is_imported_and_checked_when_first_asked_for():
    registry: Registry[Entry] = Registry("widget", Entry)
    registry.register("lazy", f"{__name__}:LAZY")
    registry.register(
        "wrong", f"{__name__}:test_a_lazy_entry_is_imported_and_checked_when_first_asked_for"
    )
    assert "lazy" in registry and registry.names() == ("lazy", "wrong")
    assert registry.get("lazy") is LAZY
    with pytest.raises(ValueError, match="widget 'wrong' must be a Entry, not function"):
        registry.get("wrong")


def test_a_name_registered_twice_and_a_frozen_registry_are_refused():
    registry: Registry[Entry] = Registry(
        "widget", Entry, check=lambda name, e: None if name == e.name else "misnamed"
    )
    first = registry.register("a", Entry("a"))
    assert registry.register("a", first) is first  # the same object again: not twice
    with pytest.raises(ValueError, match="widget 'a' registered twice"):
        registry.register("a", Entry("a"))
    with pytest.raises(ValueError, match="widget 'b': misnamed"):
        registry.register("b", Entry("c"))
    with pytest.raises(ValueError, match="must be a Entry, not int"):
        registry.register("n", 3)
    registry.freeze()
    with pytest.raises(ValueError, match="frozen"):
        registry.register("d", Entry("d"))
    assert registry.names() == ("a",)


def test_methods_backends_models_and_request_types_share_the_type():
    from biaslens.framework.registry import METHODS, methods
    from biaslens.models.checkpoints.registered import MODELS
    from biaslens.models.registry import BACKENDS, backends
    from biaslens.models.requests import REQUESTS, RequestType

    methods(), backends()
    for registry in (METHODS, BACKENDS, MODELS, REQUESTS):
        assert type(registry) is Registry and len(registry) > 0
    assert set(REQUESTS) == {t.value for t in RequestType}
    assert "hf" in BACKENDS and "sib-mgc" in METHODS and "smollm2-135m-instruct" in MODELS
    with pytest.raises(ValueError, match="frozen"):
        REQUESTS.register("guess", dict)


def test_a_plugin_that_registers_itself_on_import_is_kept_without_a_warning(monkeypatch):
    """A plug-in module whose import registers its entry under the entry point's own name (as
    a method plug-in does) is a plug-in, not a clash with a built-in; a plug-in under a
    built-in's name is still refused."""
    from biaslens.common import plugins

    registry: Registry[Entry] = Registry("widget", Entry, group="biaslens.widgets")
    built_in = registry.register("core", Entry("core"))
    module = object()

    def load(group):
        if "mine" not in registry:  # the plug-in's import
            registry.register("mine", Entry("mine"))
        return {"mine": module, "core": Entry("core")}

    refused = []
    monkeypatch.setattr(plugins, "load", load)
    monkeypatch.setattr(plugins, "refuse", lambda group, name, why: refused.append((name, why)))
    registry.load_plugins(accept=lambda _, v: v if isinstance(v, Entry) else None)
    assert "mine" in registry and registry.get("core") is built_in
    assert refused == [("core", "it takes a built-in widget's name 'core': it is not used")]
