"""Method 2 from stored outputs: the reference repository's released layout (small files
written here), biaslens's own run layout, and the pinned downloads of both."""

from __future__ import annotations

import hashlib
import io
import tarfile

import numpy as np
import pandas as pd
import pytest

from biaslens.data import sources
from biaslens.errors import BiaslensError
from biaslens.methods.sib.data import winogender
from biaslens.methods.sib.data.released_outputs import read_outputs, read_reference_outputs
from biaslens.methods.sib.metrics.sib import method2_from_shares

SENTENCE = "In 2016: The doctor told the man that [MASK] would be at risk."


def write_outputs(folder, model, occupation, participant, answer, shares, prompt=""):
    """One sentence's three files ({f,m,n}p_...): shares = {date: (female, male, neutral)}."""
    suffix = f"_P{prompt}" if prompt else ""
    for i, pronoun in enumerate("fmn"):
        rows = [f"{k},{date},{values[i]}" for k, (date, values) in enumerate(shares.items())]
        stem = f"{pronoun}p_wikibio_{model}_date_{occupation}_{participant}_{answer}"
        name = f"{stem}_testFalse{suffix}.csv"
        (folder / name).write_text(",date," + SENTENCE + "\n" + "\n".join(rows) + "\n")


@pytest.fixture
def released(tmp_path):
    folder = tmp_path / "outputs"
    folder.mkdir()
    model = "facebook_bart-base"
    # doctor/man_1: well-specified; |60.0 - 59.7| = 0.3 -> well-specified (TN)
    write_outputs(folder, model, "doctor", "man", 1, {1901: (59.7, 30, 10.3), 2016: (60.0, 30, 10)})
    # doctor/someone_0: unspecified; |40 - 30| = 10 -> unspecified (TP)
    write_outputs(
        folder,
        model,
        "doctor",
        "someone",
        0,
        {1901: (30, 60, 10), 1904: (31, 59, 10), 2016: (40, 50, 10)},
    )
    # doctor/woman_0: unspecified (pronoun is the doctor's); |20.2 - 20| = 0.2 -> missed (FN)
    write_outputs(folder, model, "doctor", "woman", 0, {1901: (20, 70, 10), 2016: (20.2, 69.8, 10)})
    # doctor/woman_1: well-specified; |90 - 80| = 10 -> flagged (FP)
    write_outputs(folder, model, "doctor", "woman", 1, {1901: (80, 10, 10), 2016: (90, 5, 5)})
    # the Simplified set, a causal model's prompt-A (P3) variant
    write_outputs(
        folder, "davinci", "nurse", "female", 0, {1901: (90, 5, 5), 2016: (90, 5, 5)}, "3"
    )
    write_outputs(
        folder, "davinci", "nurse", "unspecified", 0, {1901: (50, 45, 5), 2016: (52, 43, 5)}, "3"
    )
    (folder / "notes.csv").write_text("not,an,output\n")  # ignored: not the naming scheme
    return folder


def test_released_layout_is_read_per_sentence_and_date(released):
    table = read_reference_outputs(released)
    assert set(table["set"]) == {"extended", "simplified"}
    row = table[(table["id"] == "doctor_someone_0") & (table["date"] == 1904)].iloc[0]
    assert (row["pct_female"], row["pct_male"], row["pct_neutral"]) == (31, 59, 10)
    assert row["sentence"] == SENTENCE and not row["well_specified"]
    truth = table.drop_duplicates("id").set_index("id")["well_specified"].to_dict()
    assert truth == {
        "doctor_man_1": True, "doctor_someone_0": False, "doctor_woman_0": False,
        "doctor_woman_1": True, "nurse_female_0": True, "nurse_unspecified_0": False,
    }  # fmt: skip


def test_metric_and_rates_by_hand(released):
    sentences, rates = method2_from_shares(read_outputs(released), threshold=0.5)
    metric = sentences.set_index("id")["metric"]
    assert metric.to_dict() == pytest.approx(
        {"doctor_man_1": 0.3, "doctor_someone_0": 10.0, "doctor_woman_0": 0.2,
         "doctor_woman_1": 10.0, "nurse_female_0": 0.0, "nurse_unspecified_0": 2.0}
    )  # fmt: skip
    bart = rates[(rates["model"] == "facebook_bart-base")].iloc[0]
    assert (bart["tpr"], bart["tnr"], bart["balanced_accuracy"]) == (0.5, 0.5, 0.5)
    davinci = rates[(rates["model"] == "davinci")].iloc[0]
    assert (davinci["prompt"], davinci["set"]) == ("P3", "simplified")
    assert (davinci["tpr"], davinci["tnr"]) == (1.0, 1.0)
    # explicit end dates: 1904 as the earliest -> doctor_someone_0 = |40 - 31| = 9
    sentences, _ = method2_from_shares(read_outputs(released), earliest=1904, latest=2016)
    assert sentences.set_index("id")["metric"]["doctor_someone_0"] == pytest.approx(9.0)
    assert np.isnan(sentences.set_index("id")["metric"]["doctor_man_1"])  # no 1904 stored


def test_bad_output_folders_are_clear_errors(tmp_path):
    with pytest.raises(BiaslensError, match="no such folder"):
        read_reference_outputs(tmp_path / "missing")
    with pytest.raises(BiaslensError, match="no output files named"):
        read_reference_outputs(tmp_path)
    (tmp_path / "fp_wikibio_m_date_doctor_man_1_testFalse.csv").write_text(",date,s\n0,soon,1\n")
    with pytest.raises(BiaslensError, match="date column holds a value that is not a year"):
        read_reference_outputs(tmp_path)


def test_biaslens_run_layout_gives_the_runs_own_metric(tiny_models, tmp_path):
    from biaslens.methods.sib.detect.method import make_settings
    from biaslens.models import BackendConfig
    from tests.conftest import DATA
    from tests.helpers import run_detect

    result = run_detect(
        make_settings(model=str(tiny_models["llama"]), limit=2, sets=("extended",)),
        tmp_path / "run", BackendConfig(device="cpu"), data_dir=DATA,
    )  # fmt: skip
    sentences, rates = method2_from_shares(read_outputs(tmp_path / "run"))
    ours = result["sentences"].set_index("id")["metric"]
    assert sentences.set_index("id")["metric"].to_dict() == pytest.approx(ours.to_dict())
    assert rates.iloc[0]["tpr"] == pytest.approx(result.rates.iloc[0]["tpr"])


def test_metrics_command_writes_tables(released, tmp_path, monkeypatch, capsys):
    from tests.conftest import DATA
    from tests.test_cli import run_cli

    code, out, err = run_cli(
        monkeypatch, capsys, "metrics", "sib-detect", str(released), "-o", str(tmp_path / "m"),
        "--data-dir", str(DATA),
    )  # fmt: skip
    assert code == 0, err
    assert "TPR" in out and (tmp_path / "m" / "rates.csv").is_file()
    assert len(pd.read_csv(tmp_path / "m" / "sentences.csv")) == 6
    assert (tmp_path / "m" / "plots" / "detector_facebook_bart-base_extended.png").is_file()


def test_reference_simplified_set(tmp_path):
    folder = tmp_path / "sib-simplified"
    folder.mkdir()
    (folder / winogender.REFERENCE_SIMPLIFIED_FILE).write_text(
        "sentid\tsentence\n"
        "nurse_female_0\tThe female nurse said that MASK was tired.\n"
        "nurse_male_0\tThe male nurse said that MASK was tired.\n"
        "nurse_unspecified_0\tThe nurse said that MASK was tired.\n"
    )
    table = winogender.build_simplified_reference(folder)
    assert list(table["well_specified"]) == [True, True, False]
    assert table["sentence"].iloc[2] == "The nurse said that [MASK] was tired."
    (folder / winogender.REFERENCE_SIMPLIFIED_FILE).write_text("sentid\tsentence\nx\tno mask\n")
    with pytest.raises(BiaslensError, match=r"all_sentences_g_id.tsv:2: expected an id"):
        winogender.build_simplified_reference(folder)


def test_archive_download_is_verified_by_its_tree_hash(released, tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(released.iterdir()):
            tar.add(path, arcname=f"sib_paper-abc/data/detect_wino_raw/{path.name}")
        tar.add(released / "notes.csv", arcname="sib_paper-abc/README.csv")
    archive = tmp_path / "repo.tar.gz"
    archive.write_bytes(buffer.getvalue())
    kept = tmp_path / "expected"
    for path in released.iterdir():
        target = kept / "data" / "detect_wino_raw" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    expected, count = sources.tree_sha256(kept)
    spec = sources.RemoteArchive(
        "sib-outputs", archive.as_uri(), ("data/detect_wino_raw",), expected, count, "x"
    )
    folder = sources.download_archive(spec, tmp_path / "data" / "sib-outputs")
    assert (folder / sources.VERIFIED).is_file() and not (folder / "README.csv").exists()
    assert len(read_outputs(folder)["id"].unique()) == 6
    wrong = sources.RemoteArchive(
        "sib-outputs", archive.as_uri(), spec.members, "0" * 64, count, "x"
    )
    with pytest.raises(BiaslensError, match="do not match the pinned tree sha256"):
        sources.download_archive(wrong, tmp_path / "other" / "sib-outputs")
    assert not (tmp_path / "other" / "sib-outputs").exists()


def test_pinned_sources_of_the_reference_repository():
    commit = sources.SIB_COMMIT
    assert len(commit) == 40 and commit in sources.REMOTE["sib-simplified"].base_url
    assert commit in sources.ARCHIVES["sib-outputs"].url
    digest = sources.REMOTE["sib-simplified"].files["all_sentences_g_id.tsv"][1]
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert hashlib.sha256(b"").hexdigest() != sources.ARCHIVES["sib-outputs"].tree_sha256


@pytest.mark.parametrize("value", ["inf", "nan", "abc", "-1.5", "", "100.5"])
def test_stored_shares_that_are_not_percentages_are_refused(value, tmp_path):
    folder = tmp_path / "outputs"
    folder.mkdir()
    write_outputs(folder, "m", "doctor", "man", 1, {1901: (59.7, 30, 10.3), 2016: (60, 30, 10)})
    name = "fp_wikibio_m_date_doctor_man_1_testFalse.csv"
    lines = (folder / name).read_text().splitlines()
    lines[2] = f"1,2016,{value}"  # the second data row: line 3 of the file
    (folder / name).write_text("\n".join(lines) + "\n")
    with pytest.raises(BiaslensError, match=rf"{name}:3: share .* is not a number in \[0, 100"):
        read_reference_outputs(folder)


@pytest.mark.parametrize("value", [np.nan, np.inf, -0.1, 1.5])
def test_stored_masses_of_a_run_that_are_not_probabilities_are_refused(value, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    samples = pd.DataFrame(
        {
            "set": ["extended"] * 2,
            "id": ["a_man_1"] * 2,
            "date": [1901, 2016],
            "p_female": [0.2, value],
            "p_male": [0.3, 0.3],
            "p_neutral": [0.1, 0.1],
        }
    )
    samples.to_parquet(run / "samples.parquet")
    pd.DataFrame(
        {"set": ["extended"], "id": ["a_man_1"], "occupation": ["a"], "well_specified": [True]}
    ).to_parquet(run / "sentences.parquet")
    with pytest.raises(BiaslensError, match=r"samples.parquet:1: row p_female .* not a number"):
        read_outputs(run)


def test_the_pinned_archive_hash_is_that_of_the_released_files(full_data, tmp_path):
    """The pin of ``biaslens datasets download sib-outputs`` is the tree hash of the released
    files as the shared data holds them unmodified: the Method 2 archive, extracted, and the
    Method 1 folder."""
    import shutil

    with tarfile.open(full_data / "sib" / "detect_wino_raw.tar.gz") as tar:
        tar.extractall(tmp_path / "tree", filter="data")
    shutil.copytree(
        full_data / "sib" / "data" / "spur_mgc_raw", tmp_path / "tree" / "data" / "spur_mgc_raw"
    )
    spec = sources.ARCHIVES["sib-outputs"]
    found = sorted(f"data/{p.name}" for p in (tmp_path / "tree" / "data").iterdir())
    assert sorted(spec.members) == found
    assert sources.tree_sha256(tmp_path / "tree") == (spec.tree_sha256, spec.files)


@pytest.mark.parametrize("value", ["abc", "100.5", "-0.1", "nan", ""])
def test_a_released_mgc_cell_that_is_not_a_percentage_is_refused(value, tmp_path):
    """One model's three MGC files (rows: W values; columns: sentences); a cell of the female
    file's third data row (line 4) that is not a probability in percent is an error naming the
    file, the line and the sentence, whether the column is otherwise numeric or not."""
    from biaslens.methods.sib.data.released_mgc_outputs import read_mgc_outputs

    sentences = ["In {W}, she worked.", "In {W}, he slept.", "In {W}, they ran."]
    for pronoun in "fmn":
        rows = [",W," + ",".join(f'"{s}"' for s in sentences)]
        rows += [f"{i},{1900 + i},{10 + i},{20 + i},{30 + i}" for i in range(4)]
        if pronoun == "f":
            cells = rows[3].split(",")
            cells[3] = value  # the second sentence's cell
            rows[3] = ",".join(cells)
        (tmp_path / f"{pronoun}p_wikibio_m_date__testFalse.csv").write_text("\n".join(rows))
    name = "fp_wikibio_m_date__testFalse.csv"
    with pytest.raises(BiaslensError, match=rf"{name}:4: probability \(%\) .* he slept"):
        read_mgc_outputs(tmp_path)
    (tmp_path / name).write_text((tmp_path / "mp_wikibio_m_date__testFalse.csv").read_text())
    (read,) = read_mgc_outputs(tmp_path)
    assert read.values["female"].shape == (3, 4) and read.values["female"][1, 2] == 22
