"""Every third-party module that ``src/`` imports is provided by a declared requirement.

A package that sits on a developer's machine from a by-hand install would otherwise make the
tests pass there and the first run crash on a fresh one. Core modules may import only the
package's own dependencies; the optional back ends may import their extra's packages too.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "biaslens"

KNOWN_DISTRIBUTIONS = {
    # import name -> distribution, for packages that may not be installed where the test runs
    "vllm": "vllm",
    "ray": "ray",
    "httpx": "httpx",
    "yaml": "pyyaml",
    "sentence_transformers": "sentence-transformers",
    "lm_eval": "lm-eval",
    "playwright": "playwright",
    "inspect_ai": "inspect-ai",
}
OPTIONAL_MODULES = {
    # module of biaslens (prefix) -> extras whose packages it may import
    "biaslens.models.backends.vllm.engine": ("vllm",),
    "biaslens.models.backends.replicated.replicas": ("ray",),
    "biaslens.models.runtime.ray_runtime": ("ray",),
    "biaslens.methods.qa.lei_train.cells": ("ray",),
    "biaslens.models.embeddings": ("embeddings",),
    "biaslens.testing": ("dev",),
    "biaslens.data.export_writer": ("datasets",),
    "biaslens.models.backends.inspect": ("inspect",),
    "biaslens.methods.sib.inspect_tasks": ("inspect",),
}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = {
        extra: {_name(r) for r in reqs if not r.startswith("biaslens")}
        for extra, reqs in project.get("optional-dependencies", {}).items()
    }
    return core, extras


def third_party_imports(path: Path) -> set[str]:
    """Top-level names of every import in the file (module level and inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "biaslens"}


@functools.cache
def _installed() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(module: str) -> str:
    found = _installed().get(module)
    if found:
        return found[0].lower().replace("_", "-")
    if module in KNOWN_DISTRIBUTIONS:
        return KNOWN_DISTRIBUTIONS[module]
    return module.lower().replace("_", "-")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def undeclared_imports() -> list[str]:
    core, extras = declared()
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        allowed = set(core)
        for prefix, names in OPTIONAL_MODULES.items():
            if module == prefix or module.startswith(prefix + "."):
                for extra in names:
                    allowed |= extras.get(extra, set())
        for imported in sorted(third_party_imports(path)):
            distribution = distribution_of(imported)
            if distribution not in allowed:
                problems.append(f"{module} imports {imported} ({distribution}), not declared")
    return problems


def test_every_import_is_declared():
    assert undeclared_imports() == []


def test_the_scan_catches_an_undeclared_import(tmp_path, monkeypatch):
    """The check itself can fail: a module importing a package nobody declared is reported."""
    fake = tmp_path / "biaslens"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "fit.py").write_text("def f():\n    import statsmodels_not_declared.api\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert undeclared_imports() == [
        "biaslens.fit imports statsmodels_not_declared (statsmodels-not-declared), not declared"
    ]


HIDE = """
import sys
for name in {absent!r}:
    sys.modules[name] = None  # import fails, importlib.util.find_spec says absent
"""


def optional_import_names() -> set[str]:
    """The import names of every package that only an optional back end's extra brings (not
    the core's, not the developers' tools)."""
    core, extras = declared()
    wanted = {e for names in OPTIONAL_MODULES.values() for e in names if e != "dev"}
    only_optional = set().union(*(extras.get(e, set()) for e in wanted)) - core
    names = {m for m, d in KNOWN_DISTRIBUTIONS.items() if d in only_optional}
    for module, dists in _installed().items():
        if any(d.lower().replace("_", "-") in only_optional for d in dists):
            names.add(module)
    return {n for n in names if n.isidentifier()}


def test_methods_are_listed_and_planned_without_any_extra(tiny_models, tmp_path):
    """A core install (no ``vllm``, ``ray``, ``inspect_ai``, ``datasets`` …) lists every
    built-in method and plans a run: the registry imports no module that needs an extra (one
    inspect_ai task module imported while listing would break every method)."""
    import subprocess

    absent = sorted(optional_import_names())
    assert {"inspect_ai", "ray", "vllm", "sentence_transformers"} <= set(absent)
    hidden = subprocess.run(
        [sys.executable, "-c", HIDE.format(absent=absent) + "import inspect_ai"],
        capture_output=True,
        text=True,
    )
    assert "ModuleNotFoundError" in hidden.stderr, "the extras must be hidden"
    script = HIDE.format(absent=absent) + (
        "from biaslens.framework.registry import built_in_methods\n"
        "print(len(built_in_methods()))\n"
        "from biaslens.cli import app\n"
        "app(['run', 'sib-mgc', '-m', sys.argv[1], '--dry-run', '-o', sys.argv[2]],"
        " standalone_mode=False)\n"
    )
    model, run = str(tiny_models["llama"]), str(tmp_path / "run")
    out = subprocess.run([sys.executable, "-c", script, model, run], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.splitlines()[0]) >= 8, out.stdout
