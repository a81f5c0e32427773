"""Generating many responses through the engine's one cached-call loop
(:func:`~biaslens.engine.loop.run_cached_calls`): prompts expand to (prompt, sample
index) rows, each cached and batched by prompt length.

Rows are seeded one by one (:func:`~biaslens.models.base.row_seed`), so the same seed
gives the same responses whatever the batch size and after a resume.
"""

from __future__ import annotations

from collections.abc import Sequence

from biaslens.engine.cache import CallCache, make_key
from biaslens.engine.executors import GenerateCall
from biaslens.engine.loop import ProgressFn, ScoringStats, ordered_plan, run_cached_calls
from biaslens.models.base import Backend, GenerationParams, GenerationRequest, row_seed


def generate_texts(
    backend: Backend,
    requests: Sequence[GenerationRequest | str],
    params: GenerationParams,
    *,
    cache: CallCache | None = None,
    batch_size: int | None = None,
    progress: ProgressFn | None = None,
    stats: ScoringStats | None = None,
    executor=None,
) -> list[list[str]]:
    """``params.n`` responses for each request, in request order. ``executor``: where the
    batches run (default: ``backend.executor``, else this process)."""
    if params.n > 1 and not params.do_sample:
        raise ValueError("n > 1 responses per prompt need sampling (do_sample=True); greedy/beam search give one")
    stats = stats if stats is not None else ScoringStats()
    reqs = [r if isinstance(r, GenerationRequest) else GenerationRequest(prompt=r) for r in requests]
    rendered = [backend.render_prompt(r, params) for r in reqs]
    identity = backend.info.cache_identity()
    key_params = params.key_params()
    keys: dict[tuple[str, int], str] = {}  # (rendered prompt, sample index) -> cache key
    for p in rendered:
        for i in range(params.n):
            if (p, i) not in keys:
                keys[(p, i)] = make_key(identity, "generate", p, {**key_params, "sample_index": i})
    stats.n_texts += len(rendered) * params.n
    stats.n_unique += len(keys)

    def order(todo: list[tuple[str, int]]) -> list[tuple[str, int]]:
        prompts = list(dict.fromkeys(p for p, _ in todo))
        lengths = dict(zip(prompts, backend.token_lengths(prompts)))
        return sorted(todo, key=lambda r: (-lengths[r[0]], r[0], r[1]))

    # generated tokens/s for run.json, where the backend's tokenizer counts them exactly
    count = (lambda texts: sum(backend.token_lengths(list(texts)))) if getattr(backend, "tokenizer", None) else None
    # seeds are per row, so a row's text does not depend on which worker or batch computes it
    plan = ordered_plan(order, job=lambda r: (r[0], row_seed(params.seed, *r)))
    results = run_cached_calls(backend, GenerateCall(params), keys, plan=plan,
                               batch_size=batch_size or backend.generate_batch_size, cache=cache,
                               executor=executor, progress=progress, stats=stats, count_tokens=count)
    return [[results[(p, i)] for i in range(params.n)] for p in rendered]
