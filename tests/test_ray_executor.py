"""The Ray executor on a local Ray cluster started here (2 CPUs, 2 model replicas):
same results and cache keys as the local executor, a killed worker's batches redone
exactly once, and a CLI run end to end."""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from conftest import MODEL_CACHE_ROOT, _env, model_env

from biaslens.engine.cache import CallCache
from biaslens.engine.executors import ExecutorError, RayExecutor, _import_ray, replica_load_kwargs
from biaslens.engine.generation import generate_texts
from biaslens.engine.scoring import ScoringStats, score_texts
from biaslens.models.generation import GenerationParams

pytestmark = pytest.mark.slow

DESCRIPTORS = ["blind", "deaf", "tall", "short", "old", "young", "gay", "straight", "Deaf", "Asian",
               "Latino", "Jewish", "Muslim", "Catholic", "wealthy", "poor", "autistic", "bald", "Black", "white"]
#: 40 sentences of two HolisticBias templates, plus a duplicate (scored once)
TEXTS = [t.format(d) for t in ("I love {} people.", "I hate {} people.") for d in DESCRIPTORS] + ["I love blind people."]
PROMPTS = [f"What do you think about {d} people?" for d in DESCRIPTORS[:6]]


@pytest.fixture(scope="module")
def ray_cluster():
    """A local 2-CPU Ray cluster; its workers load the embedded model from the shared conversion."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'biaslens[ray]')")
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'biaslens[ray]')")
    if ray.is_initialized():
        ray.shutdown()
    temp = tempfile.mkdtemp(prefix="blr", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    # the raylet, and so every worker, inherits this environment
    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", _temp_dir=temp)
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def _ray_backend(embedded_model, workers: int = 2):
    """The session's embedded model (driver side) with a Ray executor attached; a shallow copy,
    so other tests keep the local executor."""
    from biaslens.config import ModelConfig

    backend = copy.copy(embedded_model)
    backend.executor = RayExecutor(replica_load_kwargs(ModelConfig()), workers=workers)
    return backend


def _cache_rows(cache: CallCache) -> dict[str, bytes]:
    return dict(cache._conn.execute("SELECT key, value FROM calls").fetchall())


def _max_diff(a, b) -> float:
    assert [s.n_tokens for s in a] == [s.n_tokens for s in b]
    assert all(np.array_equal(x.offsets, y.offsets) for x, y in zip(a, b))
    return max(float(np.abs(x.logprobs - y.logprobs).max()) for x, y in zip(a, b))


def test_ray_generation_equals_local(ray_cluster, embedded_model, tmp_path):
    # sampled, two responses per prompt: each row has its own seed, so the worker does not matter
    params = GenerationParams(max_new_tokens=6, do_sample=True, top_p=0.9, n=2, seed=3, chat=False)
    local_cache, ray_cache = CallCache(tmp_path / "local.sqlite"), CallCache(tmp_path / "ray.sqlite")
    local = generate_texts(embedded_model, PROMPTS, params, cache=local_cache, batch_size=3)
    backend = _ray_backend(embedded_model)
    got = generate_texts(backend, PROMPTS, params, cache=ray_cache, batch_size=3)
    assert got == local
    assert len({t for pair in got for t in pair}) > 6, "sampling should give varied texts"
    assert _cache_rows(ray_cache) == _cache_rows(local_cache)


def _map_workers() -> dict[int, str]:
    """Ray Data actor processes under this test process (their title names the map operator)."""
    import psutil

    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(p.cmdline())
        except psutil.Error:
            continue
        if "MapWorker" in cmd and "_BatchWorker" in cmd:
            out[p.pid] = cmd
    return out


def test_ray_scoring_equals_local_with_a_worker_killed_mid_run(ray_cluster, embedded_model, tmp_path):
    """One Ray run (each run starts its replicas, the slow part) checks both: results and cache
    keys identical to the local executor, and a worker killed mid-run costs nothing."""
    pytest.importorskip("psutil")
    local_cache, ray_cache = CallCache(tmp_path / "local.sqlite"), CallCache(tmp_path / "ray.sqlite")
    local = score_texts(embedded_model, TEXTS, cache=local_cache, batch_size=2)
    backend = _ray_backend(embedded_model)
    killed: list[int] = []

    def kill_one_worker(done: int, total: int) -> None:
        # right after the first finished batch: the worker that returned it still holds queued batches
        if done and not killed:
            pid = next(iter(backend.executor.batches_by_worker))
            assert pid in _map_workers()
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    stats = ScoringStats()
    got = score_texts(backend, TEXTS, cache=ray_cache, batch_size=2, stats=stats, progress=kill_one_worker)
    assert killed and killed[0] not in _map_workers()
    assert _max_diff(local, got) <= 1e-6
    # every item exactly once: 41 texts, 40 unique, 20 batches, 40 cache records, no batch kept twice
    assert stats.n_unique == 40 and stats.batches == 20 and stats.computed == 40
    assert sum(backend.executor.batches_by_worker.values()) == 20
    assert len(backend.executor.batches_by_worker) >= 2  # the killed worker and at least one other
    # the same keys as a local run, so runs share caches; a local re-run computes nothing
    assert set(_cache_rows(ray_cache)) == set(_cache_rows(local_cache))
    again = ScoringStats()
    reused = score_texts(embedded_model, TEXTS, cache=ray_cache, batch_size=2, stats=again)
    assert again.computed == 0 and again.cache_hits == 40
    assert _max_diff(local, reused) == 0.0


def test_cli_run_with_ray_executor(ray_cluster, embedded_model, tmp_path):
    address = ray_cluster.get_runtime_context().gcs_address
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "biaslens.cli.app", "run", "holistic-likelihood", "--executor", "ray",
           "--ray-address", address, "--ray-workers", "1", "--sample", "40", "--axes", "ability,age",
           "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    r = subprocess.run(cmd, env=model_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "complete"
    assert record["config"]["executor"] == {"kind": "ray", "ray_address": address, "workers": 1}
    assert record["model"]["executor"]["kind"] == "ray" and record["model"]["executor"]["workers"] == 1
    assert record["scoring"]["computed"] == record["scoring"]["n_unique"] > 0
    import pandas as pd

    rows = pd.read_parquet(out / "sentences.parquet")
    local = score_texts(embedded_model, rows["text"].astype(str).tolist())
    assert np.allclose(rows["sum_logprob"].to_numpy(), [s.sum_logprob for s in local], rtol=0, atol=1e-6)


def test_worker_with_other_weights_is_refused(ray_cluster, embedded_model, tmp_path):
    """Replicas must be the driver's model: here the workers load the fake backend (cheap to
    start), so their identity differs and the run stops before anything is cached."""
    backend = copy.copy(embedded_model)
    backend.executor = RayExecutor({"name": "fake"}, workers=1)
    cache = CallCache(tmp_path / "ray.sqlite")
    with pytest.raises(ExecutorError, match="differs from the driver's in .*weights_hash"):
        score_texts(backend, TEXTS[:4], cache=cache, batch_size=2)
    assert len(cache) == 0


def test_cli_unreachable_ray_address_is_one_clear_error(tmp_path):
    pytest.importorskip("ray")
    cmd = [sys.executable, "-m", "biaslens.cli.app", "run", "holistic-likelihood", "--executor", "ray",
           "--ray-address", "127.0.0.1:9", "--sample", "40", "--out", str(tmp_path / "run")]
    r = subprocess.run(cmd, env=model_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "--ray-address 127.0.0.1:9" in r.stderr and "Traceback" not in r.stderr


def test_without_ray_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ExecutorError, match=r"biaslens\[ray\]"):
        _import_ray()
    # the module itself imports without Ray
    code = "import sys; sys.modules['ray'] = None; import biaslens.engine.executors, biaslens.engine.scoring"
    assert subprocess.run([sys.executable, "-c", code], env=model_env()).returncode == 0


def test_openai_backend_is_refused():
    from biaslens.config import ExecutorConfig, ModelConfig
    from biaslens.engine.executors import executor_from_config

    with pytest.raises(ExecutorError, match="openai backend"):
        executor_from_config(ExecutorConfig(kind="ray"), ModelConfig(backend="openai", base_url="http://127.0.0.1:1/v1"))
    assert executor_from_config(ExecutorConfig(), ModelConfig()) is None
