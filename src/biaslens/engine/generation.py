"""Generating many responses: expand prompts to (prompt, sample index) rows, look
up the cache, batch the misses by prompt length, commit each finished batch.

Rows are seeded one by one (see :mod:`biaslens.models.generation`), so the same
seed gives the same responses whatever the batch size and after a resume.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from biaslens.engine.cache import CallCache, make_key
from biaslens.engine.executors import GenerateCall, executor_of
from biaslens.engine.scoring import ProgressFn, ScoringStats
from biaslens.models.base import Backend
from biaslens.models.generation import GenerationParams, GenerationRequest, row_seed


def generate_texts(
    backend: Backend,
    requests: Sequence[GenerationRequest | str],
    params: GenerationParams,
    *,
    cache: CallCache | None = None,
    batch_size: int | None = None,
    progress: ProgressFn | None = None,
    stats: ScoringStats | None = None,
) -> list[list[str]]:
    """``params.n`` responses for each request, in request order."""
    if params.n > 1 and not params.do_sample:
        raise ValueError("n > 1 responses per prompt need sampling (do_sample=True); greedy/beam search give one")
    stats = stats if stats is not None else ScoringStats()
    reqs = [r if isinstance(r, GenerationRequest) else GenerationRequest(prompt=r) for r in requests]
    rendered = [backend.render_prompt(r, params) for r in reqs]
    identity = backend.info.cache_identity()
    key_params = params.key_params()
    rows: dict[tuple[str, int], str] = {}  # (rendered prompt, sample index) -> key
    for p in rendered:
        for i in range(params.n):
            if (p, i) not in rows:
                rows[(p, i)] = make_key(identity, "generate", p, {**key_params, "sample_index": i})
    stats.n_texts += len(rendered) * params.n
    stats.n_unique += len(rows)
    results: dict[tuple[str, int], str] = {}
    if cache is not None:
        found = cache.get_many(rows.values())
        for row, key in rows.items():
            blob = found.get(key)
            if blob is not None:
                results[row] = blob.decode("utf-8")
    stats.cache_hits += len(results)
    todo = [row for row in rows if row not in results]
    done, total = len(results), len(rows)
    if progress:
        progress(done, total)
    if todo:
        bs = max(1, batch_size or backend.default_batch_size)
        lengths = dict(zip({p for p, _ in todo}, backend.token_lengths(list({p for p, _ in todo}))))
        todo.sort(key=lambda r: (-lengths[r[0]], r[0], r[1]))
        batches = [todo[start : start + bs] for start in range(0, len(todo), bs)]
        t0 = time.perf_counter()
        call = GenerateCall(params)
        # seeds are per row, so a row's text does not depend on which worker or batch computes it
        jobs = [[(p, row_seed(params.seed, p, i)) for p, i in batch] for batch in batches]
        for index, texts in executor_of(backend).run(backend, call, jobs):
            batch = batches[index]
            if len(texts) != len(batch):
                raise RuntimeError(f"backend returned {len(texts)} responses for {len(batch)} prompts")
            for row, text in zip(batch, texts):
                results[row] = text
            if cache is not None:
                cache.put_many({rows[row]: text.encode("utf-8") for row, text in zip(batch, texts)})
            stats.batches += 1
            stats.computed += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)
        stats.seconds += time.perf_counter() - t0
    return [[results[(p, i)] for i in range(params.n)] for p in rendered]
