"""Second hardening pass, one section per class of fault: each ends in one clear line (or a
valid result), never a traceback, a silent result or a file touched outside the run folder."""

from __future__ import annotations

import json
import os
import sqlite3
import string
import threading
import time

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from biaslens.errors import BiaslensError
from tests.conftest import DATA
from tests.conftest import SERVED_NAME as NAME
from tests.helpers import message_lines
from tests.test_cli import run_cli


def one_line_error(code, err, expected=None):
    lines = message_lines(err)
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err
    if expected is not None:
        assert expected in lines[0], err
    return lines[0]


# ------------------------------------------------------------------ 1. error rendering
MARKUP = [
    "[/]",
    "x[bold]y",
    "[subj]",
    ":x:",
    "[red]a[/red]",
    "[link=http://e]z",
    "a]b[c",
    "[/bold]",
]


@pytest.mark.parametrize("name", MARKUP)
def test_user_text_in_errors_is_shown_verbatim(name, monkeypatch, capsys, tmp_path):
    out = tmp_path / "out"
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mgc", "--model", name, "-o", str(out))
    line = one_line_error(code, err)
    assert name in line  # not eaten as markup, not turned into an emoji
    assert not out.exists()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.text(
        # no comma: ``--model a,b`` is the documented (deprecated) spelling of two models
        alphabet=string.ascii_letters + string.digits + "[]/:*!@#$%&()_+=.;'\"<> ",
        max_size=40,
    )
)
@example("'\"")  # both quote characters: repr would escape one of them
def test_any_model_text_is_shown_verbatim_in_one_line(monkeypatch, capsys, tmp_path, text):
    name = "zz-" + text.strip()  # never a registered name, an option or an existing path
    out = tmp_path / "out"
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mgc", "--model", name, "-o", str(out))
    line = one_line_error(code, err)
    assert name in line
    assert not out.exists()


def test_help_keeps_bracketed_words(monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, "run", "lei-eval", "--help")
    assert code == 0 and "[subj]" in out


def test_warning_with_markup_characters_is_verbatim(capsys):
    from biaslens.cli.render import print_warning

    print_warning("model x[bold]y said [/] :x:")
    assert "model x[bold]y said [/] :x:" in capsys.readouterr().err


# ------------------------------------------------------------- 2. names the file system refuses
def test_a_300_character_model_name_is_one_line(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mgc", "--model", "m" * 300)
    one_line_error(code, err)


def test_an_overlong_output_component_is_one_line(tiny_models, monkeypatch, capsys, tmp_path):
    out = tmp_path / ("o" * 300)
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--model", str(tiny_models["llama"]), "--limit",
        "1", "--w", "dates", "--device", "cpu", "-o", str(out),
    )  # fmt: skip
    one_line_error(code, err, "name too long")


def test_a_five_megabyte_line_in_a_models_file(monkeypatch, capsys, tmp_path):
    models = tmp_path / "models.txt"
    models.write_text("m" * 5_000_000 + "\n")
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mgc", "--models-file", str(models))
    one_line_error(code, err, "models.txt:1")


def test_long_model_names_get_short_folder_names():
    from biaslens.store.paths import safe_name

    long = "org/" + "x" * 400
    name = safe_name(long)
    assert len(name.encode()) <= 200 and name != safe_name(long + "y")


def test_an_empty_or_blank_model_is_refused(monkeypatch, capsys, tmp_path):
    for value in ("", "   "):
        code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mgc", "--model", value)
        one_line_error(code, err, "empty")


# ------------------------------------------------------------------ 3. run files damaged
@pytest.fixture
def audit_run(tiny_models, tmp_path):
    import biaslens

    names = tmp_path / "names.yaml"
    names.write_text("a:\n  gender: male\n  names: [James]\nb:\n  gender: male\n  names: [Omar]\n")
    result = biaslens.run(
        "cid-audit", str(tiny_models["llama"]), output=tmp_path / "audit", groups=("a", "b"),
        names_file=names, lams=(0.0,), max_new_tokens=2, report=False, device="cpu",
    )  # fmt: skip
    return result.run_dir


def _damage(path, how):
    if how == "duplicate id":
        table = pd.read_csv(path, keep_default_na=False)
        pd.concat([table, table.head(1)]).to_csv(path, index=False)
    elif how == "empty":
        path.write_text("")
    elif how == "no column":
        pd.read_csv(path, keep_default_na=False).drop(columns=["continuation"]).to_csv(
            path, index=False
        )
    elif how == "directory":
        path.unlink()
        path.mkdir()
    elif how == "binary":
        path.write_bytes(b"\x00\xff" * 10)
    elif how == "bad id":
        table = pd.read_csv(path, keep_default_na=False, dtype=str)
        table.loc[0, "id"] = "x"
        table.to_csv(path, index=False)


@pytest.mark.parametrize(
    "how", ["duplicate id", "empty", "no column", "directory", "binary", "bad id"]
)
def test_a_damaged_ratings_export_is_one_line(how, audit_run, monkeypatch, capsys, tmp_path):
    export = audit_run / "ratings_to_fill.csv"
    rated = tmp_path / "rated.csv"
    rated.write_text(export.read_text())
    _damage(export, how)
    code, _, err = run_cli(monkeypatch, capsys, "cid-ratings", str(audit_run), str(rated))
    one_line_error(code, err, "ratings_to_fill.csv")


@pytest.fixture
def detect_run(tiny_models, tmp_path):
    import biaslens

    result = biaslens.run(
        "sib-detect", str(tiny_models["bert-mlm"]), output=tmp_path / "detect", limit=1,
        data_dir=DATA, report=False, device="cpu",
    )  # fmt: skip
    return result.run_dir


@pytest.mark.parametrize("how", ["truncated", "no well_specified", "duplicated", "directory"])
def test_a_damaged_sentences_table_is_one_line(how, detect_run, monkeypatch, capsys, tmp_path):
    sentences = detect_run / "sentences.parquet"
    if how == "truncated":
        sentences.write_bytes(sentences.read_bytes()[:100])
    elif how == "no well_specified":
        pd.read_parquet(sentences).drop(columns=["well_specified"]).to_parquet(sentences)
    elif how == "duplicated":
        table = pd.read_parquet(sentences)
        pd.concat([table, table.head(1)]).to_parquet(sentences)
    else:
        sentences.unlink()
        sentences.mkdir()
    code, _, err = run_cli(
        monkeypatch, capsys, "metrics", "sib-detect", str(detect_run), "-o", str(tmp_path / "m")
    )
    one_line_error(code, err, "sentences")


def test_a_lock_that_is_a_directory_is_one_line(tiny_models, tmp_path):
    import biaslens

    out = tmp_path / "run"
    (out / ".lock").mkdir(parents=True)
    with pytest.raises(BiaslensError, match="is a folder"):
        biaslens.run("sib-toy", output=out, n=100, report=False)


# ------------------------------------------------------------------ 4. the run folder as a weapon
def test_a_lock_symlink_never_touches_its_target(tmp_path):
    import biaslens

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").symlink_to(target)
    with pytest.raises(BiaslensError, match="symbolic link"):
        biaslens.run("sib-toy", output=out, n=100, report=False)
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("name", ["plots", "summary.json", "toy_summary.csv", "config.yaml"])
def test_links_inside_a_run_folder_are_refused(name, tmp_path):
    import biaslens

    out = tmp_path / "run"
    first = biaslens.run("sib-toy", output=out, n=100, report=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("keep me")
    path = out / name
    if path.is_dir():
        import shutil

        shutil.rmtree(path)
        path.symlink_to(outside, target_is_directory=True)
    else:
        path.unlink(missing_ok=True)
        path.symlink_to(victim)
    with pytest.raises(BiaslensError, match="symbolic link"):
        biaslens.run("sib-toy", output=out, n=100, report=False)
    assert victim.read_text() == "keep me" and [p.name for p in outside.iterdir()] == ["victim"]
    assert first.run_dir == out


def test_stale_temporaries_are_not_cleaned_through_links(tmp_path):
    from biaslens.common import atomic

    outside = tmp_path / "outside"
    outside.mkdir()
    keep = outside / f".x{atomic.TEMP_SUFFIX}"
    keep.write_text("not ours")
    run = tmp_path / "run"
    run.mkdir()
    (run / "linked").symlink_to(outside, target_is_directory=True)
    atomic.remove_stale_temporaries(run)
    assert keep.exists()


# ------------------------------------------------------------------ 5. busy is not damaged
def _hold_write_lock(path, seconds, ready):
    db = sqlite3.connect(path, timeout=1)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("BEGIN EXCLUSIVE")
    ready.set()
    time.sleep(seconds)
    db.rollback()
    db.close()


@pytest.mark.parametrize("wal", [True, False])
def test_a_busy_cache_is_waited_for_then_a_clear_error(wal, tmp_path, monkeypatch):
    from biaslens.store.cache import RequestCache

    monkeypatch.setenv("BIASLENS_CACHE_BUSY_TIMEOUT", "0.5")
    path = tmp_path / "requests.sqlite"
    cache = RequestCache(path)
    cache.put_many("generate", [("k1", "v1")])
    cache.close()
    if not wal:
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=DELETE")
        db.close()
    ready = threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(path, 2.0, ready))
    holder.start()
    ready.wait()
    try:
        with pytest.raises(BiaslensError, match="locked by another process"):
            cache = RequestCache(path)
            cache.put_many("generate", [("k2", "v2")])
    finally:
        holder.join()
    assert not list(tmp_path.glob("*.corrupt-*"))  # the healthy cache was not moved aside
    again = RequestCache(path)
    assert again.get_many(["k1"]) == {"k1": "v1"}
    again.close()


def test_a_busy_cache_that_frees_up_in_time_is_used(tmp_path, monkeypatch):
    from biaslens.store.cache import RequestCache

    monkeypatch.setenv("BIASLENS_CACHE_BUSY_TIMEOUT", "10")
    path = tmp_path / "requests.sqlite"
    RequestCache(path).close()
    ready = threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(path, 0.5, ready))
    holder.start()
    ready.wait()
    cache = RequestCache(path)
    cache.put_many("generate", [("k", "v")])
    holder.join()
    assert cache.get_many(["k"]) == {"k": "v"}
    cache.close()


def test_a_corrupt_cache_is_still_moved_aside(tmp_path):
    from biaslens.store.cache import RequestCache

    path = tmp_path / "requests.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.warns(UserWarning, match="damaged"):
        RequestCache(path).close()
    assert len(list(tmp_path.glob("*.corrupt-*"))) == 1


# ------------------------------------------------------------------ 6. unbounded reads
@pytest.mark.parametrize(
    "args",
    [
        ("metrics", "unqover", "/dev/zero"),
        ("metrics", "unqover", "/dev/urandom"),
        ("run", "sib-mgc", "--models-file", "/dev/zero"),
        ("run", "cid-audit", "--names-file", "/dev/zero"),
    ],
)
def test_devices_are_not_read(args, monkeypatch, capsys):
    started = time.monotonic()
    code, _, err = run_cli(monkeypatch, capsys, *args)
    one_line_error(code, err, "not a regular file")
    assert time.monotonic() - started < 30


def test_a_fifo_is_not_read(monkeypatch, capsys, tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    code, _, err = run_cli(monkeypatch, capsys, "metrics", "unqover", str(fifo))
    one_line_error(code, err, "not a regular file")


def test_a_file_over_the_size_bound_is_refused(monkeypatch, capsys, tmp_path):
    big = tmp_path / "predictions.json"
    big.write_text("{}" + " " * 5000)
    monkeypatch.setenv("BIASLENS_MAX_INPUT_BYTES", "1000")
    code, _, err = run_cli(monkeypatch, capsys, "metrics", "unqover", str(big))
    one_line_error(code, err, "input bound")


def test_an_overlong_line_names_its_line(tmp_path):
    from biaslens.common.files import read_text

    path = tmp_path / "list.txt"
    path.write_text("ok\n" + "x" * 20 + "\n")
    with pytest.raises(BiaslensError, match=r"list.txt:2: a line of 20"):
        read_text(path, "word list", max_line=10)


# ------------------------------------------------------------------ 7. silent acceptance
def test_a_name_listed_twice_is_refused(monkeypatch, capsys, tmp_path):
    names = tmp_path / "names.yaml"
    names.write_text(
        "a:\n  gender: male\n  names: [James, James]\nb:\n  gender: male\n  names: [Omar]\n"
    )
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "cid-audit", "--names-file", str(names), "--groups", "a", "b"
    )
    one_line_error(code, err, "more than once")


def test_a_specified_answer_without_specified_contexts_is_refused(tiny_models, tmp_path):
    import biaslens

    with pytest.raises(BiaslensError, match="no specified contexts for religion"):
        biaslens.run(
            "lei-eval", str(tiny_models["roberta-qa"]), output=tmp_path / "run",
            domain="religion", limit=4, specified_answers=("Muslim",), data_dir=DATA,
            report=False, device="cpu",
        )  # fmt: skip


def test_every_model_of_a_comparison_is_checked_before_the_first_runs(tiny_models, tmp_path):
    from biaslens.runner import run_comparison

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    with pytest.raises(BiaslensError, match="broken"):
        run_comparison("sib-mgc", [str(tiny_models["llama"]), str(broken)], output=tmp_path / "c",
                       w_kinds=("dates",), limit=1)  # fmt: skip
    assert not (tmp_path / "c").exists()


# ------------------------------------------------------------------ 8. the app's semantic errors
@pytest.fixture(scope="module")
def app_url(tiny_backends):
    from tests.app.conftest import serve

    with serve(tiny_backends["llama"]) as url:
        yield url


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/detect", {"sentence": "No slot here."}),
        ("/api/detect", {"sentence": "[MASK] and [MASK] met."}),
        ("/api/detect", {"sentence": "   "}),
        ("/api/dose", {"sentence": "In [DATE], [MASK] left."} | {"values": [" "]}),
        ("/api/dose", {"sentence": "[MASK] left."}),
        ("/api/dose", {"sentence": "In [DATE] and [PLACE], [MASK] left."}),
        ("/api/dose", {"sentence": "In [DATE], [MASK] left [DATE]."}),
    ],
)
def test_app_semantic_errors_are_4xx_before_streaming(path, body, app_url):
    import httpx

    response = httpx.post(app_url + path, json=body, timeout=60)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert set(response.json()) == {"error"}


# ------------------------------------------------------------------ 9. served replies
def _openai(served, **options):
    from biaslens.models import BackendConfig, load_model

    config = BackendConfig(
        backend="openai", base_url=served["url"], tokenizer=str(served["folder"]), **options
    )
    with pytest.warns(UserWarning, match="not set"):
        return load_model(NAME, config)


def test_a_server_that_ignores_logprob_token_ids_is_not_trusted_with_it(served, tiny_backends):
    from biaslens.models import ChoiceLogprobsRequest

    served["faults"].ignore_logprob_token_ids = True
    try:
        lm = _openai(served)
        assert lm.probe["token_ids_extension"] is False  # the echo path is used instead
        request = ChoiceLogprobsRequest("The nurse said that", (" she", " he"))
        (got,) = lm.choice_logprobs([request])
        (expected,) = tiny_backends["llama"].choice_logprobs([request])
        assert got.logprobs == pytest.approx(expected.logprobs, abs=1e-3)
        lm.close()
    finally:
        served["faults"].ignore_logprob_token_ids = False


@pytest.mark.parametrize(
    ("fault", "value", "expected"),
    [
        ("models_reply", ["tiny"], "/models reply does not fit"),
        ("models_reply", {"data": "tiny"}, "/models reply does not fit"),
        ("models_reply", {"data": [{"name": "tiny"}]}, "field data.0.id"),
        ("token_text", "token_id:abc", "expected token ids"),
    ],
)
def test_replies_that_do_not_fit_are_one_line(fault, value, expected, served):
    from biaslens.models import BackendConfig, TokenDistributionRequest, load_model

    setattr(served["faults"], fault, value)
    try:
        config = BackendConfig(
            backend="openai", base_url=served["url"], tokenizer=str(served["folder"])
        )
        with pytest.raises(BiaslensError, match=expected), pytest.warns(UserWarning):
            lm = load_model(NAME, config)
            lm.token_distribution([TokenDistributionRequest("The nurse said that", (" she",))])
    finally:
        setattr(served["faults"], fault, None)


# ------------------------------------------------------------------ 10. secrets
def test_a_password_in_the_base_url_is_never_recorded(served, tmp_path, monkeypatch):
    import biaslens

    url = served["url"].replace("http://", "http://user:s3cr3tpass@")
    with pytest.warns(UserWarning, match="not set"):
        result = biaslens.run(
            "sib-mgc", NAME, output=tmp_path / "run", backend="openai", base_url=url,
            tokenizer=str(served["folder"]), w_kinds=("dates",), limit=1, report=False,
        )  # fmt: skip
    for file in result.run_dir.rglob("*"):
        if file.is_file() and file.suffix in (".yaml", ".json", ".csv"):
            assert "s3cr3tpass" not in file.read_text(), file
    assert result.summary["backend"]["base_url"].startswith("http://***@")


@pytest.mark.parametrize("value", ["sk-abc123-def", "my key", "1ABC", "a=b"])
def test_api_key_env_must_be_a_variable_name(value, monkeypatch, capsys, tmp_path):
    out = tmp_path / "run"
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--backend", "openai", "--base-url",
        "http://127.0.0.1:9/v1", "--api-key-env", value, "-o", str(out),
    )  # fmt: skip
    line = one_line_error(code, err, "environment variable that holds the key")
    assert value not in line
    assert not out.exists()


def test_an_unset_key_variable_is_said_before_the_run(served, monkeypatch):
    from biaslens.models import BackendConfig, load_model

    monkeypatch.delenv("MY_KEY_VAR", raising=False)
    config = BackendConfig(
        backend="openai", base_url=served["url"], tokenizer=str(served["folder"]),
        api_key_env="MY_KEY_VAR",
    )  # fmt: skip
    with pytest.warns(UserWarning, match=r"\$MY_KEY_VAR is not set"):
        load_model(NAME, config).close()
    monkeypatch.setenv("MY_KEY_VAR", "x")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_model(NAME, config).close()


def test_json_records_of_summary_have_no_password():
    from biaslens.models import BackendConfig

    described = BackendConfig(backend="openai", base_url="https://u:p4ss@h.example/v1").describe()
    assert json.dumps(described).count("p4ss") == 0


def test_a_linked_request_cache_is_refused(tiny_models, tmp_path):
    import biaslens

    out = tmp_path / "run"
    options = dict(w_kinds=("dates",), limit=1, device="cpu", report=False, no_cache=True)
    biaslens.run("sib-mgc", str(tiny_models["llama"]), output=out, **options)
    victim = tmp_path / "victim.sqlite"
    victim.write_text("keep me")
    (out / "requests.sqlite").unlink()
    (out / "requests.sqlite").symlink_to(victim)
    with pytest.raises(BiaslensError, match="symbolic link"):
        biaslens.run("sib-mgc", str(tiny_models["llama"]), output=out, **options)
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("text", ["plain", "it's", 'say "hi"', "'\"", "'\"`", "a\\b"])
def test_quoted_keeps_user_text_verbatim(text):
    from biaslens.errors import quoted

    shown = quoted(text)
    assert text in shown and shown[0] not in text
