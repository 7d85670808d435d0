"""The mutation script (``scripts/mutations.py``) stays in step with the code: every edit it
makes to break a paper rule is found exactly once in ``src/``, and every test it expects to
fail exists. (Running the mutations is the script's job: about half an hour.)"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("mutations", ROOT / "scripts" / "mutations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutations", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_mutation_applies_once_and_names_existing_tests():
    script = load_script()
    names = [m.name for m in script.MUTATIONS]
    assert len(names) == len(set(names)) >= 20
    for mutation in script.MUTATIONS:
        script.check_edits(mutation, ROOT / "src")
        for node in mutation.tests:
            file, _, test = node.partition("::")
            function = re.sub(r"\[.*\]$", "", test)
            assert f"def {function}(" in (ROOT / file).read_text(), node


def test_a_mutated_copy_changes_only_its_rule(tmp_path):
    script = load_script()
    mutation = next(m for m in script.MUTATIONS if m.name == "cid-top-k")
    src = script.mutated_copy(mutation, tmp_path)
    for file, text, replacement in mutation.edits:
        mutated = (src / file).read_text()
        assert text not in mutated and replacement in mutated
    assert (ROOT / "src" / mutation.edits[0][0]).read_text().count(mutation.edits[0][1]) == 1
