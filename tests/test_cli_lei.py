"""`biaslens metrics unqover` and `biaslens run lei-eval` from the command line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.methods.qa.data.unqover_predictions import read_predictions
from biaslens.methods.qa.metrics.unqover import model_summary
from tests.conftest import DATA
from tests.methods.qa.data.test_unqover_predictions import dump
from tests.test_cli import _one_line_error, run_cli


def test_metrics_unqover_prints_and_writes_the_definitions(tmp_path, monkeypatch, capsys):
    dump(tmp_path / "p.json")
    code, out, err = run_cli(
        monkeypatch,
        capsys,
        "metrics",
        "unqover",
        str(tmp_path / "p.json"),
        "-o",
        str(tmp_path / "tables"),
    )
    assert code == 0 and "UnQover metrics" in out and "0.2500" in out
    # one context: a cell of one unit, whose plug-in values are mostly noise, said as a warning
    assert "sparse cells: μ, η and θ4 rest on a median of 1" in " ".join((out + err).split())
    written = pd.read_csv(tmp_path / "tables" / "model.csv")
    expected = model_summary(read_predictions(tmp_path / "p.json"))
    assert written["mu"].iloc[0] == pytest.approx(expected["mu"].iloc[0])
    assert (tmp_path / "tables" / "cluster_attribute.csv").is_file()


def _shuffled_dump(path, seed: int = 0) -> None:
    """A prediction file from random scores (4 subjects, 2 interventions), keys shuffled so
    that the two subject orders of a context lie far apart."""
    import random

    from tests.methods.qa.metrics.test_unqover_stream import SUBJECTS, random_scores

    table = random_scores(seed, interventions=2)
    data = {}
    for row in table[~table["negated"]].itertuples():
        negated = table[
            (table["first"] == row.first) & (table["second"] == row.second)
            & (table["template"] == row.template) & (table["attribute"] == row.attribute)
            & (table["intervention"] == row.intervention) & table["negated"]
        ].iloc[0]  # fmt: skip
        fields = [SUBJECTS[row.first], SUBJECTS[row.second], row.first, row.second]
        fields += [row.template, "c", row.attribute, row.attribute, row.intervention]
        key = "|".join(fields)

        def q(first, second):
            return {"question": "?", "pred": "", "ans0": {"text": "", "start": first, "end": 1},
                    "ans1": {"text": "", "start": second, "end": 1}}  # fmt: skip

        # S = sqrt(start · 1): start = s² gives back the drawn score
        data[key] = {"context": "", "q0": q(row.s_first**2, row.s_second**2),
                     "q1": q(negated.s_first**2, negated.s_second**2)}  # fmt: skip
    keys = list(data)
    random.Random(seed).shuffle(keys)
    path.write_text(json.dumps({k: data[k] for k in keys}))


@pytest.mark.parametrize("by_intervention", [False, True])
def test_metrics_unqover_streams_a_shuffled_file_to_the_whole_table_values(
    tmp_path, monkeypatch, capsys, by_intervention
):
    from biaslens.methods.qa.data import unqover_predictions
    from biaslens.methods.qa.metrics.unqover import comparative_scores, subject_bias

    _shuffled_dump(tmp_path / "p.json")
    monkeypatch.setattr(unqover_predictions, "CHUNK_KEYS", 5)  # 40 chunks that cut contexts
    flag = ["--by-intervention"] if by_intervention else []
    args = ["metrics", "unqover", str(tmp_path / "p.json"), *flag, "-o", str(tmp_path / "t")]
    code, out, _ = run_cli(monkeypatch, capsys, *args)
    assert code == 0, out
    whole = read_predictions(tmp_path / "p.json")
    by = ("intervention",) if by_intervention else ()
    within = () if by else ("intervention",)
    expected = model_summary(whole, by=by, within=within)
    written = pd.read_csv(tmp_path / "t" / "model.csv")
    assert len(written) == (2 if by_intervention else 1)
    for column in ("mu", "eta", "theta4", "delta", "epsilon", "contexts"):
        assert written[column].to_numpy() == pytest.approx(expected[column].to_numpy(), abs=1e-9)
    subjects = subject_bias(comparative_scores(whole, (*by, *within)), by)
    got = pd.read_csv(tmp_path / "t" / "subjects.csv")
    assert got["max_abs_gamma"].to_numpy() == pytest.approx(
        subjects["max_abs_gamma"].to_numpy(), abs=1e-9
    )


def test_metrics_unqover_bad_file_is_one_line(tmp_path, monkeypatch, capsys):
    data = dump(tmp_path / "p.json")
    data[next(iter(data))].pop("q1")
    (tmp_path / "p.json").write_text(json.dumps(data))
    code, _, err = run_cli(monkeypatch, capsys, "metrics", "unqover", str(tmp_path / "p.json"))
    _one_line_error(code, err, "lacks q1")


def test_lei_eval_runs_and_rejects_bad_input(tiny_models, tmp_path, monkeypatch, capsys):
    def lei_eval(model: str, output: str, limit: str):
        return run_cli(
            monkeypatch, capsys, "run", "lei-eval", "-m", str(tiny_models[model]),
            "--limit", limit, "--data-dir", str(DATA), "-o", str(tmp_path / output),
        )  # fmt: skip

    code, out, _ = lei_eval("gpt2", "run", "4")
    assert code == 0 and "LEI μ" in out and "adversarial" in out
    assert "no specified-context data for religion" in out.replace("\n", " ")
    code, _, err = run_cli(monkeypatch, capsys, "run", "lei-eval", "--domain", "caste")
    _one_line_error(code, err, "unknown domain 'caste'")
    code, _, err = lei_eval("bert-mlm", "r2", "2")
    _one_line_error(code, err, "needs an extractive-QA, seq2seq or causal model")


def test_lei_train_runs_from_the_command_line(tiny_models, tmp_path, monkeypatch, capsys):
    args = ["run", "lei-train", "-m", str(tiny_models["llama"]), "--train-sizes", "64"]
    args += ["--lrs", "1e-4", "--epochs", "1", "--dev-limit", "4", "--test-limit", "4"]
    args += ["--tests", "ethnicity/noniid_test", "--data-dir", str(DATA)]
    code, out, _ = run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / "run"))
    assert code == 0 and "Selected checkpoints" in out and "n64-lr0.0001-ep1" in out
    assert (tmp_path / "run" / "results.csv").is_file()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--lrs", "0"], "every learning rate must be > 0"),
        (["--lrs", "1e-5", "fast"], "--learning-rates: expected numbers"),
        (["--qa-file", "missing.json"], "missing.json: file not found"),
        (["--qa-mode", "generative", "--reference", "file"], "needs --reference model"),
        (["--max-requests", "10"], "lei-train fine-tunes the model in process"),
    ],
)
def test_lei_train_bad_input_is_one_line(
    tiny_models, tmp_path, monkeypatch, capsys, extra, expected
):
    args = ["run", "lei-train", "-m", str(tiny_models["llama"]), "--train-sizes", "64"]
    args += ["--data-dir", str(DATA), "-o", str(tmp_path / "run"), *extra]
    code, _, err = run_cli(monkeypatch, capsys, *args)
    _one_line_error(code, err, expected)
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_metrics_unqover_takes_the_subjects_as_drawn_or_fixed(tmp_path, monkeypatch, capsys):
    """``--subjects-are``: fixed rests on the templates alone (df = templates − 1), drawn on
    the fewer of subjects and templates; auto decides by the file's lists (not female and
    male: fixed), and the line under the table says which; a bad value is one line."""
    _shuffled_dump(tmp_path / "p.json")
    got = {}
    for choice in ("auto", "drawn", "fixed"):
        out_dir = tmp_path / choice
        args = ["metrics", "unqover", str(tmp_path / "p.json"), "--subjects-are", choice,
                "-o", str(out_dir)]  # fmt: skip
        code, out, _ = run_cli(monkeypatch, capsys, *args)
        assert code == 0, out
        got[choice] = pd.read_csv(out_dir / "model.csv").iloc[0]
        assert f"as {'fixed' if choice != 'drawn' else 'draws'}" in " ".join(out.split())
    assert got["auto"]["subjects_are"] == "fixed" and got["drawn"]["subjects_are"] == "drawn"
    assert got["fixed"]["df"] == got["fixed"]["templates"] - 1
    assert got["drawn"]["df"] == min(got["drawn"]["subjects"], got["drawn"]["templates"]) - 1
    code, _, err = run_cli(
        monkeypatch, capsys, "metrics", "unqover", str(tmp_path / "p.json"),
        "--subjects-are", "some",
    )  # fmt: skip
    _one_line_error(code, err, "subjects_are")
    assert "'some'" in err and "'drawn'" in err


def test_metrics_unqover_refuses_the_maxima_intervals_of_an_incomplete_file(
    tmp_path, monkeypatch, capsys
):
    """A file that lacks one context (a subject pair never asked one attribute at any
    template) gets no interval for μ, η, θ4, with the reason; δ's and ε's are not refused for it."""
    _shuffled_dump(tmp_path / "p.json")
    data = json.loads((tmp_path / "p.json").read_text())
    first = next(iter(data)).split("|")
    pair, attribute = {first[2], first[3]}, first[6]

    def asks(key):
        fields = key.split("|")
        return {fields[2], fields[3]} == pair and fields[6] == attribute

    kept = {k: v for k, v in data.items() if not asks(k)}
    assert 0 < len(data) - len(kept) < len(data)
    (tmp_path / "p.json").write_text(json.dumps(kept))
    code, out, _ = run_cli(
        monkeypatch, capsys, "metrics", "unqover", str(tmp_path / "p.json"), "-o",
        str(tmp_path / "t"),
    )  # fmt: skip
    assert code == 0 and "not a complete design" in " ".join(out.split())
    row = pd.read_csv(tmp_path / "t" / "model.csv").iloc[0]
    for metric in ("mu", "eta", "theta4"):
        assert pd.isna(row[f"{metric}_ci_low"]) and "not a complete" in row[f"{metric}_ci_note"]
    for metric in ("delta", "epsilon"):  # means of per-context terms: no complete design
        # needed; an interval that holds them, or refused for too few templates only
        if pd.isna(row[f"{metric}_ci_low"]):
            assert "degree(s) of freedom" in row[f"{metric}_ci_note"]
            assert row["templates"] < 5
        else:
            assert row[f"{metric}_ci_low"] <= row[metric] <= row[f"{metric}_ci_high"]
