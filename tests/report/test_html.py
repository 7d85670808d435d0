"""The HTML report: content, links, escaping, secrets, bad run directories, comparison."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from biaslens.errors import BiaslensError
from biaslens.report.html import render_report, secret_values, write_report
from biaslens.report.run_view import load_run
from biaslens.store.run import RunStore

pytestmark = pytest.mark.odd_run_folder  # hand-built runs with a few columns of each table

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'


def cid_run(root, continuations=("was late", SCRIPT, IMG), settings=None):
    """A cid-audit run directory whose model outputs are hostile markup."""
    store = RunStore(root, "cid-audit", settings or {"model": "tiny", "lams": [0, 5]}, {})
    table = pd.DataFrame(
        {
            "group": ["us-male", "us-male", "egypt-male"],
            "lam": [0.0, 5.0, 5.0],
            "continuation": list(continuations),
            "count": [3, 2, 1],
        }
    )
    store.write_table("continuations", table)
    store.write_samples(table.drop(columns="count").assign(prompt=["x", "y", "z"]))
    store.write_summary({"pairs": 3}, model={"name": "tiny", "kind": "causal-lm"})
    store.close()
    return root


def test_report_holds_metadata_tables_and_links(tmp_path):
    html = render_report([load_run(cid_run(tmp_path / "run"))])
    assert "cid-audit" in html and "Most common continuations per λ" in html
    assert "Per-sample rows" in html and "git revision" in html
    # the group cell of each headline row links to the first sample row of that group and λ
    assert 'href="#r0-sample-2"' in html and 'id="r0-sample-2"' in html


def test_model_output_is_escaped(tmp_path):
    html = render_report([load_run(cid_run(tmp_path / "run"))])
    assert SCRIPT not in html and IMG not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html
    assert "Content-Security-Policy" in html  # and no script may run in the page at all


def test_no_secret_reaches_the_report(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_SECRETSECRET1234")
    monkeypatch.setenv("MY_API_KEY", "sk-live-abcdefgh")
    settings = {"model": "org/model?token=hf_SECRETSECRET1234", "api_token": "plain-secret-value"}
    run = cid_run(tmp_path / "run", ("said sk-live-abcdefgh", "ok", "ok"), settings)
    html = write_report([run]).read_text()
    assert "hf_SECRETSECRET1234" not in html and "sk-live-abcdefgh" not in html
    assert "plain-secret-value" not in html and "[redacted]" in html
    assert secret_values({"HF_TOKEN": "short", "PATH": "/usr/bin:/bin"}) == []


def test_only_credentials_are_redacted_not_names_that_contain_token(tmp_path):
    import re

    settings = {"max_new_tokens": 20, "api_key_env": "OPENAI_API_KEY", "hf_token": "abcdefgh12"}
    run = cid_run(tmp_path / "run", ("a", "b", "c"), settings)
    html = write_report([run]).read_text()
    tokenizers = re.search(r"<td>tokenizers</td>\s*<td[^>]*>([^<]*)</td>", html)
    assert tokenizers and tokenizers.group(1) not in ("", "[redacted]")  # a version, shown
    assert re.search(r"<td>max_new_tokens</td>\s*<td[^>]*>20</td>", html)
    assert "OPENAI_API_KEY" in html  # the *name* of the key's variable is no secret
    assert "abcdefgh12" not in html


def test_bad_run_directories_are_clear_errors(tmp_path):
    with pytest.raises(BiaslensError, match="no such run directory"):
        load_run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BiaslensError, match="not a biaslens run directory"):
        load_run(tmp_path / "empty")
    run = cid_run(tmp_path / "run")
    (run / "summary.json").unlink()
    with pytest.raises(BiaslensError, match="cid-audit run is incomplete .*resume"):
        load_run(run)
    newer = cid_run(tmp_path / "newer")
    summary = json.loads((newer / "summary.json").read_text())
    (newer / "summary.json").write_text(json.dumps({**summary, "format_version": 99}))
    with pytest.raises(BiaslensError, match="format 99 is newer"):
        load_run(newer)
    config = yaml.safe_load((newer / "config.yaml").read_text())
    (newer / "config.yaml").write_text(yaml.safe_dump({**config, "format_version": 7}))
    with pytest.raises(BiaslensError, match="format 7 is newer"):
        load_run(newer)
    (run / "summary.json").write_text("{not json")
    with pytest.raises(BiaslensError, match="unreadable summary"):
        load_run(run)


def test_several_runs_of_a_method_get_a_comparison(tmp_path):
    first, second = cid_run(tmp_path / "a"), cid_run(tmp_path / "b", ("x", "y", "z"))
    path = write_report([first, second], tmp_path / "both.html")
    html = path.read_text()
    assert "Comparison" in html and "cid-audit: Most common continuations per λ — 2 runs" in html
    assert html.count('class="run"') == 2


def test_run_commands_write_the_report(tmp_path, monkeypatch, capsys):
    from tests.test_cli import run_cli

    code, out, _ = run_cli(
        monkeypatch, capsys, "run", "sib-toy", "--n", "2000", "-o", str(tmp_path / "toy")
    )
    assert code == 0 and "report:" in out
    html = (tmp_path / "toy" / "report.html").read_text()
    assert "Toy SCM" in html and "data:image/png;base64," in html


def test_report_command_errors_are_one_line(tmp_path, monkeypatch, capsys):
    from tests.test_cli import _one_line_error, run_cli

    run = cid_run(tmp_path / "run")
    (run / "summary.json").unlink()
    code, _, err = run_cli(monkeypatch, capsys, "report", str(run))
    _one_line_error(code, err, "incomplete")


def test_the_report_reads_the_numbers_as_the_terminal_does(tmp_path):
    """Each headline metric's meaning, its values with intervals and n, and the warnings: an
    interval holding the no-bias value, values resting on few units."""
    from biaslens.methods.qa.metrics.unqover import MEASURES

    store = RunStore(tmp_path / "run", "unqover", {"model": "tiny"}, {})
    table = pd.DataFrame(
        [{"mu": 0.25, "mu_ci_low": 0.0, "mu_ci_high": 0.41, "units": 6, "contexts": 12,
          "eta": 0.5, "theta4": 0.2, "delta": 0.1, "epsilon": 0.3}]
    )  # fmt: skip
    store.write_table("unqover", table)
    from biaslens.framework.estimates import collect
    from biaslens.framework.registry import methods

    estimates = collect(methods()["unqover"], {"unqover": table})
    store.write_summary({}, model={"name": "tiny", "kind": "causal-lm"}, estimates=estimates)
    store.close()
    html = render_report([load_run(tmp_path / "run")])
    assert "Reading the numbers" in html
    mu = next(m for m in MEASURES if m.column == "mu")
    assert mu.definition.replace("'", "&#39;") in html and mu.better in html
    assert (
        "[0.0000, 0.4100] (95% cross-fitted lower and plug-in upper bound over subjects × "
        "templates, conservative)" in html
    )
    assert "6 subject pair × template units" in html
    assert "1 interval(s) include the no-bias value (0): μ;" in html
    assert "rest on fewer than 20 units (μ with n = 6 subject pair × template units)" in html
    # the table shown under it has no repeated model/method columns; the CSV has them
    csv = pd.read_csv(tmp_path / "run" / "unqover.csv")
    assert list(csv.columns[:2]) == ["model", "method"] and set(csv["method"]) == {"unqover"}
    assert "<th>method</th>" not in html
