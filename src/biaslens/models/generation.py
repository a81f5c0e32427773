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
        # every n-token window of each response; a window whose first n-1 tokens equal the
        # response's last n-1 tokens bans its last token (one tensor pass for the batch)
        windows = resp.unfold(1, self.n, 1)
        match = (windows[:, :, :-1] == resp[:, None, resp.shape[1] - self.n + 1 :]).all(-1)
        rows, cols = match.nonzero(as_tuple=True)
        scores[rows, windows[rows, cols, -1]] = -float("inf")
        return scores


class PerRowSampler(LogitsProcessor):
    """Temperature, top-k and top-p, then one draw per row from the row's own generator;
    returns scores where only the drawn token is finite, so greedy decoding picks it.

    The draw is made among the candidates only (the top-k tokens, or the nucleus), not over
    the whole vocabulary: ``torch.multinomial`` over 49k probabilities per row and step took
    a fifth of a sampled run's time. Candidates and their probabilities are computed for
    the whole batch at once; only the draw is per row. Ties at the k-th logit keep exactly
    k tokens (the order ``torch.topk`` gives).
    """

    #: nucleus candidates come from this many top tokens first; rows whose nucleus is wider
    #: fall back to a full sort, so the kept set is always the exact nucleus
    NUCLEUS_WINDOW = 1024

    def __init__(self, generators: list[torch.Generator], temperature: float, top_p: float, top_k: int):
        self.generators = generators
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k

    def candidates(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(probabilities, token ids, how many are kept) per row, most probable first; the
        kept probabilities sum to 1 and the rest are 0."""
        logits = scores.float() / self.temperature
        vocab = logits.shape[-1]
        if self.top_k > 0:
            vals, idx = torch.topk(logits, min(self.top_k, vocab), dim=-1)
        elif self.top_p < 1.0 and vocab > self.NUCLEUS_WINDOW:
            vals, idx = torch.topk(logits, self.NUCLEUS_WINDOW, dim=-1)
        else:
            vals, idx = torch.sort(logits, descending=True, dim=-1)
        # probabilities of the window's tokens under the full (or top-k) distribution
        norm = torch.logsumexp(vals if self.top_k > 0 else logits, dim=-1, keepdim=True)
        probs = torch.exp(vals - norm)
        if self.top_p < 1.0:
            cum = probs.cumsum(-1)
            # keep the smallest set whose mass reaches top_p (always at least one token)
            keep = (cum - probs) < self.top_p
            short = keep.all(-1) & (cum[:, -1] < self.top_p) & (vals.shape[-1] < vocab)
            if bool(short.any()):  # the nucleus is wider than the window: those rows in full
                full_vals, full_idx = torch.sort(logits[short], descending=True, dim=-1)
                full_p = torch.exp(full_vals - torch.logsumexp(full_vals, dim=-1, keepdim=True))
                full_keep = (full_p.cumsum(-1) - full_p) < self.top_p
                width = int(full_keep.sum(-1).max())
                pad = width - vals.shape[-1]
                if pad > 0:
                    vals = torch.nn.functional.pad(vals, (0, pad), value=-float("inf"))
                    idx = torch.nn.functional.pad(idx, (0, pad))
                    probs = torch.nn.functional.pad(probs, (0, pad))
                    keep = torch.nn.functional.pad(keep, (0, pad))
                rows = short.nonzero().squeeze(-1)
                probs[rows] = full_p[:, :probs.shape[-1]]
                idx[rows] = full_idx[:, :idx.shape[-1]]
                keep[rows] = full_keep[:, :keep.shape[-1]]
            probs = probs * keep
        else:
            keep = torch.ones_like(probs, dtype=torch.bool)
        probs = probs / probs.sum(-1, keepdim=True)
        return probs, idx, keep.sum(-1)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        probs, idx, n_kept = self.candidates(scores)
        probs, idx, n_kept = probs.cpu(), idx.cpu(), n_kept.tolist()
        drawn = [int(idx[b, torch.multinomial(probs[b, : n_kept[b]], 1, generator=gen)])
                 for b, gen in enumerate(self.generators)]
        out = torch.full_like(scores, -float("inf"))
        out[torch.arange(len(drawn), device=out.device), torch.tensor(drawn, device=out.device)] = 0.0
        return out
