"""The model interface every suite uses (torch-free: importing it loads no framework).

A backend turns texts into per-token log-probabilities (``score_batch``) and prompts
into samples (``generate_batch``, with the typed :class:`GenerationParams`). Everything
around the forward pass (caching, batching, executors, progress) lives in
:mod:`biaslens.engine.calls`, once, so a backend only writes the model call.
"""

from __future__ import annotations

import abc
import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


class ModelError(RuntimeError):
    """A model could not be loaded or called; the message says what to do."""

    kind = "model"


@dataclass(frozen=True)
class TokenScores:
    """Log-probabilities of the scored tokens of one text.

    Attributes:
        logprobs: natural-log probability of each scored token (float64).
        offsets: (n, 2) character span of each scored token in the text, so a
            metric can keep only the tokens of a phrase (masked-LM variant).
    """

    logprobs: np.ndarray
    offsets: np.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.logprobs.shape[0])

    @property
    def sum_logprob(self) -> float:
        return float(self.logprobs.sum())

    def _logprobs_in(self, span: tuple[int, int] | None) -> np.ndarray:
        """Log-probs of all scored tokens, or of those overlapping the character ``span``."""
        if span is None:
            return self.logprobs
        start, end = span
        return self.logprobs[(self.offsets[:, 0] < end) & (self.offsets[:, 1] > start)]

    def perplexity(self, span: tuple[int, int] | None = None) -> float:
        """exp(mean negative log-likelihood) over all scored tokens or those inside ``span``.

        >>> TokenScores(np.log([0.5, 0.5]), np.array([[0, 1], [1, 2]])).perplexity()
        2.0
        """
        lp = self._logprobs_in(span)
        if lp.size == 0:
            return float("nan")
        return float(np.exp(-lp.mean()))

    def span_logprob(self, span: tuple[int, int] | None = None) -> float:
        """Summed log-probability of the tokens overlapping ``span`` (all tokens if None):
        for a masked LM, the pseudo-log-likelihood of that span (Salazar et al. 2020). NaN
        when no scored token overlaps it.

        >>> round(TokenScores(np.log([0.5, 0.25]), np.array([[0, 1], [2, 3]])).span_logprob(), 4)  # log(1/8)
        -2.0794
        >>> round(TokenScores(np.log([0.5, 0.25]), np.array([[0, 1], [2, 3]])).span_logprob((2, 3)), 4)
        -1.3863
        """
        lp = self._logprobs_in(span)
        return float(lp.sum()) if lp.size else float("nan")

    # Compact binary form for the cache: n, logprobs, offsets.
    def to_bytes(self) -> bytes:
        n = np.array([self.n_tokens], dtype="<i8")
        return (
            n.tobytes()
            + self.logprobs.astype("<f8").tobytes()
            + self.offsets.astype("<i4").reshape(-1).tobytes()
        )

    @classmethod
    def from_bytes(cls, blob: bytes) -> TokenScores:
        n = int(np.frombuffer(blob, dtype="<i8", count=1)[0])
        expected = 8 + 8 * n + 8 * n
        if n < 0 or len(blob) != expected:
            raise ValueError(f"corrupt score record: {len(blob)} bytes, expected {expected}")
        lp = np.frombuffer(blob, dtype="<f8", count=n, offset=8).copy()
        off = np.frombuffer(blob, dtype="<i4", count=2 * n, offset=8 + 8 * n).reshape(n, 2).copy()
        return cls(lp, off)


@dataclass
class ModelInfo:
    """What identifies a model's outputs: it goes into every cache key and run.json."""

    backend: str
    name: str
    kind: str  # "causal" | "masked" | "fake"
    weights_hash: str
    dtype: str
    start_token: str | None
    extra: dict[str, Any] = field(default_factory=dict)

    def cache_identity(self) -> dict[str, Any]:
        """The parts of the identity that change what a model returns (not device, not batch size)."""
        return {
            "backend": self.backend,
            "name": self.name,
            "kind": self.kind,
            "weights_hash": self.weights_hash,
            "dtype": self.dtype,
            "start_token": self.start_token,
            **{k: v for k, v in self.extra.items() if k.startswith("key_")},
        }


# -- generation parameters --------------------------------------------------------


#: bumped when the in-process sampler draws differently for the same seed (2: the draw is
#: made among the top-k / nucleus candidates only; 3: biaslens's own decoding loop, whose
#: prompt prefill rounds differently, so a rare draw near a boundary can go the other way)
SAMPLER_VERSION = 3


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
        if self.do_sample:
            # version of the in-process sampler's random stream: samples of an older stream
            # in the cache must not mix with new ones in one run
            d["sampler"] = SAMPLER_VERSION
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


# -- the backend interface ----------------------------------------------------------


class Backend(abc.ABC):
    """One model behind one small interface.

    Subclasses implement :meth:`score_batch`; the engine calls it with batches of
    texts of similar length and caches the results.
    """

    info: ModelInfo
    #: default batch size when the user does not give one
    default_batch_size: int = 16

    @property
    def generate_batch_size(self) -> int:
        """Rows per generation batch when the user gives none (default: as scoring)."""
        return self.default_batch_size

    @abc.abstractmethod
    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        """Score each text; return one :class:`TokenScores` per text, same order."""

    def render_prompt(self, request: GenerationRequest, params: GenerationParams) -> str:
        """The exact text the model sees for a generation request (it goes into the cache key)."""
        return "\n".join((*request.context, request.prompt))

    def generate_batch(self, prompts: list[str], params: GenerationParams, seeds: list[int]) -> list[str]:
        """Generate one response per rendered prompt; ``seeds[i]`` seeds row i's sampling."""
        raise ModelError(f"backend {self.info.backend!r} cannot generate text")

    def batch_order(self, texts: list[str]) -> list[int]:
        """The order in which the engine batches texts: longest first by default, so
        batches hold texts of similar length and memory peaks at the start."""
        lengths = self.token_lengths(texts)
        return sorted(range(len(texts)), key=lambda i: (-lengths[i], texts[i]))

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Approximate token counts, used only to sort batches (characters by default)."""
        return [len(t) for t in texts]

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Number of tokens of each text as the model's tokenizer sees it (no special tokens)."""
        return self.token_lengths(texts)

    def close(self) -> None:  # noqa: B027 - optional hook; pragma: no cover - nothing to free by default
        """Free model memory."""


def perplexity_definition(backend: Backend) -> str:
    """How the backend's phrase perplexities are defined, so runs are only compared like with like:
    ``start_token`` (a document-start token is prepended, every token scored) or
    ``no_start_token`` (the authors' exp(loss): no start token, tokens 2..n scored)."""
    first = backend.info.extra.get("key_score_first_token", True)
    return "start_token" if first and backend.info.start_token else "no_start_token"
