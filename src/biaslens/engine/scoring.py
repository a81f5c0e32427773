"""Scoring many texts through the engine's one cached-call loop
(:func:`~biaslens.engine.loop.run_cached_calls`): deduplicated, cached, batched in the
backend's order, each finished batch committed, results in input order."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from biaslens.engine.cache import CallCache, make_keys
from biaslens.engine.executors import LocalExecutor, ScoreCall, ScoreRowsCall, executor_of
from biaslens.engine.loop import PlanFn, ProgressFn, ScoringStats, ordered_plan, run_cached_calls
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

    A backend that scores tokenized texts (``tokenize``, ``order_rows``, ``score_rows``:
    the Hugging Face causal LMs) run here has the texts to compute tokenized once, in one
    call; the ids are sorted and batched as arrays and reach the model without being
    tokenized again.
    """
    from biaslens.engine.backend_check import require_agreement

    require_agreement(backend, cache.path.parent if cache is not None and cache.path else None)
    stats = stats if stats is not None else ScoringStats()
    texts = list(texts)
    unique = dict.fromkeys(texts)
    # without a cache nothing is looked up: no keys to compute
    keys = make_keys(backend.info.cache_identity(), "score", unique) if cache is not None else unique
    stats.n_texts += len(texts)
    stats.n_unique += len(keys)

    # a backend may score in larger batches than it generates (HF causal: prefix-trie packing)
    size = batch_size or getattr(backend, "score_batch_size", None) or backend.default_batch_size
    call: ScoreCall
    if isinstance(executor_of(backend, executor), LocalExecutor) and all(
            hasattr(backend, a) for a in ("tokenize", "order_rows", "score_rows")):
        call, plan = ScoreRowsCall(), token_plan(backend)
    else:
        call, plan = ScoreCall(), ordered_plan(lambda todo: [todo[i] for i in backend.batch_order(todo)],
                                               job=lambda t: t)
    results = run_cached_calls(backend, call, keys, plan=plan, batch_size=size, cache=cache,
                               executor=executor, progress=progress, stats=stats)
    return [results[t] for t in texts]


def token_plan(backend) -> PlanFn:
    """Tokenize the texts to compute once, order them by their ids, and send each batch as a
    :class:`~biaslens.models.tokenized.TokenRows` slice of that one tokenization."""

    def plan(todo: list[str], size: int) -> tuple[list[list[str]], _RowBatches]:
        rows = backend.tokenize(todo)
        order = backend.order_rows(rows, todo)
        ordered = [todo[i] for i in order.tolist()]
        batches = [ordered[start : start + size] for start in range(0, len(ordered), size)]
        return batches, _RowBatches(rows, order, size)

    return plan


class _RowBatches(Sequence):
    """The batches' TokenRows, sliced when asked for (by the thread that prepares them)."""

    def __init__(self, rows, order: np.ndarray, size: int):
        self.rows, self.order, self.size = rows, order, size

    def __len__(self) -> int:
        return -(-len(self.order) // self.size)

    def __getitem__(self, i):  # type: ignore[override]  # batches are taken one at a time
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.rows.take(self.order[i * self.size : (i + 1) * self.size])
