"""Model folders that would run code or whose chat template refuses: a config asking for the
repository's own code, pickle-only weights holding more than tensors, a chat template that
refuses a system message or reaches outside its sandbox. Each is one line naming the folder or
template; nothing of the repository runs, nothing asks on stdin, and ``--dry-run`` gives the
run's verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import PurePosixPath

import pytest
import torch
from transformers import AutoTokenizer

import biaslens
from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.runner import plan_method

MARKER = "REPOSITORY CODE RAN"


def copy_of(tiny_models, tmp_path, name="llama"):
    folder = tmp_path / f"{name}-copy"
    shutil.copytree(tiny_models[name], folder)
    return folder


def cli(*args, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "biaslens", *args], input=stdin, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.fixture
def custom_code_model(tiny_models, tmp_path):
    """A folder whose config asks for its own modeling code (of a type transformers lacks),
    with that code beside it: running it would print MARKER and write a file."""
    folder = copy_of(tiny_models, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config.update(
        model_type="evil-llama",
        auto_map={"AutoConfig": "configuration_evil.EvilConfig",
                  "AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"},
    )  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    code = f"print({MARKER!r}); open({str(tmp_path / 'ran')!r}, 'w').write('x')\n"
    for module in ("configuration_evil.py", "modeling_evil.py"):
        (folder / module).write_text(code)
    return folder


def test_a_config_asking_for_repository_code_is_refused_without_running_it(custom_code_model,
                                                                          tmp_path):  # fmt: skip
    done = cli("run", "sib-mgc", "-m", str(custom_code_model), "--limit", "1",
               "--output", str(tmp_path / "run"), stdin="y\ny\ny\n")  # fmt: skip
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "configuration_evil.py" in errors[0], done.stderr
    assert "never runs code from a model repository" in errors[0]
    assert MARKER not in done.stdout + done.stderr and not (tmp_path / "ran").exists()
    assert "[y/N]" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    dry = cli("run", "sib-mgc", "-m", str(custom_code_model), "--limit", "1", "--dry-run")
    assert dry.returncode == 2 and "configuration_evil.py" in dry.stderr
    assert not (tmp_path / "ran").exists()


def test_a_known_type_with_an_auto_map_loads_transformers_own_class(tiny_models, tmp_path):
    """An ``auto_map`` beside a model type transformers ships (a repo whose code was later
    upstreamed): transformers' class loads it and the repo's code never runs."""
    folder = copy_of(tiny_models, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text(f"raise SystemExit({MARKER!r})\n")
    lm = load_model(str(folder), BackendConfig(device="cpu"))
    assert type(lm.model).__module__.startswith("transformers.")
    lm.close()


def test_pickle_only_weights_with_more_than_tensors_are_one_line(tiny_models, tmp_path):
    folder = copy_of(tiny_models, tmp_path)
    from safetensors.torch import load_file

    state = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    torch.save({**state, "extra": PurePosixPath("not/a/tensor")}, folder / "pytorch_model.bin")
    with pytest.raises(BiaslensError, match=r"pickle holding more than tensors.*safetensors"):
        load_model(str(folder), BackendConfig(device="cpu"))
    done = cli("run", "sib-mgc", "-m", str(folder), "--limit", "1",
               "--output", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "UnpicklingError" not in done.stderr and "pickle holding" in done.stderr


NO_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<|user|>{{ m['content'] }}{% endfor %}<|assistant|>"
)
ESCAPING = (
    "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    "{% for m in messages %}{{ m['content'] }}{% endfor %}"
)


def with_template(tiny_models, tmp_path, template: str):
    folder = copy_of(tiny_models, tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = template
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    ("template", "system", "said"),
    [(NO_SYSTEM, "Be brief.", "System role not supported"), (ESCAPING, "", "SecurityError")],
)
def test_a_chat_template_that_refuses_is_one_line_and_dry_run_agrees(
    tiny_models, tmp_path, template, system, said
):
    folder = with_template(tiny_models, tmp_path, template)
    config = BackendConfig(device="cpu", chat=True, system=system)
    with pytest.raises(BiaslensError, match="its chat template refused") as loaded:
        load_model(str(folder), config)
    assert said in str(loaded.value) and "\n" not in str(loaded.value)
    with pytest.raises(BiaslensError, match="its chat template refused") as planned:
        plan_method("sib-mgc", model=str(folder), mode="paper", limit=1, backend=config)
    assert str(planned.value) == str(loaded.value)
    with pytest.raises(BiaslensError, match="its chat template refused"):
        biaslens.run("sib-mgc", str(folder), mode="paper", limit=1, output=tmp_path / "run",
                     backend=config, report=False)  # fmt: skip
    assert not (tmp_path / "run" / "summary.json").exists()
