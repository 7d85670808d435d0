"""Plug-ins that must not take the command line down: one whose import raises ``SystemExit(0)``,
one whose import never finishes, one registering a method under a built-in's name (as an
entry-point object and by calling ``register``). Built-ins always win and always work, a
plug-in is imported only when something needs it, and a broken one is named in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

MODULES = {
    "exits_plugin.py": "raise SystemExit(0)\n",
    "hangs_plugin.py": "import time\ntime.sleep(3600)\n",
    "hangs_backend.py": "import time\ntime.sleep(3600)\n",
    "collide_plugin.py": textwrap.dedent(
        """\
        import dataclasses
        from biaslens.methods.sib.toy import SPEC as TOY
        SPEC = dataclasses.replace(TOY, name="sib-mgc", title="an impostor")
        """
    ),
    "register_plugin.py": textwrap.dedent(
        """\
        import dataclasses
        from biaslens.framework.registry import register
        from biaslens.methods.sib.toy import SPEC as TOY
        register(dataclasses.replace(TOY, name="unqover", title="another impostor"))
        """
    ),
}
ENTRY_POINTS = """\
[biaslens.methods]
exits = exits_plugin
hangs = hangs_plugin
sib-mgc = collide_plugin:SPEC
unqover-too = register_plugin

[biaslens.backends]
stuck = hangs_backend:BACKEND
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-plugins")
    info = root / "hostile_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    for name, code in MODULES.items():
        (root / name).write_text(code)
    return root


def biaslens(site, tmp_path, *args, timeout=300):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "BIASLENS_PLUGIN_TIMEOUT": "3",
        "BIASLENS_REQUEST_CACHE_DIR": str(tmp_path / "cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "biaslens", *args], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip


def test_version_and_a_built_in_method_import_no_plugin(site, tmp_path):
    version = biaslens(site, tmp_path, "--version", timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("biaslens ")
    assert version.stderr == ""  # not even a warning: nothing was imported
    toy = biaslens(site, tmp_path, "run", "sib-toy", "--n", "2000", "--output", "toy")
    assert toy.returncode == 0, toy.stderr
    assert "plug-in" not in toy.stderr and (tmp_path / "toy" / "summary.json").is_file()
    assert "impostor" not in (tmp_path / "toy" / "summary.json").read_text()


def test_listing_names_each_broken_plugin_once_and_keeps_the_built_ins(site, tmp_path):
    listed = biaslens(site, tmp_path, "run", "--help")
    assert listed.returncode == 0, listed.stderr
    for method in ("sib-mgc", "unqover", "sib-toy", "cid"):
        assert method in listed.stdout
    assert "impostor" not in listed.stdout
    warnings = [line for line in listed.stderr.splitlines() if line.startswith("warning:")]
    said = "\n".join(warnings)
    assert "'exits'" in said and "SystemExit" in said
    assert "'hangs'" in said and "did not finish within 3 s" in said
    assert "'sib-mgc'" in said and "built-in method's name" in said
    assert "'unqover-too'" in said and "registered twice" in said
    assert "'stuck'" in said  # the commands' backend options include the plug-ins'
    assert len(warnings) == 5, listed.stderr
    assert "Traceback" not in listed.stderr


def test_a_built_in_wins_over_a_plugin_of_its_name(site, tmp_path):
    code = (
        "import biaslens; from biaslens.framework.registry import methods; "
        "m = methods(); print(m['sib-mgc'].title, '|', m['unqover'].title)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site), "BIASLENS_PLUGIN_TIMEOUT": "3"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "impostor" not in done.stdout


@pytest.mark.parametrize(("method", "said"), [("exits", "SystemExit"), ("hangs", "3 s")])
def test_the_method_of_a_broken_plugin_says_why_it_is_missing(site, tmp_path, method, said):
    done = biaslens(site, tmp_path, "run", method, "--output", "x")
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"'{method}'" in errors[0] and said in errors[0], done.stderr
    assert "No such command" not in done.stderr
