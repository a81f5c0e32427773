"""Where batches of model calls run.

The engine (:func:`~biaslens.engine.scoring.score_texts`,
:func:`~biaslens.engine.generation.generate_texts`) keeps deduplication, cache
lookups, batch order and the per-batch cache commits on the driver. An executor
only maps "list of batches -> one result per batch", yielding ``(batch index,
results)`` as each batch finishes, in any order:

- :class:`LocalExecutor` (the default): the batches in this process, in order.
- :class:`RayExecutor` (``--executor ray``): Ray Data batch inference; one engine
  batch per block, a fixed pool of actors each holding one model replica (one GPU
  each when the cluster has GPUs). Ray restarts a killed actor and retries its batch;
  the driver keeps one result per batch index, so nothing is doubled, and a batch
  that never comes back fails the run with every finished batch already cached.

Ray is an optional extra (``pip install 'biaslens[ray]'``); this module imports
without it.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from biaslens.models.base import Backend, ModelError, TokenScores

log = logging.getLogger(__name__)


class ExecutorError(ModelError):
    """The executor cannot run (Ray missing, cluster unreachable, a batch lost)."""


# ---------------------------------------------------------------- batch calls
# A call is what a worker does with one batch. Calls are small picklable objects; they
# encode a batch's results to bytes for the trip back to the driver, and one result to
# bytes for the call cache (``to_cache``/``from_cache``, used by the driver's loop).


@dataclass(frozen=True)
class ScoreCall:
    """``backend.score_batch`` on a list of texts."""

    kind: str = "score"

    def __call__(self, backend: Backend, batch: list[str]) -> list[TokenScores]:
        return backend.score_batch(list(batch))

    @staticmethod
    def encode(results: list[TokenScores]) -> bytes:
        return pickle.dumps([r.to_bytes() for r in results], protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def decode(blob: bytes) -> list[TokenScores]:
        return [TokenScores.from_bytes(b) for b in pickle.loads(blob)]

    @staticmethod
    def to_cache(result: TokenScores) -> bytes:
        return result.to_bytes()

    @staticmethod
    def from_cache(blob: bytes) -> TokenScores:
        return TokenScores.from_bytes(blob)

    @staticmethod
    def tokens_of(result: TokenScores) -> int:
        return result.n_tokens


@dataclass(frozen=True)
class ScoreRowsCall(ScoreCall):
    """``backend.score_rows`` on a batch of texts the driver tokenized once
    (:class:`~biaslens.models.tokenized.TokenRows`), in two steps that an executor may
    overlap: :meth:`prepare` (the host's work) and :meth:`run` (the model's)."""

    def __call__(self, backend: Backend, batch) -> list[TokenScores]:
        return self.run(backend, self.prepare(backend, batch))

    @staticmethod
    def prepare(backend, batch):
        return backend.prepare_rows(batch)

    @staticmethod
    def run(backend, prepared) -> list[TokenScores]:
        return backend.score_prepared(prepared)


@dataclass(frozen=True)
class GenerateCall:
    """``backend.generate_batch`` on a list of (rendered prompt, row seed)."""

    params: Any  # GenerationParams (frozen dataclass, picklable)
    kind: str = "generate"

    def __call__(self, backend: Backend, batch: list[tuple[str, int]]) -> list[str]:
        return backend.generate_batch([p for p, _ in batch], self.params, [int(s) for _, s in batch])

    def prepare(self, backend, batch: list[tuple[str, int]]):
        """The host's part (a backend with ``prepare_generation``: prompts' ids, prefill plan)."""
        return backend.prepare_generation([p for p, _ in batch], self.params, [int(s) for _, s in batch])

    @staticmethod
    def run(backend, prepared) -> list[str]:
        return backend.generate_prepared(prepared)

    @staticmethod
    def encode(results: list[str]) -> bytes:
        return pickle.dumps([str(r) for r in results], protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def decode(blob: bytes) -> list[str]:
        return list(pickle.loads(blob))

    @staticmethod
    def to_cache(result: str) -> bytes:
        return result.encode("utf-8")

    @staticmethod
    def from_cache(blob: bytes) -> str:
        return blob.decode("utf-8")

    @staticmethod
    def tokens_of(result: str) -> int:
        return 0  # generated tokens are not counted (the backends do not report them)


class Executor(Protocol):
    def run(self, backend: Backend, call, batches: Sequence[list]) -> Iterator[tuple[int, list]]:
        """Yield ``(index into batches, results of that batch)`` once per batch."""

    def describe(self) -> dict[str, Any]:
        """What run.json records about where the batches ran."""


class LocalExecutor:
    """In this process, in order.

    For a call in two steps (``prepare``, then ``run``: :class:`ScoreRowsCall`) and a backend
    that asks for it (``backend.prefetch_batches`` > 0, e.g. on a GPU), the next batches are
    prepared on a background thread while the model runs the current one, so the device
    does not wait for the host between batches.
    """

    def run(self, backend: Backend, call, batches: Sequence) -> Iterator[tuple[int, list]]:
        two_step = hasattr(call, "prepare") and (not isinstance(call, GenerateCall)
                                                 or hasattr(backend, "prepare_generation"))
        ahead = int(getattr(backend, "prefetch_batches", 0) or 0) if two_step else 0
        if ahead < 1 or len(batches) < 2:
            for i, batch in enumerate(batches):
                yield i, call(backend, batch)
            return
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="biaslens-prepare")
        pending: deque = deque()
        try:
            for i in range(min(ahead, len(batches))):
                pending.append(pool.submit(_prepare, call, backend, batches, i))
            for i in range(len(batches)):
                prepared = pending.popleft().result()
                if i + ahead < len(batches):
                    pending.append(pool.submit(_prepare, call, backend, batches, i + ahead))
                yield i, call.run(backend, prepared)
        finally:  # also when the consumer stops early (an error, a kill): drop what is queued
            pool.shutdown(wait=True, cancel_futures=True)

    def describe(self) -> dict[str, Any]:
        return {"kind": "local"}


def _prepare(call, backend: Backend, batches: Sequence, i: int):
    return call.prepare(backend, batches[i])  # batches[i] too (a lazy batch list slices here)


LOCAL = LocalExecutor()


def executor_of(backend: Backend, executor=None):
    """The executor to run a backend's batches: ``executor`` when given (what
    :class:`~biaslens.engine.calls.ModelCalls` holds), else one still attached to the
    backend (``backend.executor``, the older way), else local."""
    return executor or getattr(backend, "executor", None) or LOCAL


# ---------------------------------------------------------------- Ray


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401 - the Data library is a separate extra of ray
    except ImportError as e:
        raise ExecutorError("--executor ray needs Ray Data: pip install 'biaslens[ray]' "
                            f"(or pip install 'ray[data]'); import failed: {e}") from None
    return ray


class _BatchWorker:
    """A Ray Data actor: loads one model replica, then runs batch calls on it.

    The replica must have the driver's model identity: a worker with other weights
    (another file on another node) would otherwise fill the shared cache with wrong
    results under the right keys.
    """

    def __init__(self, load_kwargs: dict, identity: dict, call):
        import ray

        # torch threads: the CPUs Ray gave this actor, unless the user set them
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
        if cpus and "BIASLENS_THREADS" not in os.environ:
            os.environ["BIASLENS_THREADS"] = str(max(1, int(cpus)))
        from biaslens.models import load_model

        self.backend = load_model(**load_kwargs)
        got = self.backend.info.cache_identity()
        if got != identity:
            diff = sorted(k for k in set(got) | set(identity) if got.get(k) != identity.get(k))
            raise ExecutorError(f"ray worker on {os.uname().nodename}: the model loaded here differs from the "
                                f"driver's in {diff}; install the same model files on every node")
        self.call = call

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        ids, out = [], []
        for batch_id, payload in zip(batch["batch_id"], batch["payload"]):
            results = self.call(self.backend, pickle.loads(payload))
            ids.append(int(batch_id))
            out.append(self.call.encode(results))
        return {"batch_id": np.asarray(ids, dtype=np.int64), "result": np.asarray(out, dtype=object),
                "pid": np.full(len(ids), os.getpid(), dtype=np.int64)}


def _quiet_ray_data() -> None:
    from ray.data import DataContext

    ctx = DataContext.get_current()
    # our progress bar and log lines show the work; Ray Data's would interleave with them
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # "execution finished in ..." lines
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "progress bars disabled"


class RayExecutor:
    """Batches as Ray Data batch inference on a fixed pool of model replicas.

    Args:
        load_kwargs: keyword arguments of :func:`biaslens.models.load_model` for a
            replica (``device`` is set per worker: ``cuda`` when the cluster has GPUs).
        address: Ray cluster address; None connects to ``RAY_ADDRESS`` or a
            ``ray start`` cluster on this machine, else starts a local one.
        workers: replicas; default one per GPU in the cluster, else 2.
        init_kwargs: extra ``ray.init`` arguments when this process starts Ray.

    Fault tolerance is Ray Data's for actor pools: a dead actor is restarted and the
    batches it held are retried on the pool (``max_restarts=-1``, ``max_task_retries=-1``
    by default; Ray 2.60 deprecates passing them per call, so we keep its defaults).
    """

    def __init__(self, load_kwargs: dict, *, address: str | None = None, workers: int | None = None,
                 init_kwargs: dict | None = None):
        ray = _import_ray()
        self.load_kwargs = dict(load_kwargs)
        self.address = address
        if not ray.is_initialized():
            if address:
                _check_reachable(address)
            kw = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                  **(init_kwargs or {})}
            try:
                ray.init(address=address, **kw)
            except Exception as e:  # noqa: BLE001 - ConnectionError, ValueError, RuntimeError, ...
                where = f"the Ray cluster at {address!r}" if address else "a local Ray cluster"
                raise ExecutorError(f"--executor ray: cannot connect to or start {where}: "
                                    f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
        resources = ray.cluster_resources()
        self.cluster_gpus = int(resources.get("GPU", 0))
        self.cluster_cpus = int(resources.get("CPU", 0))
        node_cpus = [int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]
        self.node_cpus = max(node_cpus or [self.cluster_cpus or 1])
        self.n_nodes = max(1, len(node_cpus))
        requested = str(self.load_kwargs.get("device", "cpu"))
        if self.cluster_gpus:
            # Ray sets CUDA_VISIBLE_DEVICES per actor: "cuda" is the actor's own GPU
            self.device, self.gpus_per_worker = "cuda", 1
        elif requested.startswith("cuda"):
            raise ExecutorError(f"--device {requested} with --executor ray: the Ray cluster has no GPUs "
                                f"({self.cluster_cpus} CPUs); drop --device or add GPU nodes")
        else:
            self.device, self.gpus_per_worker = "cpu", 0
        self.workers = workers or (self.cluster_gpus or 2)
        if self.cluster_gpus and self.workers > self.cluster_gpus:
            raise ExecutorError(f"--ray-workers {self.workers}: the cluster has only {self.cluster_gpus} GPUs "
                                "(one model replica per GPU)")
        if not self.cluster_gpus and self.workers > max(1, self.cluster_cpus):
            raise ExecutorError(f"--ray-workers {self.workers}: the cluster has only {self.cluster_cpus} CPUs "
                                "(each replica needs at least one)")
        self.runs = 0
        self.duplicates = 0
        #: batches returned per worker process (pid), over all runs: shows where work went
        self.batches_by_worker: dict[int, int] = {}

    def describe(self) -> dict[str, Any]:
        import ray

        return {"kind": "ray", "ray_version": ray.__version__, "address": self.address or "local",
                "workers": self.workers, "worker_device": self.device, "gpus_per_worker": self.gpus_per_worker,
                "cluster_cpus": self.cluster_cpus, "cluster_gpus": self.cluster_gpus}

    def run(self, backend: Backend, call, batches: Sequence[list]) -> Iterator[tuple[int, list]]:
        if not batches:
            return
        import ray
        from ray.data import ActorPoolStrategy

        _quiet_ray_data()
        self.runs += 1
        n = len(batches)
        items = [{"batch_id": i, "payload": pickle.dumps(list(b), protocol=pickle.HIGHEST_PROTOCOL)}
                 for i, b in enumerate(batches)]
        # one engine batch per block: a killed worker costs one batch, retried
        ds = ray.data.from_items(items, override_num_blocks=n)
        size = min(self.workers, n)
        load = {**self.load_kwargs, "device": self.device}
        # CPU replicas share each node's CPUs (an actor must fit on one node); GPU replicas take one CPU
        per_node = -(-size // self.n_nodes)
        cpus = 1 if self.gpus_per_worker else max(1, self.node_cpus // per_node)
        mapped = ds.map_batches(
            _BatchWorker,
            fn_constructor_kwargs={"load_kwargs": load, "identity": backend.info.cache_identity(), "call": call},
            batch_size=1, batch_format="numpy", compute=ActorPoolStrategy(size=size),
            num_cpus=cpus, num_gpus=self.gpus_per_worker,
        )
        seen: set[int] = set()
        try:
            for row in mapped.iter_rows():
                i = int(row["batch_id"])
                if i in seen or not 0 <= i < n:  # a retried batch that came back twice: keep one
                    self.duplicates += 1
                    continue
                seen.add(i)
                pid = int(row["pid"])
                self.batches_by_worker[pid] = self.batches_by_worker.get(pid, 0) + 1
                yield i, call.decode(row["result"])
        except ModelError:
            raise
        except Exception as e:  # noqa: BLE001 - Ray wraps worker errors in its own types
            raise ExecutorError(f"ray executor: {len(seen)} of {n} batches finished (and cached) before "
                                f"{_short_ray_error(e)}; run the same command again to resume") from e
        if len(seen) != n:
            raise ExecutorError(f"ray executor: {n - len(seen)} of {n} batches never came back; "
                                "the others are cached: run the same command again to compute the rest")


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on an address nobody listens at: ``ray.init`` would retry for minutes."""
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    if hostport == "auto" or ":" not in hostport:
        return  # "auto" and bare names are resolved by Ray itself
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as e:
        raise ExecutorError(f"--ray-address {address}: no Ray cluster answers there ({type(e).__name__}: {e}); "
                            "start one with  ray start --head  and pass the address it prints") from None


def _short_ray_error(e: BaseException) -> str:
    """The user-facing line of a Ray error: the worker's own ModelError when there is one."""
    seen = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ModelError):
            return f"a worker failed: {cur}"
        cur = cur.__cause__ or cur.__context__
    text = " ".join(str(e).split())
    for marker in ("ExecutorError: ", "ModelError: "):
        if marker in text:  # the worker's own message, kept as text across Ray's re-raise
            return "a worker failed: " + text.rsplit(marker, 1)[1][:400]
    return f"{type(e).__name__}: {text[:300]}"


def executor_from_config(executor_config, model_config) -> RayExecutor | None:
    """The executor a RunConfig asks for: None (local) or a connected :class:`RayExecutor`."""
    if executor_config.kind == "local":
        return None
    if model_config.backend == "openai":
        raise ExecutorError("--executor ray runs model replicas on the cluster; the openai backend calls a server "
                            "already: use --max-concurrency instead")
    if model_config.backend == "vllm":
        raise ExecutorError("--executor ray works with the Hugging Face backends (--backend auto/hf); vLLM batches "
                            "and shards on its own: run --backend vllm with the local executor")
    return RayExecutor(replica_load_kwargs(model_config), address=executor_config.ray_address,
                       workers=executor_config.workers)


def replica_load_kwargs(m) -> dict:
    """``load_model`` keyword arguments for a worker's replica, from a ModelConfig."""
    from biaslens.models.registry import LoadOptions

    return {"name": m.name, "backend": m.backend, **LoadOptions.from_model_config(m).as_kwargs()}
