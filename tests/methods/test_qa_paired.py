"""Two models' UnQover and LEI numbers, paired over the contexts both answered: the hooks the
audit's comparison calls, on two tiny models' real runs, against plain μ of each run's own
samples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.qa.lei_eval.method import make_settings
from biaslens.methods.qa.paired import paired_lei, paired_unqover
from biaslens.models import BackendConfig
from tests.conftest import DATA
from tests.helpers import run_lei_eval, runner
from tests.methods.test_lei_eval import _plain_mu

CPU = BackendConfig(device="cpu", batch_size=8)


def test_two_models_lei_mu_difference_is_paired_over_the_same_contexts(tiny_backends, tmp_path):
    """Two models on the same draw: the difference of μ per set equals plain μ of each run's
    samples apart, with an interval around it over the units both hold; δ has none; runs of
    other draws have no paired interval, and say why."""
    settings = make_settings(domain="religion", per_cell=2, model="tiny")
    folders = {}
    for name in ("llama", "roberta-qa"):
        folders[name] = tmp_path / name
        run_lei_eval(settings, folders[name], lm=tiny_backends[name], data_dir=DATA)
    samples = {n: pd.read_parquet(f / "samples.parquet") for n, f in folders.items()}
    for name in ("ethical", "adversarial", "irrelevant", "none"):
        found = paired_lei(folders["llama"], folders["roberta-qa"], {"set": name}, "mu")
        parts = [s[s["set"] == name] for s in samples.values()]
        mu_a, mu_b = (_plain_mu(p) for p in parts)
        assert abs(mu_a - mu_b) > 1e-4  # two different models
        assert found["difference"] == pytest.approx(mu_a - mu_b, abs=1e-9)
        assert found["ci_low"] < found["difference"] < found["ci_high"], found["note"]
        assert found["n"] > 0 and found["units"] == "subject pair × template units"
    assert paired_lei(folders["llama"], folders["roberta-qa"], {"set": "none"}, "delta") is None
    other = tmp_path / "other-draw"
    run_lei_eval(
        settings.model_copy(update={"per_cell": 1}), other, lm=tiny_backends["llama"], data_dir=DATA
    )
    found = paired_lei(folders["llama"], other, {"set": "ethical"}, "mu")
    assert np.isnan(found["ci_low"]) and "different subject pair × template units" in found["note"]


def test_two_models_unqover_mu_difference(tiny_models, tmp_path):
    """UnQover's μ of two extractive models on the same questions, paired."""
    run_unqover = runner("unqover")
    folders = []
    for model in (str(tiny_models["roberta-qa"]), str(tiny_models["llama"])):
        folder = tmp_path / f"run-{len(folders)}"
        run_unqover(None, folder, CPU, data_dir=DATA, model=model, domain="religion", limit=300)
        folders.append(folder)
    found = paired_unqover(folders[0], folders[1], {}, "mu")
    mus = []
    for folder in folders:
        s = pd.read_parquet(folder / "samples.parquet")
        mus.append(_plain_mu(s.assign(intervention_id="none")))
    assert found["difference"] == pytest.approx(mus[0] - mus[1], abs=1e-9)
    assert found["ci_low"] < found["difference"] < found["ci_high"], found["note"]
    assert paired_unqover(folders[0], folders[1], {}, "delta") is None
