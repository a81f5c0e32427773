"""The torch pieces of reproducible Hugging Face generation (logits processors).

Each generated row (prompt, sample index) draws its random numbers from its own
``torch.Generator`` seeded with :func:`~biaslens.models.base.row_seed`. A row's sample
therefore does not depend on which other rows share its batch, so a resumed run,
or a run with another batch size, produces the same texts as an uninterrupted one.
HF ``generate`` runs greedy; the last logits processor does the sampling by
keeping only the token it drew.

The typed parameters live in the torch-free :mod:`biaslens.models.base`; they are
re-exported here for older imports.
"""

from __future__ import annotations

import torch

from biaslens.models.base import GenerationParams, GenerationRequest, row_seed

try:  # transformers >= 4.x
    from transformers import LogitsProcessor
except ImportError:  # pragma: no cover
    LogitsProcessor = object  # type: ignore[misc,assignment]

__all__ = ["GenerationParams", "GenerationRequest", "PerRowSampler", "ResponseNoRepeatNGram", "row_seed"]


class ResponseNoRepeatNGram(LogitsProcessor):
    """Block n-grams repeated *within the response* (the prompt's n-grams are allowed),
    as the paper's 3-gram blocking. With left padding every row's response starts at
    the same column, ``prompt_width``."""

    def __init__(self, n: int, prompt_width: int):
        self.n = n
        self.prompt_width = prompt_width

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        resp = input_ids[:, self.prompt_width :]
        if resp.shape[1] < self.n:
            return scores
        rows = resp.tolist()
        for b, seq in enumerate(rows):
            prefix = tuple(seq[len(seq) - self.n + 1 :])
            banned = [seq[i + self.n - 1] for i in range(len(seq) - self.n + 1) if tuple(seq[i : i + self.n - 1]) == prefix]
            if banned:
                scores[b, banned] = -float("inf")
        return scores


class PerRowSampler(LogitsProcessor):
    """Temperature, top-k and top-p, then one draw per row from the row's own generator;
    returns scores where only the drawn token is finite, so greedy decoding picks it."""

    def __init__(self, generators: list[torch.Generator], temperature: float, top_p: float, top_k: int):
        self.generators = generators
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        logits = scores.float() / self.temperature
        if self.top_k > 0:
            kth = torch.topk(logits, min(self.top_k, logits.shape[-1]), dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, -float("inf"))
        probs = torch.softmax(logits, dim=-1)
        if self.top_p < 1.0:
            sorted_p, idx = torch.sort(probs, descending=True, dim=-1)
            cum = sorted_p.cumsum(-1)
            # keep the smallest set whose mass reaches top_p (always at least one token)
            drop_sorted = (cum - sorted_p) >= self.top_p
            drop = drop_sorted.scatter(-1, idx, drop_sorted)
            probs = probs.masked_fill(drop, 0.0)
            probs = probs / probs.sum(-1, keepdim=True)
        out = torch.full_like(scores, -float("inf"))
        for b, gen in enumerate(self.generators):
            tok = torch.multinomial(probs[b].cpu(), 1, generator=gen)
            out[b, tok.to(out.device)] = 0.0
        return out
