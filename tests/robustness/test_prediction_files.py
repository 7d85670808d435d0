"""UnQover prediction files read by ``biaslens metrics unqover``, as they come from elsewhere:
keys that repeat, a context whose last row never comes (across chunks), many keys of one
context, scores as strings, and a large file read in bounded memory — each a correct result
or one line naming the file and what is wrong."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from biaslens.methods.qa.data import unqover_predictions
from tests.methods.qa.data.test_unqover_predictions import prediction
from tests.test_cli import _one_line_error, run_cli

AB = prediction((0.36, 1), (0.09, 1), (0.04, 1), (0.49, 1))
BA = prediction((0.25, 1), (0.16, 1), (0.36, 1), (0.09, 1))


def _write(path, items) -> None:
    """A JSON object of ``items`` written member by member (repeated keys kept, as json.dumps
    of a dict cannot)."""
    path.write_text("{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in items) + "}")


def _contexts(templates: int):
    items = []
    for t in range(templates):
        items += [(f"f|m|A|B|{t}|c|bad|bad", AB), (f"m|f|B|A|{t}|c|bad|bad", BA)]
    return items


def _metrics(monkeypatch, capsys, path):
    return run_cli(monkeypatch, capsys, "metrics", "unqover", str(path))


def test_a_key_repeated_with_other_scores_is_one_line(tmp_path, monkeypatch, capsys):
    other = prediction((0.5, 1), (0.1, 1), (0.1, 1), (0.5, 1))
    _write(tmp_path / "p.json", [*_contexts(3), ("f|m|A|B|1|c|bad|bad", other)])
    code, _, err = _metrics(monkeypatch, capsys, tmp_path / "p.json")
    _one_line_error(code, err, "gives the key 'f|m|A|B|1|c|bad|bad' more than once")
    assert "p.json" in err


def test_the_last_row_missing_across_chunks_names_the_file_and_the_context(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(unqover_predictions, "CHUNK_KEYS", 4)  # contexts cut across chunks
    _write(tmp_path / "p.json", _contexts(30)[:-1])
    code, _, err = _metrics(monkeypatch, capsys, tmp_path / "p.json")
    _one_line_error(code, err, "1 context(s) lack the other subject order")
    assert "p.json" in err and "template 29" in err


def test_many_keys_of_one_context_are_one_line_naming_two(tmp_path, monkeypatch, capsys):
    """Keys that differ only where the context does not (the category field): the same
    context given 2,000 times."""
    monkeypatch.setattr(unqover_predictions, "CHUNK_KEYS", 500)
    many = [(f"f|m|A|B|0|c{i}|bad|bad", AB) for i in range(2000)]
    _write(tmp_path / "p.json", [*_contexts(2), *many])
    code, _, err = _metrics(monkeypatch, capsys, tmp_path / "p.json")
    _one_line_error(code, err, "the same context and question more than once")
    assert "'f|m|A|B|0|c|bad|bad'" in err and "p.json" in err


@pytest.mark.parametrize("value", ['"0.36"', "null", "true", "[0.36]", "1.5", "-0.1", "NaN"])
def test_a_score_that_is_not_a_probability_is_one_line(tmp_path, monkeypatch, capsys, value):
    text = json.dumps(dict(_contexts(2))).replace('"start": 0.36', f'"start": {value}', 1)
    (tmp_path / "p.json").write_text(text)
    code, _, err = _metrics(monkeypatch, capsys, tmp_path / "p.json")
    _one_line_error(code, err, "q0.ans0.start must be a")


def _peak_memory(path) -> int:
    """The peak resident memory (bytes) of ``biaslens metrics unqover PATH`` in a process of
    its own, which must succeed."""
    script = (
        "import resource, sys; from biaslens.cli import main; sys.argv = ['biaslens', "
        f"'metrics', 'unqover', {str(path)!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, code)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.rstrip().endswith(" 0"), done.stdout[-500:] + done.stderr[-500:]
    return int(done.stdout.split("PEAK ")[1].split()[0])


def _large(path, templates: int) -> int:
    with path.open("w") as out:
        out.write("{")
        for t in range(templates):
            sep = "," if t else ""
            out.write(f'{sep}"f|m|A|B|{t}|c|bad|bad":{json.dumps(AB)},')
            out.write(f'"m|f|B|A|{t}|c|bad|bad":{json.dumps(BA)}')
        out.write("}")
    return path.stat().st_size


@pytest.mark.slow
def test_a_large_file_is_read_in_bounded_memory(tmp_path):
    """200,000 keys (~63 MB) against 2,000 (~0.6 MB): the command's peak memory grows far less
    than the file (the parser holds one chunk of 50,000 keys; the accumulator 8 bytes a context
    and the sums)."""
    small = _large(tmp_path / "small.json", 1_000)
    large = _large(tmp_path / "large.json", 100_000)
    grown = _peak_memory(tmp_path / "large.json") - _peak_memory(tmp_path / "small.json")
    print(f"file {large / 1e6:.0f} MB: peak memory {grown / 1e6:.0f} MB above a {small / 1e6:.1f} "
          "MB file's")  # fmt: skip
    assert large > 50e6 and grown < 0.5 * large
