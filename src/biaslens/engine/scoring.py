"""Scoring many texts: deduplicate, look up the cache, batch the misses by length,
write each finished batch to the cache, and return results in input order.

A killed run loses at most the batch in flight: every finished batch is already
committed to the cache, and re-running the same command picks up from there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from biaslens.engine.cache import CallCache, make_key
from biaslens.engine.executors import ScoreCall, executor_of
from biaslens.models.base import Backend, TokenScores

log = logging.getLogger(__name__)

#: called after each batch with (texts done, texts to do)
ProgressFn = Callable[[int, int], None]


@dataclass
class ScoringStats:
    n_texts: int = 0
    n_unique: int = 0
    cache_hits: int = 0
    computed: int = 0
    batches: int = 0
    seconds: float = 0.0
    tokens_computed: int = 0
    corrupt_records: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def texts_per_second(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("nan")


def score_texts(
    backend: Backend,
    texts: Sequence[str],
    *,
    cache: CallCache | None = None,
    batch_size: int | None = None,
    progress: ProgressFn | None = None,
    stats: ScoringStats | None = None,
) -> list[TokenScores]:
    """Per-token log-probabilities for every text, using and filling the cache.

    Batches follow the backend's ``batch_order`` (similar lengths; for causal LMs,
    shared token prefixes); the result order is the input order.
    """
    from biaslens.engine.backend_check import require_agreement

    require_agreement(backend, cache.path.parent if cache is not None and cache.path else None)
    stats = stats if stats is not None else ScoringStats()
    texts = list(texts)
    unique = list(dict.fromkeys(texts))
    stats.n_texts += len(texts)
    stats.n_unique += len(unique)
    identity = backend.info.cache_identity()
    keys = {t: make_key(identity, "score", t) for t in unique}
    results: dict[str, TokenScores] = {}
    if cache is not None:
        corrupt_before = cache.stats.corrupt
        found = cache.get_many(keys.values())
        stats.corrupt_records += cache.stats.corrupt - corrupt_before
        for t in unique:
            blob = found.get(keys[t])
            if blob is not None:
                try:
                    results[t] = TokenScores.from_bytes(blob)
                except ValueError:
                    stats.corrupt_records += 1
    stats.cache_hits += len(results)
    todo = [t for t in unique if t not in results]
    done = len(results)
    total = len(unique)
    if progress:
        progress(done, total)
    if todo:
        # a backend may score in larger batches than it generates (HF causal: prefix-trie packing)
        bs = max(1, batch_size or getattr(backend, "score_batch_size", None) or backend.default_batch_size)
        order = backend.batch_order(todo)
        batches = [[todo[i] for i in order[start : start + bs]] for start in range(0, len(order), bs)]
        t0 = time.perf_counter()
        # the executor runs the batches (here, or on a Ray cluster) and yields each as it finishes
        for index, scored in executor_of(backend).run(backend, ScoreCall(), batches):
            batch = batches[index]
            if len(scored) != len(batch):
                raise RuntimeError(f"backend returned {len(scored)} results for {len(batch)} texts")
            for t, s in zip(batch, scored):
                results[t] = s
                stats.tokens_computed += s.n_tokens
            if cache is not None:
                cache.put_many({keys[t]: s.to_bytes() for t, s in zip(batch, scored)})
            stats.batches += 1
            stats.computed += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)
        stats.seconds += time.perf_counter() - t0
    return [results[t] for t in texts]
