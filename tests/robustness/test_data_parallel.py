"""Data-parallel replicas that cannot run end in one line before anything waits: more replicas
than the machine holds are refused before any starts, a replica that cannot load names the
model, replicas the cluster cannot place stop after the placement timeout, an unreachable
``--ray-address`` after the connect timeout; a local runtime listens on loopback only."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.runtime.ray_runtime import admit, probe
from tests.helpers import import_ray, message_lines

GB = 10**9


# ------------------------------------------------------------------ admission (injected clusters)
@pytest.mark.parametrize(
    ("replicas", "resources", "device", "weights", "message"),
    [
        (
            3,
            {"CPU": 2, "memory": 20 * GB},
            "auto",
            GB,
            "needs 3 CPUs .* has 2: use --data-parallel 2",
        ),
        (64, {"CPU": 16}, "cpu", None, "needs 64 CPUs .* has 16"),
        (2, {"CPU": 8, "GPU": 1}, "cuda", None, "with --device cuda needs 2 GPUs .* has 1"),
        (1, {"CPU": 8}, "cuda:0", None, "needs 1 GPUs .* has 0"),
        (4, {"CPU": 8, "memory": 10 * GB}, "cpu", 3 * GB, "4 × 3.00 GB .* 10.00 GB .* 3 or fewer"),
        (2, {"CPU": 8, "memory": 1 * GB}, "auto", 2 * GB, "use --data-parallel 1 or fewer"),
    ],
    ids=["cpus", "many-cpus", "gpus", "no-gpu", "memory", "memory-for-none"],
)
def test_replicas_the_cluster_cannot_hold_are_refused_before_any_starts(
    replicas, resources, device, weights, message
):
    with pytest.raises(BiaslensError, match=message):
        admit(replicas, resources, device, weights)


@pytest.mark.parametrize(
    ("replicas", "resources", "device", "weights", "plan"),
    [
        (2, {"CPU": 8, "memory": 20 * GB}, "auto", GB, {"num_cpus": 4, "memory": GB}),
        (2, {"CPU": 8, "GPU": 2}, "auto", GB, {"num_gpus": 1, "num_cpus": 1}),
        (2, {"CPU": 8, "GPU": 2}, "cpu", None, {"num_cpus": 4}),
        (3, {"CPU": 3, "memory": 20 * GB}, "cpu", None, {"num_cpus": 1}),
    ],
    ids=["cpu-share", "gpu-each", "cpu-asked-beside-gpus", "served-no-memory"],
)
def test_replicas_that_fit_get_their_share(replicas, resources, device, weights, plan):
    assert admit(replicas, resources, device, weights) == plan


# ------------------------------------------------------------------ joining a cluster
@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never says anything (not a Ray cluster)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for connection in held:
        connection.close()


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.ray
@pytest.mark.parametrize("where", ["silent", "closed"])
def test_an_address_that_is_no_ray_cluster_ends_after_the_connect_timeout(
    where, silent_server, monkeypatch
):
    import_ray()
    address = silent_server if where == "silent" else _closed_port()
    monkeypatch.setenv("BIASLENS_RAY_CONNECT_TIMEOUT", "4")
    with pytest.raises(BiaslensError, match=f"cannot join Ray at {address}: "):
        probe(address)


@pytest.mark.parametrize("value", ["0", "-3", "abc", "inf", "nan"])
def test_a_connect_timeout_that_is_no_duration_is_named(value, monkeypatch):
    monkeypatch.setenv("BIASLENS_RAY_CONNECT_TIMEOUT", value)
    with pytest.raises(BiaslensError, match="BIASLENS_RAY_CONNECT_TIMEOUT=.*positive number"):
        probe("127.0.0.1:1")


@pytest.mark.ray
def test_the_cli_with_an_unreachable_ray_address_is_one_line(tiny_models, tmp_path):
    import_ray()
    address = _closed_port()
    env = {**os.environ, "BIASLENS_RAY_CONNECT_TIMEOUT": "4"}
    done = subprocess.run(
        [sys.executable, "-m", "biaslens", "run", "sib-mgc", "--model", str(tiny_models["llama"]),
         "--limit", "1", "--data-parallel", "2", "--ray-address", address,
         "-o", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode != 0, done.stderr
    lines = message_lines(done.stderr)
    assert len(lines) == 1 and f"cannot join Ray at {address}" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()


# ------------------------------------------------------------------ a local runtime
@pytest.fixture(scope="module")
def local_ray():
    ray = import_ray()
    from biaslens.models.runtime.ray_runtime import connect

    ray.shutdown()
    connect(None)
    yield ray
    ray.shutdown()


def _cpu_replicas(folder, replicas: int) -> BackendConfig:
    return BackendConfig(device="cpu", batch_size=4, data_parallel=replicas)


@pytest.mark.ray
def test_a_local_runtime_listens_on_loopback_only(local_ray):
    import psutil

    ours = {p.pid for p in psutil.Process().children(recursive=True)}
    listening = [
        c for c in psutil.net_connections(kind="inet") if c.status == "LISTEN" and c.pid in ours
    ]
    assert listening  # the runtime's servers were found
    exposed = [c.laddr for c in listening if not _loopback(c.laddr.ip)]
    assert not exposed


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback


@pytest.mark.ray
def test_more_replicas_than_cpus_are_refused_before_any_starts(local_ray, tiny_models):
    cpus = int(local_ray.cluster_resources()["CPU"])
    free = dict(local_ray.available_resources())
    with pytest.raises(BiaslensError, match=f"needs {cpus + 1} CPUs .* has {cpus}"):
        load_model(str(tiny_models["llama"]), _cpu_replicas(None, cpus + 1))
    assert local_ray.available_resources().get("CPU") == free.get("CPU")


@pytest.mark.ray
def test_a_replica_that_cannot_load_its_model_names_it(local_ray, tiny_models, tmp_path):
    model = shutil.copytree(tiny_models["llama"], tmp_path / "broken-model")
    (model / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(BiaslensError) as refused:
        load_model(str(model), _cpu_replicas(model, 2))
    message = str(refused.value)
    assert "\n" not in message and str(model) in message
    _wait_until_free(local_ray)


def _wait_until_free(ray, seconds: float = 30) -> None:
    """The replicas of a refused load are gone (Ray frees their CPUs shortly after)."""
    import time

    deadline = time.monotonic() + seconds
    while ray.available_resources().get("CPU") != ray.cluster_resources()["CPU"]:
        assert time.monotonic() < deadline, ray.available_resources()
        time.sleep(0.2)


@pytest.mark.ray
def test_replicas_the_cluster_cannot_place_stop_after_the_placement_timeout(
    local_ray, tiny_models, monkeypatch
):
    @local_ray.remote(num_cpus=1)
    class Holder:
        def ready(self) -> bool:
            return True

    holder = Holder.remote()
    local_ray.get(holder.ready.remote())  # one CPU taken by another job
    monkeypatch.setenv("BIASLENS_RAY_PLACEMENT_TIMEOUT", "5")
    try:
        cpus = int(local_ray.cluster_resources()["CPU"])
        with pytest.raises(BiaslensError, match=f"of {cpus} model replicas could be placed"):
            load_model(str(tiny_models["llama"]), _cpu_replicas(None, cpus))
    finally:
        local_ray.kill(holder)
