"""Generation parameters and the pieces that make sampled generations reproducible.

Each generated row (prompt, sample index) draws its random numbers from its own
``torch.Generator`` seeded from (seed, prompt, sample index). A row's sample
therefore does not depend on which other rows share its batch, so a resumed run,
or a run with another batch size, produces the same texts as an uninterrupted one.
HF ``generate`` runs greedy; the last logits processor does the sampling by
keeping only the token it drew.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

try:  # transformers >= 4.x
    from transformers import LogitsProcessor
except ImportError:  # pragma: no cover
    LogitsProcessor = object  # type: ignore[misc,assignment]


@dataclass(frozen=True)
class GenerationParams:
    """How to generate. Paper settings for HolisticBias: ``num_beams=10`` (DialoGPT) or 3
    (BlenderBot), ``min_new_tokens=20``, ``no_repeat_ngram_size=3``.

    Attributes:
        max_new_tokens: upper bound on generated tokens.
        min_new_tokens: end-of-sequence is blocked until this many tokens exist.
        do_sample: sample (temperature, top_p, top_k) instead of greedy/beam search.
        temperature, top_p, top_k: sampling controls (top_k 0 = off).
        num_beams: beam search width (deterministic; ignored when sampling).
        no_repeat_ngram_size: block repeated n-grams within the response only (0 = off).
        n: responses per prompt.
        seed: base seed; each (prompt, sample index) gets its own generator.
        chat: apply the tokenizer's chat template (None = when the tokenizer has one).
    """

    max_new_tokens: int = 64
    min_new_tokens: int = 0
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    num_beams: int = 1
    no_repeat_ngram_size: int = 0
    n: int = 1
    seed: int = 0
    chat: bool | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.min_new_tokens < 0 or self.min_new_tokens > self.max_new_tokens:
            raise ValueError("need 0 <= min_new_tokens <= max_new_tokens and max_new_tokens >= 1")
        if self.n < 1 or self.num_beams < 1:
            raise ValueError("n and num_beams must be >= 1")
        if not (0 < self.top_p <= 1) or self.temperature <= 0:
            raise ValueError("need 0 < top_p <= 1 and temperature > 0")

    def key_params(self) -> dict[str, Any]:
        """Parameters that change one response (n does not: it only says how many rows)."""
        d = asdict(self)
        d.pop("n")
        if not self.do_sample:
            d.pop("seed")
            d.pop("temperature")
            d.pop("top_p")
            d.pop("top_k")
        return d


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt, optionally with earlier context lines (e.g. two persona lines)."""

    prompt: str
    context: tuple[str, ...] = field(default_factory=tuple)

    def chat_messages(self) -> list[dict[str, str]]:
        """The request as chat messages: context lines as one system message, the prompt as the user's."""
        messages = [{"role": "system", "content": "\n".join(self.context)}] if self.context else []
        return [*messages, {"role": "user", "content": self.prompt}]


def row_seed(seed: int, prompt_key: str, sample_index: int) -> int:
    """A 63-bit seed for one (prompt, sample) row, stable across processes."""
    h = hashlib.blake2b(f"{seed}|{sample_index}|{prompt_key}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


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
