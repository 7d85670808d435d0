"""The architecture's two rules, checked over the source: layers only point down, and the
light entry points import no torch.

Data flow: dataset builders -> requests -> backends -> metrics -> run store -> report. A module
may import modules of its own layer or of a lower one (every ``import`` statement counts, also
inside functions), never of a higher one.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "biaslens"

LAYERS = {
    # leaves: every layer may use them
    "secrets": 0,  # what the process must never write or print (errors redact with it)
    "errors": 0,
    "version": 0,
    "_version": 0,
    "common": 0,
    "progress": 0,
    # builders and decoding algorithms
    "data": 1,
    "decoding": 1,
    # backends (the request types live here), pure metrics, test-model builders
    "models": 2,
    "metrics": 2,
    # figures and the run store (cache, run folders, results)
    "plots": 3,
    "store": 3,
    # requests stage: instances -> requests -> per-sample scores
    "scoring": 4,
    # what a method is written against, the methods, and what is built on them
    "framework": 6,
    "method": 7,  # the front door for method authors
    "methods": 7,
    "interop": 8,
    "report": 8,
    "app": 8,
    # helpers for tests of one's own (tiny models whose vocabulary covers the probes)
    "testing": 8,
    # running the methods (it writes the report), the Python API, the command line
    "runner": 9,
    "auditing": 9,
    "api": 10,
    "__init__": 10,
    "cli": 11,
    "__main__": 12,  # ``python -m biaslens``
}


STAGE_LAYERS = {"data": 1, "metrics": 2, "intervals": 2, "plots": 3, "scoring": 4, "train": 5}
"""A method family's folders (``methods/<family>/<stage>``) sit at their stage's layer, so that
inside a family the data flow points down too; the family's other modules are methods."""

FAMILY_STAGES = frozenset(STAGE_LAYERS)


def test_the_registry_skips_exactly_the_family_stages():
    """The registry leaves a family's stage folders to the methods that import them
    (:data:`biaslens.framework.registry.STAGES`): each of them has a layer here, and nothing
    else is a stage."""
    from biaslens.framework.registry import STAGES

    assert STAGES == FAMILY_STAGES


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 3 and parts[1] == "methods" and parts[3] in FAMILY_STAGES:
        return parts[3]
    return parts[1] if len(parts) > 1 else "__init__"


def family_of(module: str) -> str | None:
    """``qa`` for ``biaslens.methods.qa.…``; None outside a family's folder."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "methods" else None


def imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("biaslens")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("biaslens"):
                if target == "biaslens":  # from biaslens import X: X is a submodule or the API
                    found += [(node.lineno, f"biaslens.{a.name}") for a in node.names]
                else:
                    found.append((node.lineno, target))
    return found


def level(module: str, layer: str) -> int:
    return STAGE_LAYERS[layer] if family_of(module) and layer in STAGE_LAYERS else LAYERS[layer]


def upward_imports() -> list[str]:
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        source = layer_of(module) if module != "biaslens" else "__init__"
        for line, target in imports_of(path, module):
            imported = layer_of(target) if target != "biaslens" else "__init__"
            if imported not in LAYERS | STAGE_LAYERS or source not in LAYERS | STAGE_LAYERS:
                problems.append(f"{module}:{line} imports {target} (unknown layer)")
            elif level(target, imported) > level(module, source):
                problems.append(
                    f"{module}:{line} ({source}, layer {level(module, source)}) imports "
                    f"{target} ({imported}, layer {level(target, imported)})"
                )
    return problems


def test_layers_only_point_down():
    assert upward_imports() == []


def imports_across_families() -> list[str]:
    """A family's folder importing another family's, and a shared layer below the methods
    importing any family: each family's code is its own, the shared layers serve them all."""
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        source = family_of(module)
        shared_below = source is None and LAYERS.get(layer_of(module), 99) < LAYERS["methods"]
        for line, target in imports_of(path, module):
            family = family_of(target)
            if family and (family != source if source else shared_below):
                problems.append(f"{module}:{line} imports {target}")
    return problems


def test_a_family_imports_no_other_family_and_shared_layers_import_none():
    assert imports_across_families() == []


def test_the_family_check_finds_a_crossing(tmp_path, monkeypatch):
    fake = tmp_path / "biaslens"
    for name, code in {
        "methods/qa/data/words.py": "from biaslens.methods.sib.data import mgc\n",
        "metrics/shared.py": "from biaslens.methods.cid.metrics import cid\n",
        "methods/sib/metrics/own.py": "from biaslens.methods.sib.data import mgc\n",
    }.items():
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text(code)
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert imports_across_families() == [
        "biaslens.methods.qa.data.words:1 imports biaslens.methods.sib.data",
        "biaslens.metrics.shared:1 imports biaslens.methods.cid.metrics",
    ]


def import_graph() -> dict[str, set[str]]:
    """Module -> the biaslens modules it imports (``from pkg import sub`` counts as importing
    ``pkg.sub`` when that is a module; imports inside functions and TYPE_CHECKING count)."""
    paths = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    root = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{root}.{node.module}" if node.module else root
                for alias in node.names:  # a submodule, else a name defined in ``base``
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in paths else base)
        resolved = set()
        for target in targets:
            while target and target not in paths:
                target = target.rpartition(".")[0]
            if target and target != module and target.startswith("biaslens"):
                resolved.add(target)
        graph[module] = resolved
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_no_import_circles():
    assert import_circles(import_graph()) == []


def test_the_circle_check_finds_a_circle():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_holds_several_ideas_in_over_400_lines():
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}


def test_every_package_has_a_layer():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py")}
    assert (packages | modules) - set(LAYERS) == set()


@pytest.mark.parametrize(
    "code",
    [
        "import biaslens",
        "import biaslens; biaslens.RunResult; biaslens.TokenDistributionRequest",
        "import biaslens.cli",
        "from biaslens.framework.registry import methods; methods()",
        "import biaslens.method",
        "from biaslens.report.html import write_report",
        "from biaslens.methods.qa.metrics import unqover",
    ],
)
def test_light_entry_points_import_no_torch(code):
    script = f"{code}\nimport sys\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def source_files() -> dict[str, str]:
    """Every module's source, by its path under ``src/biaslens``."""
    return {str(p.relative_to(SRC)): p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")}


def backend_literals(files: dict[str, str], names: set[str]) -> list[str]:
    """Where a backend's name is a string literal in ``files`` (path -> source), outside that
    backend's own package (``models/backends/NAME/``), the registry and
    :data:`NOT_BACKEND_NAMES`."""
    found = []
    for path, source in sorted(files.items()):
        if path == "models/registry.py":
            continue
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Constant) and node.value in names):
                continue
            if path.startswith(f"models/backends/{node.value}/"):
                continue
            if node.value in NOT_BACKEND_NAMES.get(path, ()):
                continue
            found.append(f"{path}:{node.lineno} {node.value!r}")
    return found


NOT_BACKEND_NAMES = {
    "data/export_writer.py": ("hf",),
    "models/backends/inspect/client.py": ("openai",),
}
"""Literals that are a backend's name by chance: ``--format hf`` is the datasets library's
``save_to_disk`` format of an exported probe set; ``openai`` is also one of inspect's
providers."""


def test_no_backend_name_is_a_literal_outside_its_package_and_the_registry():
    from biaslens.models.registry import backends, wrappers

    names = {*backends(), *(w.name for w in wrappers())}
    assert {"hf", "vllm", "openai", "replicated"} <= names
    files = source_files()
    assert backend_literals(files, names) == []


def test_the_backend_literal_check_finds_one():
    files = {
        "runner/run.py": 'if config.backend == "openai":\n    pass\n',
        "models/backends/openai/__init__.py": 'NAME = "openai"\n',
        "models/registry.py": 'DEFAULT = "openai"\n',
        "data/export_writer.py": 'FORMATS = ("hf",)\n',
    }
    assert backend_literals(files, {"openai", "hf"}) == ["runner/run.py:1 'openai'"]


def test_a_backend_is_one_package():
    """Each built-in backend's loader and planner live in its own package, which declares it."""
    from biaslens.models.registry import backends, wrappers

    for backend in (*backends().values(), *wrappers()):
        if not backend.loader.startswith("biaslens."):  # a plug-in's
            continue
        package = f"biaslens.models.backends.{backend.name}"
        assert backend.loader.startswith(package), backend.name
        assert backend.planner is None or backend.planner.startswith(package), backend.name
        assert (SRC / "models" / "backends" / backend.name / "__init__.py").is_file()


def modules_named(node: ast.AST) -> list[str]:
    """The modules an import statement names (none for any other node)."""
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def method_wiring(files: dict[str, str], names: set[str]) -> list[str]:
    """Where code outside ``methods/`` and the method registry names a method: a method's name
    as a string literal (docstrings aside; :data:`NOT_METHOD_NAMES` are names of something else
    by chance), or an import of a method's module. A method is wired only through its
    ``MethodSpec``."""
    found = []
    for path, source in sorted(files.items()):
        if path.startswith("methods/") or path == "framework/registry.py":
            continue
        tree = ast.parse(source)
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and node.value in names
                and id(node) not in docstrings
            ):
                if node.value not in NOT_METHOD_NAMES.get(path, ()):
                    found.append(f"{path}:{node.lineno} {node.value!r}")
            found += [
                f"{path}:{node.lineno} imports {name}"
                for name in modules_named(node)
                if (name == "biaslens.methods" or name.startswith("biaslens.methods."))
                and layer_of(name) not in FAMILY_STAGES  # a family's building block
            ]
    return found


NOT_METHOD_NAMES = {
    "data/registry.py": ("unqover",),
    "data/exports.py": ("unqover",),
    "methods/qa/metrics/unqover_stream.py": ("unqover",),
}
"""Literals that are a method's name by chance: UnQover's dataset (its word lists) and the
model-level table of UnQover's metrics share the method's name."""


def test_no_method_is_named_outside_its_folder_and_the_registry():
    from biaslens.framework.registry import built_in_methods

    names = set(built_in_methods())
    assert {"sib-mgc", "unqover", "cid-audit", "lei-eval"} <= names
    files = source_files()
    assert method_wiring(files, names) == []


def test_the_method_wiring_check_finds_them():
    files = {
        "interop/tasks.py": '"""Exports sib-mgc."""\nMAKERS = {"sib-mgc": 1}\n',
        "cli/metrics.py": "from biaslens.methods.cid.audit import import_ratings\n",
        "methods/sib/mgc/method.py": 'METHOD = "sib-mgc"\n',
        "data/registry.py": 'NAME = "unqover"\n',
    }
    assert method_wiring(files, {"sib-mgc", "unqover"}) == [
        "cli/metrics.py:1 imports biaslens.methods.cid.audit",
        "interop/tasks.py:2 'sib-mgc'",
    ]


def dynamic_attribute_classes(files: dict[str, str]) -> list[str]:
    """The classes in ``files`` (path -> source) that answer attributes through ``__getattr__``
    (a module's own ``__getattr__``, which imports a name lazily, is not a class's)."""
    return [
        f"{path} {node.name}"
        for path, source in sorted(files.items())
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(f, ast.FunctionDef) and f.name == "__getattr__" for f in node.body)
    ]


NOT_CONFIGURATION = ["store/result.py RunResult"]
"""A finished run's tables by name (``result.fits``), as a DataFrame's columns are: results,
not configuration."""


def test_no_configuration_object_answers_attributes_dynamically():
    """A backend's options are fields of its typed options model, and every other settings
    object is a model or a dataclass: a reader can see where each option is read."""
    assert dynamic_attribute_classes(source_files()) == NOT_CONFIGURATION


def test_the_dynamic_attribute_check_finds_one():
    source = "class Config:\n    def __getattr__(self, name):\n        return 1\n"
    lazy = "def __getattr__(name):\n    return 1\n"
    assert dynamic_attribute_classes({"x.py": source, "y.py": lazy}) == ["x.py Config"]


FRONT_DOORS = {"biaslens.method", "biaslens.models", "biaslens.errors"}
"""What a plug-in imports: a method's names, a backend's names, and the error type."""


def imports_behind_the_front_doors(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        found += [
            f"{node.lineno}: {name}"
            for name in modules_named(node)
            if name.startswith("biaslens") and name not in FRONT_DOORS
        ]
    return found


def test_the_example_plugin_and_the_guide_import_only_from_the_front_doors():
    root = Path(__file__).parent / "fixtures" / "plugin_package" / "biaslens_plugin_example"
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py"))}
    guide = (SRC.parents[1] / "docs" / "development.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python[^\n]*\n(.*?)```", guide, re.S)
    assert blocks, "the guide shows a method's code"
    sources |= {f"development.md block {i}": b for i, b in enumerate(blocks)}
    behind = {name: f for name, s in sources.items() if (f := imports_behind_the_front_doors(s))}
    assert behind == {}
    import biaslens.method

    for name in biaslens.method.__all__:  # every name the front door promises is there
        assert getattr(biaslens.method, name) is not None


def test_the_front_door_check_finds_a_side_door():
    code = "from biaslens.method import register\nfrom biaslens.framework.spec import Headline\n"
    assert imports_behind_the_front_doors(code) == ["2: biaslens.framework.spec"]


HEAVY_IMPORTS = {
    *("torch", "transformers", "vllm", "ray", "sentence_transformers", "huggingface_hub"),
    *("datasets", "statsmodels", "lm_eval", "matplotlib", "jinja2", "uvicorn", "pandas"),
    *("pyarrow", "safetensors", "tokenizers", "inspect_ai"),
}
"""The libraries a function may import where it needs them (docs/development.md, "Where
imports go"); a biaslens module may be too, where its own imports reach one of them."""


def light_imports_in_functions(files: dict[str, str]) -> list[str]:
    """Imports inside a function of anything but a heavy library or a biaslens module (the
    standard library, numpy, pydantic…: those go at the top). An import guarded by ``except
    ImportError`` (a platform's module) may stay."""
    found = []
    for path, source in sorted(files.items()):
        tree = ast.parse(source)
        guarded = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.Try)
            for node in block.body
        }
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in guarded:
                    continue
                if isinstance(node, ast.ImportFrom):
                    names = ["biaslens" if node.level else (node.module or "")]
                else:
                    names = [alias.name for alias in node.names]
                roots = {name.split(".")[0] for name in names}
                if roots - HEAVY_IMPORTS - {"biaslens"}:
                    found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
    return sorted(set(found))


def test_light_libraries_are_imported_at_the_top():
    assert light_imports_in_functions(source_files()) == []


def test_the_import_check_finds_a_light_import_in_a_function():
    files = {
        "x.py": "def f():\n    import json\n    import torch\n    from biaslens import errors\n",
        "y.py": "def g():\n    try:\n        import fcntl\n    except ImportError:\n        pass\n",
    }
    assert light_imports_in_functions(files) == ["x.py:2 import json"]
