"""The one model wrapper a suite talks to: a backend with its call cache, batch size and
executor, and one cached-call loop for scoring and for generating.

Suites never open caches or pick batch sizes themselves: the runner builds a
``ModelCalls`` (:func:`model_calls_from_config`) and hands it to the suite, which asks
for ``score(texts)`` or ``generate(requests, params)``.

The loop behind both (:func:`biaslens.engine.loop.run_cached_calls`): deduplicate, look up
the cache, batch the misses in the backend's order, run the batches on the executor, commit
each finished batch to the cache, report progress.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from biaslens.engine.cache import CallCache
from biaslens.engine.loop import ProgressFn, ScoringStats, run_cached_calls  # noqa: F401  (re-exported)

if TYPE_CHECKING:  # torch-free at import time either way; these are for the annotations
    from biaslens.config import RunConfig
    from biaslens.models.base import Backend, GenerationParams, GenerationRequest, ModelInfo, TokenScores


class ModelCalls:
    """A backend plus everything that decides how its calls are made and remembered.

    Args:
        backend: the loaded model.
        cache: the call cache (None: nothing is remembered).
        batch_size: items per batch (None: the backend's default).
        executor: where batches run (None: in this process; or a
            :class:`~biaslens.engine.executors.RayExecutor`).
        progress: default progress callback for every call (a call's own wins).
    """

    def __init__(self, backend: Backend, *, cache: CallCache | None = None, batch_size: int | None = None,
                 executor=None, progress: ProgressFn | None = None):
        self.backend = backend
        self.cache = cache
        self.batch_size = batch_size
        self.executor = executor
        self.progress = progress
        self.stats = ScoringStats()

    @property
    def info(self) -> ModelInfo:
        return self.backend.info

    def score(self, texts: Sequence[str], *, progress: ProgressFn | None = None,
              stats: ScoringStats | None = None) -> list[TokenScores]:
        """Per-token log-probabilities of every text (cached, in input order)."""
        from biaslens.engine.scoring import score_texts

        return score_texts(self.backend, texts, cache=self.cache, batch_size=self.batch_size,
                           progress=progress or self.progress, stats=stats if stats is not None else self.stats,
                           executor=self.executor)

    def generate(self, requests: Sequence[GenerationRequest | str], params: GenerationParams, *,
                 progress: ProgressFn | None = None, stats: ScoringStats | None = None) -> list[list[str]]:
        """``params.n`` responses per request (cached, seeded per row, in request order)."""
        from biaslens.engine.generation import generate_texts

        return generate_texts(self.backend, requests, params, cache=self.cache, batch_size=self.batch_size,
                              progress=progress or self.progress, stats=stats if stats is not None else self.stats,
                              executor=self.executor)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.backend.count_tokens(texts)

    def describe_executor(self) -> dict[str, Any] | None:
        """Where the batches ran, for run.json (None: in this process)."""
        executor = self.executor or getattr(self.backend, "executor", None)
        return executor.describe() if executor is not None else None

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def open_cache(config: RunConfig) -> CallCache | None:
    """The call cache a RunConfig asks for (None with ``use_cache: false``)."""
    from pathlib import Path

    from biaslens.paths import cache_dir

    if not config.use_cache:
        return None
    root = Path(config.cache_dir) if config.cache_dir else cache_dir()
    return CallCache(root / "calls.sqlite")


def executor_for(config: RunConfig):
    """The executor a RunConfig asks for, connected (None: batches run in this process)."""
    if config.executor.kind == "local":
        return None
    from biaslens.engine.executors import executor_from_config

    return executor_from_config(config.executor, config.model)


def load_backend(config: RunConfig, executor=None) -> Backend:
    """The model a RunConfig names. With a remote executor the driver's copy only tokenizes,
    orders batches and names cache keys, so it stays on the CPU and is not compiled."""
    from biaslens.models.registry import LoadOptions, load_model

    options = LoadOptions.from_model_config(config.model)
    if executor is not None:
        options = options.replace(device="cpu", compile=False)
    return load_model(config.model.name, backend=config.model.backend, **options.as_kwargs())


def model_calls_from_config(config: RunConfig, backend: Backend | None = None) -> ModelCalls:
    """Backend, call cache, executor and batch size from a RunConfig, as one :class:`ModelCalls`.

    ``backend``: an already loaded model to use instead of loading ``config.model``.
    The executor connects before the model loads, so a bad cluster address fails fast.
    """
    executor = executor_for(config)
    if backend is None:
        backend = load_backend(config, executor)
    return ModelCalls(backend, cache=open_cache(config), batch_size=config.model.batch_size, executor=executor)


def model_record(calls: ModelCalls) -> dict:
    """The model identity as run.json records it."""
    i = calls.info
    record = {"backend": i.backend, "name": i.name, "kind": i.kind, "weights_hash": i.weights_hash,
              "dtype": i.dtype, "start_token": i.start_token, **i.extra}
    executor = calls.describe_executor()
    if executor is not None:
        record["executor"] = executor  # where the batches ran (ray cluster, workers)
    return record
