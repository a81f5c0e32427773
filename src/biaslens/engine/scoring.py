"""Scoring many texts through the engine's one cached-call loop
(:func:`~biaslens.engine.loop.run_cached_calls`): deduplicated, cached, batched in the
backend's order, each finished batch committed, results in input order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

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
    :class:`~biaslens.models.tokenized.TokenRows` slice of that one tokenization.

    Where the backend prepares batches ahead on a background thread (a GPU), the texts are
    tokenized in chunks instead, so the first batch starts at once and each later chunk is
    tokenized and ordered while the model runs the batches before it (:class:`_ChunkedBatches`)."""

    def plan(todo: list[str], size: int):
        if getattr(backend, "prefetch_batches", 0) and len(todo) > 2 * size:
            chunked = _ChunkedBatches(backend, todo, size)
            return chunked.texts, chunked
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


class _ChunkedBatches(Sequence):
    """Batches whose texts are tokenized and ordered a chunk at a time, when a batch of the
    chunk is first asked for. The texts are sorted as strings first, so a chunk holds texts
    that share openings (and so token prefixes), and the backend's order within the chunk
    packs them as one tokenization of everything would, up to the chunks' edges. Chunks grow
    1, 2, 4, ... up to :attr:`MOST` batches: the first batch waits for one batch's tokens only,
    and each later chunk is ready while the model runs the batches before it.

    Indexed as jobs (``TokenRows``, from the preparing thread) and through :attr:`texts` (each
    batch's texts, from the loop that stores the results)."""

    MOST = 16

    def __init__(self, backend, todo: list[str], size: int):
        import threading
        from concurrent.futures import ThreadPoolExecutor

        self.backend, self.size = backend, size
        self.todo = sorted(todo)
        n_batches = -(-len(todo) // size)
        self.bounds: list[int] = [0]  # the first batch of each chunk, then the end
        step = 1
        while self.bounds[-1] < n_batches:
            self.bounds.append(min(n_batches, self.bounds[-1] + step))
            step = min(step * 2, self.MOST)
        self._chunks: dict[int, tuple[list[str], object, np.ndarray]] = {}
        self._pending: dict[int, Any] = {}
        self._lock = threading.Lock()
        # the next chunk is tokenized here while the model runs the current one's batches
        self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="biaslens-tokenize")
        self.texts = _ChunkTexts(self)

    def __len__(self) -> int:
        return self.bounds[-1]

    def _make(self, c: int) -> tuple[list[str], object, np.ndarray]:
        texts = self.todo[self.bounds[c] * self.size : self.bounds[c + 1] * self.size]
        rows = self.backend.tokenize(texts)
        return texts, rows, self.backend.order_rows(rows, texts)

    def chunk(self, i: int) -> tuple[int, tuple[list[str], object, np.ndarray]]:
        """(the chunk's first batch, its texts, rows and order) of batch ``i``, made once;
        the chunk after it is then started ahead."""
        if not 0 <= i < len(self):
            raise IndexError(i)
        c = int(np.searchsorted(self.bounds, i, side="right")) - 1
        with self._lock:
            made = self._chunks.get(c)
            pending = self._pending.pop(c, None) if made is None else None
        if made is None:
            made = pending.result() if pending is not None else self._make(c)
            with self._lock:
                made = self._chunks.setdefault(c, made)
                after = c + 1
                if after < len(self.bounds) - 1 and after not in self._chunks and after not in self._pending:
                    self._pending[after] = self._ahead.submit(self._make, after)
                    if after == len(self.bounds) - 2:
                        self._ahead.shutdown(wait=False)  # nothing more to start; the thread ends after it
        return self.bounds[c], made

    def __getitem__(self, i):  # type: ignore[override]  # batches are taken one at a time
        first, (_, rows, order) = self.chunk(i)
        j = i - first
        return rows.take(order[j * self.size : (j + 1) * self.size])  # type: ignore[attr-defined]


class _ChunkTexts(Sequence):
    """The texts of each batch of a :class:`_ChunkedBatches`, in the order they are scored."""

    def __init__(self, batches: _ChunkedBatches):
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, i):  # type: ignore[override]
        first, (texts, _, order) = self.batches.chunk(i)
        j = i - first
        return [texts[k] for k in order[j * self.batches.size : (j + 1) * self.batches.size].tolist()]
