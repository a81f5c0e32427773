"""Scoring many texts through the engine's one cached-call loop
(:func:`~biaslens.engine.loop.run_cached_calls`): deduplicated, cached, batched in the
backend's order, each finished batch committed, results in input order."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from biaslens.engine.cache import CallCache, make_key
from biaslens.engine.executors import ScoreCall
from biaslens.engine.loop import ProgressFn, ScoringStats, run_cached_calls
from biaslens.models.base import Backend, TokenScores

log = logging.getLogger(__name__)

__all__ = ["ProgressFn", "ScoringStats", "score_texts"]


def score_texts(
    backend: Backend,
    texts: Sequence[str],
    *,
    cache: CallCache | None = None,
    batch_size: int | None = None,
    progress: ProgressFn | None = None,
    stats: ScoringStats | None = None,
    executor=None,
) -> list[TokenScores]:
    """Per-token log-probabilities for every text, using and filling the cache.

    Batches follow the backend's ``batch_order`` (similar lengths; for causal LMs,
    shared token prefixes); the result order is the input order. ``executor``: where
    the batches run (default: ``backend.executor``, else this process).
    """
    from biaslens.engine.backend_check import require_agreement

    require_agreement(backend, cache.path.parent if cache is not None and cache.path else None)
    stats = stats if stats is not None else ScoringStats()
    texts = list(texts)
    identity = backend.info.cache_identity()
    keys = {t: make_key(identity, "score", t) for t in dict.fromkeys(texts)}
    stats.n_texts += len(texts)
    stats.n_unique += len(keys)

    def order(todo: list[str]) -> list[str]:
        return [todo[i] for i in backend.batch_order(todo)]

    # a backend may score in larger batches than it generates (HF causal: prefix-trie packing)
    size = batch_size or getattr(backend, "score_batch_size", None) or backend.default_batch_size
    results = run_cached_calls(backend, ScoreCall(), keys, job=lambda t: t, order=order, batch_size=size,
                               cache=cache, executor=executor, progress=progress, stats=stats)
    return [results[t] for t in texts]
