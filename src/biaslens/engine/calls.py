"""The one model wrapper a suite talks to: a backend with its call cache, batch size and
executor, and one cached-call loop for scoring and for generating.

Suites never open caches or pick batch sizes themselves: the runner builds a
``ModelCalls`` from the run configuration and hands it to the suite, which asks for
``score(texts)`` or ``generate(requests, params)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from biaslens.engine.cache import CallCache
from biaslens.engine.scoring import ProgressFn, ScoringStats

if TYPE_CHECKING:  # torch-free at import time
    from biaslens.models.base import Backend, ModelInfo, TokenScores
    from biaslens.models.generation import GenerationParams, GenerationRequest


class ModelCalls:
    """A backend plus everything that decides how its calls are made and remembered."""

    def __init__(self, backend: Backend, *, cache: CallCache | None = None, batch_size: int | None = None):
        self.backend = backend
        self.cache = cache
        self.batch_size = batch_size
        self.stats = ScoringStats()

    @property
    def info(self) -> ModelInfo:
        return self.backend.info

    def score(self, texts: Sequence[str], *, progress: ProgressFn | None = None,
              stats: ScoringStats | None = None) -> list[TokenScores]:
        """Per-token log-probabilities of every text (cached, in input order)."""
        from biaslens.engine.scoring import score_texts

        return score_texts(self.backend, texts, cache=self.cache, batch_size=self.batch_size, progress=progress,
                           stats=stats if stats is not None else self.stats)

    def generate(self, requests: Sequence[GenerationRequest | str], params: GenerationParams, *,
                 progress: ProgressFn | None = None, stats: ScoringStats | None = None) -> list[list[str]]:
        """``params.n`` responses per request (cached, seeded per row, in request order)."""
        from biaslens.engine.generation import generate_texts

        return generate_texts(self.backend, requests, params, cache=self.cache, batch_size=self.batch_size,
                              progress=progress, stats=stats if stats is not None else self.stats)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.backend.count_tokens(texts)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
