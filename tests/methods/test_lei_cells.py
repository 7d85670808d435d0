"""lei-train grid groups as Ray tasks: the same selection and test results as a sequential run."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from biaslens.methods.qa.lei_train.method import make_settings
from biaslens.models import BackendConfig
from tests.conftest import DATA
from tests.helpers import run_lei_train

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_runtime():
    if os.environ.get("BIASLENS_REQUIRE_RAY") != "1":
        pytest.importorskip("ray")
    import ray

    from biaslens.models.runtime.ray_runtime import connect

    connect(None)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("name", ["llama", "roberta-qa"])
def test_parallel_cells_equal_a_sequential_run(name, ray_runtime, tiny_models, tmp_path):
    values = dict(
        model=str(tiny_models[name]), train_sizes=[64], learning_rates=[1e-4, 1e-3], epochs=[1, 2],
        train_batch_size=16, schedule="constant", top_k=2, dev_limit=6,
        tests=["ethnicity/noniid_test"], test_limit=6, reference="model",
    )  # fmt: skip
    cpu = BackendConfig(device="cpu", batch_size=8)
    sequential = run_lei_train(make_settings(**values), tmp_path / "seq", cpu, data_dir=DATA)
    parallel = run_lei_train(
        make_settings(**values, parallel_cells=2), tmp_path / "par", cpu, data_dir=DATA
    )
    assert parallel.selected["checkpoint"].tolist() == sequential.selected["checkpoint"].tolist()
    pd.testing.assert_frame_equal(
        parallel.grid.sort_values("checkpoint").reset_index(drop=True),
        sequential.grid.sort_values("checkpoint").reset_index(drop=True),
        atol=1e-5,
    )
    pd.testing.assert_frame_equal(parallel.results, sequential.results, atol=1e-5)
    assert all(
        (tmp_path / "par" / "checkpoints" / c / "DONE").is_file()
        for c in parallel.selected["checkpoint"]
    )
    # a rerun trains nothing: every group is finished
    again = run_lei_train(
        make_settings(**values, parallel_cells=2), tmp_path / "par", cpu, data_dir=DATA
    )
    assert again.cache_stats["computed"] == 0
