"""The one model wrapper a suite talks to: a backend with its call cache, batch size and
executor, and one cached-call loop for scoring and for generating.

Suites never open caches or pick batch sizes themselves: the runner builds a
``ModelCalls`` (:func:`model_calls_from_config`) and hands it to the suite, which asks
for ``score(texts)`` or ``generate(requests, params)``.

The loop (:func:`run_cached_calls`): deduplicate, look up the cache, batch the misses
in the backend's order, run the batches on the executor, commit each finished batch to
the cache, report progress. A killed run loses at most the batches in flight: every
finished batch is already committed, and re-running the same command resumes there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from biaslens.engine.cache import CallCache
from biaslens.engine.executors import executor_of

if TYPE_CHECKING:  # torch-free at import time either way; these are for the annotations
    from biaslens.config import RunConfig
    from biaslens.models.base import Backend, GenerationParams, GenerationRequest, ModelInfo, TokenScores

#: called after each batch with (items done, items to do)
ProgressFn = Callable[[int, int], None]


@dataclass
class ScoringStats:
    """What a run's model calls cost (scoring and generating alike)."""

    n_texts: int = 0
    n_unique: int = 0
    cache_hits: int = 0
    computed: int = 0
    batches: int = 0
    seconds: float = 0.0
    tokens_computed: int = 0  # scored tokens; for generation, the responses' tokens (re-tokenized)
    corrupt_records: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def texts_per_second(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("nan")

    def generation_speed(self) -> dict[str, Any]:
        """For run.json: tokens generated (responses re-tokenized; null where the backend has
        no tokenizer) and generated tokens per second of model time."""
        tokens = self.tokens_computed or None
        return {"generated_tokens": tokens,
                "generated_tokens_per_second": round(tokens / self.seconds, 1) if tokens and self.seconds > 0 else None}


def run_cached_calls(
    backend: Backend,
    call,
    keys: dict[Hashable, str],
    *,
    job: Callable[[Any], Any],
    order: Callable[[list], list],
    batch_size: int,
    cache: CallCache | None = None,
    executor=None,
    progress: ProgressFn | None = None,
    stats: ScoringStats | None = None,
    count_tokens: Callable[[list], int] | None = None,
) -> dict[Hashable, Any]:
    """Results of ``call`` (an :mod:`~biaslens.engine.executors` batch call) for every item.

    Args:
        keys: each distinct item and its cache key, in first-seen order.
        job: what a worker receives for an item (a text; a (prompt, seed) row).
        order: the items to compute, in batch order (similar lengths, shared prefixes).
        batch_size: items per batch.
        executor: where batches run (default: one attached to the backend, else here).
        count_tokens: tokens in a batch's results (default: ``call.tokens_of`` per result).

    ``stats.n_texts``/``n_unique`` are the caller's to count (it knows the requests).
    """
    stats = stats if stats is not None else ScoringStats()
    results: dict[Hashable, Any] = {}
    if cache is not None:
        corrupt_before = cache.stats.corrupt
        found = cache.get_many(keys.values())
        stats.corrupt_records += cache.stats.corrupt - corrupt_before
        for item, key in keys.items():
            blob = found.get(key)
            if blob is not None:
                try:
                    results[item] = call.from_cache(blob)
                except ValueError:  # a record of the wrong shape: compute it again
                    stats.corrupt_records += 1
    stats.cache_hits += len(results)
    todo = [item for item in keys if item not in results]
    done, total = len(results), len(keys)
    if progress:
        progress(done, total)
    if not todo:
        return results
    todo = order(todo)
    size = max(1, batch_size)
    batches = [todo[start : start + size] for start in range(0, len(todo), size)]
    jobs = [[job(item) for item in batch] for batch in batches]
    t0 = time.perf_counter()
    # the executor runs the batches (here, or on a Ray cluster) and yields each as it finishes
    for index, out in executor_of(backend, executor).run(backend, call, jobs):
        batch = batches[index]
        if len(out) != len(batch):
            raise RuntimeError(f"backend returned {len(out)} results for a batch of {len(batch)}")
        for item, result in zip(batch, out):
            results[item] = result
        stats.tokens_computed += count_tokens(out) if count_tokens else sum(call.tokens_of(r) for r in out)
        if cache is not None:
            cache.put_many({keys[item]: call.to_cache(result) for item, result in zip(batch, out)})
        stats.batches += 1
        stats.computed += len(batch)
        done += len(batch)
        if progress:
            progress(done, total)
    stats.seconds += time.perf_counter() - t0
    return results


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
