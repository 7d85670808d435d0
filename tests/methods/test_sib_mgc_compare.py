"""Method 1 across several models (Fig. 3(b))."""

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.sib.mgc.compare import read_models_file
from biaslens.methods.sib.mgc.settings import make_settings
from biaslens.models import BackendConfig
from biaslens.runner import run_comparison


def run_mgc_models(models, settings, output, backend=None):
    values = settings.model_dump(exclude={"model"})
    return run_comparison("sib-mgc", models, output=output, backend=backend, **values)


def test_several_models_in_one_invocation(tiny_models, tmp_path):
    models = [str(tiny_models["llama"]), str(tiny_models["gpt2"])]
    settings = make_settings(limit=1, prompts=("A", "B"))
    result = run_mgc_models(models, settings, tmp_path, BackendConfig(device="cpu"))
    assert len(result.runs) == 2 and all(
        (r.run_dir / "summary.json").is_file() for r in result.runs
    )
    table = pd.read_csv(tmp_path / "comparison.csv")
    assert len(table) == 4  # 2 models x 2 W kinds
    for run in result.runs:
        mean = run.slopes.groupby("w_kind")["female_minus_male_slope"].mean()
        mine = table[table.model == run.summary["model"]["name"]].set_index("w_kind")
        assert mine["female_minus_male_slope"].to_dict() == pytest.approx(mean.to_dict())
        assert (mine["num_parameters"] == run.summary["model"]["num_parameters"]).all()
    assert {p.name for p in result.plots} == {"cross_model_dates.png", "cross_model_places.png"}
    with pytest.raises(BiaslensError, match="listed twice"):
        run_mgc_models([models[0], models[0]], settings, tmp_path / "x")


def test_models_file(tmp_path):
    path = tmp_path / "models.txt"
    path.write_text("# models to compare\ndefault\n\n/some/folder  # local\n")
    assert read_models_file(path) == ["default", "/some/folder"]
    path.write_text("# nothing\n")
    with pytest.raises(BiaslensError, match="no models listed"):
        read_models_file(path)
    with pytest.raises(BiaslensError, match="models file .*missing.txt not found"):
        read_models_file(tmp_path / "missing.txt")
