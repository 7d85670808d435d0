"""Backend options as typed models: each backend's model is made of the shared groups and its
own fields, a value is parsed once by its field, a check across options is the model's, and a
run records the options from the model."""

from __future__ import annotations

import pickle
from typing import Annotated

import pytest
from pydantic import Field

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig
from biaslens.models import options as groups
from biaslens.models.registry import RegisteredBackend, _unfit


def test_each_backend_reads_a_typed_model_of_the_groups_it_takes():
    hf = BackendConfig(device="cpu", batch_size="8", revision="v1").options
    assert isinstance(hf, groups.InProcess | groups.Checkpoint | groups.Prompts)
    assert (hf.device, hf.batch_size, hf.revision, hf.model_kind) == ("cpu", 8, "v1", "auto")
    served = BackendConfig(backend="openai", base_url="http://h/v1", concurrency="3").options
    assert isinstance(served, groups.Prompts) and isinstance(served, groups.HubAccess)
    assert not isinstance(served, groups.InProcess) and not hasattr(served, "batch_size")
    assert served.concurrency == 3 and served.max_requests is None
    with pytest.raises(Exception, match="frozen"):
        hf.device = "cuda"  # type: ignore[misc]


def test_a_value_is_parsed_once_by_its_field(monkeypatch):
    seen = []
    parse = groups.parse_batch_size
    monkeypatch.setattr(groups, "parse_batch_size", lambda v: seen.append(v) or parse(v))
    config = BackendConfig(batch_size="16")
    assert config.options.batch_size == 16 and seen == ["16"]
    with pytest.raises(BiaslensError, match="--batch-size must be >= 1, got 0"):
        BackendConfig(batch_size=0)


def test_checks_across_options_belong_to_the_model():
    with pytest.raises(BiaslensError, match="--system is a chat message: it needs --chat"):
        BackendConfig(system="Be brief.")
    assert BackendConfig(chat=True, system="Be brief.").options.system == "Be brief."
    with pytest.raises(BiaslensError, match="--endpoint chat .* needs --chat"):
        BackendConfig(backend="openai", endpoint="chat")


def test_the_run_records_what_the_fields_rules_say():
    config = BackendConfig(backend="openai", base_url="https://user:s3cret@h/v1", chat=True)
    recorded = config.describe()
    assert recorded["base_url"] == "https://***@h/v1" and "s3cret" not in repr(recorded)
    assert "offline" not in recorded  # kept only when set
    assert BackendConfig(backend="openai", offline=True).describe()["offline"] is True
    assert "engine_options" not in BackendConfig(backend="vllm").describe()  # never recorded


def test_a_config_is_rebuilt_equal_and_unknown_or_foreign_options_are_refused():
    config = BackendConfig(device="cpu", data_parallel=2, chat=True)
    assert pickle.loads(pickle.dumps(config)) == config
    assert config.to_dict() == {"backend": "hf", "device": "cpu", "chat": True, "data_parallel": 2}
    with pytest.raises(BiaslensError, match="did you mean batch_size"):
        BackendConfig(batchsize=4)
    with pytest.raises(BiaslensError, match="--base-url does not apply to the hf backend"):
        BackendConfig(base_url="http://h/v1")
    assert BackendConfig(base_url=None) == BackendConfig()  # its default: nothing given


def test_a_backend_declares_a_model_that_fits_its_kind():
    class Own(groups.BackendOptions):
        cap: Annotated[float, groups.OptionRules(minimum=0)] = Field(0.5, description="A cap.")

    served = RegisteredBackend("own", "m:f", "served", local=False, options=Own)
    assert _unfit(served) is None
    local = RegisteredBackend("own", "m:f", "loads a folder", local=True, options=Own)
    assert "must subclass Checkpoint" in _unfit(local)
    loose = RegisteredBackend("own", "m:f", "no base", local=False, options=groups.Prompts)
    assert "must subclass BackendOptions" in _unfit(loose)
    assert groups.declarations(Own)["cap"].flag == "--cap"

    class NoHelp(groups.BackendOptions):
        cap: float = 0.5

    with pytest.raises(TypeError, match="needs a description"):
        groups.declarations(NoHelp)


def test_shared_code_reads_a_group_only_where_the_backend_takes_it():
    class Served(groups.BackendOptions):
        cap: float = Field(0.5, description="A cap.")

    plain = Served()
    assert groups.prompts_of(plain) is None and groups.offline_of(plain) is False
    assert groups.model_kind_of(plain) == "auto"
    hf = BackendConfig(chat=True, offline=True, model_kind="masked").options
    assert groups.prompts_of(hf) is hf and groups.offline_of(hf) is True
    assert groups.model_kind_of(hf) == "masked"
