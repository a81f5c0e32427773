"""The engine's one cached-call loop (:func:`run_cached_calls`), behind both scoring
(:mod:`biaslens.engine.scoring`) and generating (:mod:`biaslens.engine.generation`):
deduplicate, look up the cache, batch the misses in the backend's order, run the batches on
the executor, commit each finished batch to the cache, report progress. A killed run loses at
most the batches in flight: every finished batch is already committed, and re-running the
same command resumes there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from biaslens.engine.cache import CallCache
from biaslens.engine.executors import executor_of

if TYPE_CHECKING:
    from biaslens.models.base import Backend

#: called after each batch with (items done, items to do)
ProgressFn = Callable[[int, int], None]
#: (items to compute, batch size) -> (the items of each batch, what each batch sends to the executor)
PlanFn = Callable[[list, int], tuple[Sequence[list], Sequence[Any]]]


def ordered_plan(order: Callable[[list], list], job: Callable[[Any], Any]) -> PlanFn:
    """Batches of ``batch_size`` items in ``order``, each sent as the list of its items' jobs."""

    def plan(todo: list, size: int) -> tuple[list[list], list[list]]:
        todo = order(todo)
        batches = [todo[start : start + size] for start in range(0, len(todo), size)]
        return batches, [[job(item) for item in batch] for batch in batches]

    return plan


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

    def cost(self) -> dict[str, Any]:
        """What the calls cost, as run.json records it beside each suite's own counts."""
        return {"cache_hits": self.cache_hits, "computed": self.computed, "seconds": round(self.seconds, 3)}

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
    keys: dict[Hashable, Any],
    *,
    plan: PlanFn,
    batch_size: int,
    cache: CallCache | None = None,
    executor=None,
    progress: ProgressFn | None = None,
    stats: ScoringStats | None = None,
    count_tokens: Callable[[list], int] | None = None,
) -> dict[Hashable, Any]:
    """Results of ``call`` (an :mod:`~biaslens.engine.executors` batch call) for every item.

    Args:
        keys: each distinct item and its cache key, in first-seen order (keys may be None
            when there is no cache: nothing is looked up or written).
        plan: the items to compute -> their batches and each batch's job
            (:func:`ordered_plan`: the backend's order, one job per item).
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
    batches, jobs = plan(todo, max(1, batch_size))
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
