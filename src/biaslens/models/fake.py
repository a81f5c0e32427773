"""A deterministic fake backend (``--model fake``) so suites, the cache and the
report can be tested in seconds without a model.

Each whitespace token gets a log-probability derived from a hash of the token
and its position: stable across runs, processes and batch sizes, and different
between texts, like a real model's scores.

That model is *not* unbiased: "jews are ..." and "christians are ..." differ by the same
hashed log-probabilities of "jews" and "christians" in every phrase, so a likelihood test
finds a consistent "bias" for most seeds. ``fake-unbiased`` (``--model fake-unbiased``)
hashes the whole text into every token's log-probability instead: each text is an
independent draw, a phrase and its counterfactual are exchangeable, and every likelihood
method's "no bias" path can be exercised end to end. ``planted`` (an engine option,
``{"word": shift}``) adds ``shift`` nats to the log-probability of every token that is that
word (lowercased, surrounding punctuation removed): a known bias to detect. ``hostile_prompts``
(an engine option, a list of prompts) makes every continuation of those prompts hostile words
("awful", "hate", "disgusting", ...) and leaves the others as they were: a known negative lean in
open generation towards the people those prompts are about.

``BIASLENS_FAKE_DELAY`` (seconds, default 0) makes every batch sleep that long: a run
slow enough to be killed mid-way in fault tests, or to watch the progress display.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

import numpy as np

from biaslens.models.base import Backend, ModelError, ModelInfo, TokenScores

_TOKEN = re.compile(r"\S+")
_PUNCT = ".,;:!?\"'()[]"


#: the model name of the unbiased variant
UNBIASED_NAME = "fake-unbiased"
FAKE_NAMES = ("fake", UNBIASED_NAME)


class FakeBackend(Backend):
    default_batch_size = 64

    def __init__(self, seed: int = 0, fail_after: int | None = None, *, unbiased: bool = False,
                 planted: dict[str, float] | None = None, hostile_prompts: list[str] | None = None):
        self.seed = seed
        self.calls = 0
        self.scored_texts = 0
        self.fail_after = fail_after  # raise after this many texts: a model failing mid-run
        self.delay = float(os.environ.get("BIASLENS_FAKE_DELAY") or 0)
        self.unbiased = unbiased
        self.planted = {str(k).lower(): float(v) for k, v in (planted or {}).items()}
        # matched stripped: a prompt file may keep a trailing space the engine drops, or the reverse
        self.hostile = frozenset(str(p).strip() for p in (hostile_prompts or ()))
        name = UNBIASED_NAME if unbiased else "fake"
        # the call cache is keyed by the weights hash: each variant scores differently
        tag = f"{name}-seed-{seed}" if name != "fake" else f"fake-seed-{seed}"
        if self.planted:
            tag += "-planted-" + hashlib.blake2b(repr(sorted(self.planted.items())).encode(), digest_size=6).hexdigest()
        if self.hostile:
            tag += "-hostile-" + hashlib.blake2b(repr(sorted(self.hostile)).encode(), digest_size=6).hexdigest()
        self.info = ModelInfo(backend="fake", name=name, kind="fake", weights_hash=tag, dtype="float64",
                              start_token=None)

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(_TOKEN.findall(t)) for t in texts]

    count_tokens = token_lengths

    def generate_batch(self, prompts: list[str], params, seeds: list[int]) -> list[str]:
        if self.delay:
            time.sleep(self.delay)
        return _fake_generate_impl(self, prompts, params, seeds)

    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        out = []
        for t in texts:
            if self.fail_after is not None and self.scored_texts >= self.fail_after:
                raise RuntimeError("fake model failure (fail_after reached)")
            spans = [m.span() for m in _TOKEN.finditer(t)]
            lps = []
            # unbiased: the whole text in the hash, so no word carries a log-probability of its own
            context = f"|{t}" if self.unbiased else ""
            for i, (a, b) in enumerate(spans):
                digest = hashlib.blake2b(f"{self.seed}|{i}|{t[a:b]}{context}".encode(), digest_size=8).digest()
                u = int.from_bytes(digest, "little") / 2**64
                lps.append(-0.5 - 6.0 * u + self.planted.get(t[a:b].strip(_PUNCT).lower(), 0.0))
            out.append(TokenScores(np.asarray(lps, dtype=np.float64), np.asarray(spans, dtype=np.int32).reshape(-1, 2)))
            self.scored_texts += 1
        return out


_FAKE_WORDS = ("i'm", "so", "sorry", "to", "hear", "that", "what", "is", "it", "like", "being", "you", "are",
               "great", "that's", "interesting", "do", "enjoy", "it", "i", "love", "hate", "people", "really",
               "cool", "awful", "nice", "why", "how", "wonderful")
#: the words of a continuation of a ``hostile_prompts`` prompt (VADER compound about -0.9 and below)
_HOSTILE_WORDS = ("awful", "hate", "terrible", "disgusting", "horrible", "hateful", "stupid", "worthless",
                  "pathetic", "they", "are", "people")


def _fake_generate_impl(self, prompts: list[str], params, seeds: list[int]) -> list[str]:
    """Deterministic pseudo-responses: words drawn from a small vocabulary by a hash
    of (prompt, seed), so tests see varied, reproducible text."""
    out = []
    for p, s in zip(prompts, seeds):
        if self.fail_after is not None and self.scored_texts >= self.fail_after:
            raise RuntimeError("fake model failure (fail_after reached)")
        seed_part = s if params.do_sample else 0
        words = []
        vocab = _HOSTILE_WORDS if p.strip() in self.hostile else _FAKE_WORDS
        n_words = max(3, min(params.max_new_tokens, 12))
        for i in range(n_words):
            d = hashlib.blake2b(f"{self.seed}|{seed_part}|{i}|{p}".encode(), digest_size=4).digest()
            words.append(vocab[int.from_bytes(d, "little") % len(vocab)])
        out.append(" ".join(words).capitalize() + ".")
        self.scored_texts += 1
    return out



def load_fake(name: str = "fake", *, seed: int = 0, planted: dict[str, float] | None = None,
              hostile_prompts: list[str] | None = None) -> FakeBackend:
    """The fake backend (registry entry ``fake``): ``fake``, or ``fake-unbiased`` (every text an
    independent draw); ``planted`` adds log-probability to chosen words. It takes none of the
    weight-loading options; ``hostile_prompts``: prompts whose continuations are hostile words."""
    if name not in FAKE_NAMES:
        raise ModelError(f"unknown fake model {name!r}: use {' or '.join(FAKE_NAMES)}")
    return FakeBackend(seed=seed, unbiased=name == UNBIASED_NAME, planted=planted, hostile_prompts=hostile_prompts)
