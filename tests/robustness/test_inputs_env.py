"""Inputs and environment read behind one boundary: every environment variable parsed with a
type and a range (one line naming it), a NUL or control character in a user's names refused, a
read-only cache folder told as such, ``format_version`` checked as a whole number, and the toy
probe quiet where selection keeps too few units."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import warnings

import pytest

from biaslens.errors import BiaslensError


@pytest.mark.parametrize(
    ("variable", "value", "read", "said"),
    [
        ("BIASLENS_HUB_RETRIES", "abc", "hub", "give a number of tries from 1 to 100"),
        ("BIASLENS_HUB_RETRIES", "0", "hub", "from 1 to 100"),
        ("BIASLENS_HUB_BACKOFF", "-1", "hub", "a number of seconds from 0"),
        ("BIASLENS_CACHE_BUSY_TIMEOUT", "abc", "cache", "a number of seconds from 0 to 86400"),
        ("BIASLENS_CACHE_BUSY_TIMEOUT", "-5", "cache", "a number of seconds"),
        ("BIASLENS_CACHE_BUSY_TIMEOUT", "nan", "cache", "a number of seconds"),
        ("BIASLENS_MAX_INPUT_BYTES", "1e3", "files", "a number of bytes"),
        ("BIASLENS_PLUGIN_TIMEOUT", "forever", "plugins", "seconds"),
        ("BIASLENS_NO_PLUGINS", "maybe", "plugins", "give 1 (on) or 0 (off)"),
    ],
)
def test_a_bad_environment_variable_is_one_line_naming_it(monkeypatch, variable, value, read,
                                                          said):  # fmt: skip
    from biaslens.common import files, plugins
    from biaslens.models.checkpoints import hub
    from biaslens.store import cache

    monkeypatch.setenv(variable, value)
    readers = {
        "hub": lambda: hub._with_retries("model 'x'", lambda: 1),
        "cache": cache.busy_timeout,
        "files": files.max_input_bytes,
        "plugins": lambda: (plugins.refresh(), plugins.load(plugins.METHODS)),
    }
    with pytest.raises(BiaslensError) as error:
        readers[read]()
    assert str(error.value).startswith(f"{variable}={value!r}: ") and said in str(error.value)
    plugins.refresh()


def test_good_environment_values_are_read(monkeypatch):
    from biaslens.store import cache

    monkeypatch.setenv("BIASLENS_CACHE_BUSY_TIMEOUT", " 2.5 ")
    assert cache.busy_timeout() == 2.5
    monkeypatch.setenv("BIASLENS_CACHE_BUSY_TIMEOUT", "0")
    assert cache.busy_timeout() == 0
    monkeypatch.delenv("BIASLENS_CACHE_BUSY_TIMEOUT")
    assert cache.busy_timeout() == 60


def test_the_cli_names_a_bad_variable_without_a_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "biaslens", "run", "sib-toy", "--n", "2000", "--output",
         str(tmp_path / "toy")],
        capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "BIASLENS_PROGRESS_INTERVAL": "often", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "BIASLENS_PROGRESS_INTERVAL='often': give a number of seconds" in done.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('g1: {gender: male, names: ["Al\\0n"]}\ng2: {gender: female, names: [Ann]}\n',
         "control character '\\x00'"),
        ('g1: {gender: male, names: ["Al\\x1b[31mn"]}\ng2: {gender: female, names: [Ann]}\n',
         "control character '\\x1b'"),
    ],
)  # fmt: skip
def test_a_control_character_in_a_names_file_is_refused(tmp_path, content, said):
    from biaslens.methods.cid.data.cid_audit import load_name_groups

    path = tmp_path / "names.yaml"
    path.write_text(content)
    with pytest.raises(BiaslensError, match=f"{path}: group 'g1': a name: .*") as error:
        load_name_groups(path)
    assert said in str(error.value)


def test_a_nul_byte_in_any_text_file_is_named_by_line(tmp_path):
    from biaslens.common.files import read_models_file

    path = tmp_path / "models.txt"
    path.write_bytes(b"gpt2\nsmol\x00lm\n")
    with pytest.raises(BiaslensError, match=rf"{path}:2: a control character \('\\x00'\)"):
        read_models_file(path)


def test_a_read_only_cache_is_told_as_read_only_not_as_a_full_disk(tmp_path):
    from biaslens.store.cache_faults import failure

    path = tmp_path / "cache.sqlite"
    sqlite3.connect(path).execute("create table t (x)").connection.commit()
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as raised:
        read_only.execute("insert into t values (1)")
    message = str(failure(path, raised.value))
    assert "read-only" in message and "--cache-dir" in message
    assert "free disk space" not in message


def test_an_unwritable_output_is_told_as_such():
    import errno

    from biaslens.common.atomic import write_remedy

    assert "read-only" in write_remedy(errno.EROFS) and "read-only" in write_remedy(errno.EACCES)
    assert write_remedy(errno.ENOSPC) == "free disk space"


@pytest.mark.parametrize(
    ("version", "said"),
    [(0, "not a biaslens run format"), (True, "not a biaslens run format"),
     ("1", "not a biaslens run format"), (None, "not a biaslens run format"),
     (99, "newer than this biaslens")],
)  # fmt: skip
def test_format_version_must_be_a_whole_number_this_biaslens_knows(tmp_path, version, said):
    from biaslens.methods.sib.toy import make_settings
    from biaslens.store.result import RunResult
    from tests.helpers import run_toy

    run_toy(make_settings(n=500), tmp_path / "run")
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    summary["format_version"] = version
    path.write_text(json.dumps(summary))
    with pytest.raises(BiaslensError, match=said):
        RunResult.load(tmp_path / "run")


def test_the_toy_probe_says_why_not_instead_of_numpy_warnings(tmp_path):
    from biaslens.methods.sib.toy import make_settings
    from biaslens.store.result import RunResult
    from tests.helpers import run_toy

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        run_toy(make_settings(n=100), tmp_path / "run")
    loaded = RunResult.load(tmp_path / "run")
    assert any("selection kept 0 of 100 units" in note for note in loaded.notes), loaded.notes
