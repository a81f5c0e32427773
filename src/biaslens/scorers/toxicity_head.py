"""The offline toxicity/offensiveness head (issue #33): logistic regression on the shipped
all-MiniLM-L6-v2 sentence embeddings plus a few scores read off the text, trained on public
labelled data whose licences allow it and on the labelled DEV halves of the real-output sets.

Inputs of the head (:func:`head_features`), chosen by cross-validation on the dev halves
(``scripts/train_toxicity_head.py``; the record inside the shipped ``toxicity_head.npz`` says
which were chosen and why):

- ``embedding``: the text's sentence embedding (384 numbers);
- ``profanity``: alt-profanity-check's probability (a lexical screen: profanity, slurs);
- ``vader_min``: minus VADER's compound score of the text's most negative sentence;
- ``toxigen_max`` / ``davidson_max``: the largest score over the text's sentences of a sub-head
  (logistic regression on sentence embeddings) fitted on one public set only: ToxiGen's
  human-written hateful/neutral statements about 13 groups, or Davidson et al.'s tweets labelled
  hate/offensive/neither. A long reply is toxic when one of its sentences is.

The head's output is shifted so that 0.5 is the decision threshold chosen on the dev halves
(out-of-fold predictions; the record's ``threshold``), so every figure that counts texts at
``p >= 0.5`` counts them at that threshold. Its scores are not calibrated probabilities.

Texts go in as the suites give them: masked (identity words replaced by the placeholder) when
masking is on, which is how the head was trained.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from importlib import resources
from pathlib import Path

import numpy as np

from biaslens.scorers.base import ScorerError

HEAD_FILE = "toxicity_head.npz"
#: names this head answers to in :data:`biaslens.scorers.toxicity.TOXICITY_SCORERS`
HEAD_NAMES = ("toxicity-head", "offensiveness-head")
#: every input the training script may choose from
FEATURES = ("embedding", "profanity", "vader_min", "toxigen_max", "davidson_max")
SUBHEADS = ("toxigen", "davidson")

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """The text cut after sentence-ending punctuation and at line breaks (empty pieces dropped).

    >>> split_sentences("They have no morals. They just do whatever they want!\\nOk")
    ['They have no morals.', 'They just do whatever they want!', 'Ok']
    >>> split_sentences("   ")
    ['']
    """
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]
    return parts or [text.strip()]


def _per_text_max(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, values)
    return out


@functools.lru_cache(maxsize=1)
def _vader():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def _profanity(texts: list[str]) -> np.ndarray:
    from profanity_check import predict_prob

    return np.asarray(predict_prob(texts), dtype=np.float64)


def encode_with_sentences(encoder, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Embeddings of the texts and of their sentences: (text embeddings, sentence embeddings,
    owner text of each sentence, the sentences). A text of one sentence reuses its own embedding."""
    sentences, owner = [], []
    for i, t in enumerate(texts):
        parts = split_sentences(t)
        sentences += parts
        owner += [i] * len(parts)
    owner_arr = np.asarray(owner, dtype=np.int64)
    whole = np.asarray(encoder.encode(list(texts)), dtype=np.float64).reshape(len(texts), -1)
    sent = whole[owner_arr].copy()
    several = np.flatnonzero(np.bincount(owner_arr, minlength=len(texts))[owner_arr] > 1)
    if len(several):
        sent[several] = encoder.encode([sentences[j] for j in several])
    return whole, sent, owner_arr, sentences


def raw_features(texts: list[str], encoder, subheads: dict[str, tuple[np.ndarray, float]]) -> dict[str, np.ndarray]:
    """Every candidate input of the head for ``texts`` (see the module docstring), by name."""
    texts = [str(t) for t in texts]
    n = len(texts)
    whole, sent, owner, sentences = encode_with_sentences(encoder, texts)
    vader = np.array([_vader().polarity_scores(s)["compound"] for s in sentences])
    out = {"embedding": whole, "profanity": _profanity(texts) if n else np.zeros(0),
           "vader_min": _per_text_max(-vader, owner, n)}
    for name, (w, b) in subheads.items():
        out[f"{name}_max"] = _per_text_max(sent @ w + b, owner, n)
    return out


def head_features(raw: dict[str, np.ndarray], features: tuple[str, ...] | list[str],
                  mean: np.ndarray | None = None, std: np.ndarray | None = None) -> np.ndarray:
    """The head's input matrix: the embedding (when chosen) then the chosen scalar scores,
    standardised with ``mean``/``std`` (of the training items)."""
    scalars = [f for f in features if f != "embedding"]
    cols = np.column_stack([raw[f] for f in scalars]) if scalars else np.zeros((len(raw["embedding"]), 0))
    if scalars and mean is not None and std is not None:
        cols = (cols - mean) / std
    parts = ([raw["embedding"]] if "embedding" in features else []) + [cols]
    return np.hstack(parts)


def fit_binary(x: np.ndarray, y: np.ndarray, c: float, sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Class-weighted binary logistic regression (L2 penalty 1/(2C) on the weights, deterministic
    L-BFGS from zeros: :func:`biaslens.scorers.styles.fit_softmax` with two classes), as one weight
    vector and intercept of the log-odds."""
    from biaslens.scorers.styles import fit_softmax

    w, b = fit_softmax(x, np.asarray(y, dtype=np.int64), 2, c, True, sample_weight=sample_weight)
    return w[:, 1] - w[:, 0], float(b[1] - b[0])


class ToxicityHead:
    """The trained offline head as a toxicity/offensiveness judge: ``probability(texts)`` (0.5 is
    the decision threshold chosen on dev) and ``scores(texts) -> {"toxicity": ...}``.

    Args:
        path: an ``.npz`` written by ``scripts/train_toxicity_head.py`` (default: the shipped one).
        encoder: the sentence encoder (default: all-MiniLM-L6-v2, loaded once per process).
    """

    def __init__(self, path: str | Path | None = None, *, encoder=None):
        ref = Path(path) if path else Path(str(resources.files("biaslens.scorers") / "data" / HEAD_FILE))
        try:
            digest = hashlib.sha256(ref.read_bytes()).hexdigest()[:12]
            with np.load(ref) as z:
                self.weights, self.bias = z["weights"].astype(np.float64), float(z["bias"])
                self.mean, self.std = z["mean"].astype(np.float64), z["std"].astype(np.float64)
                self.record = json.loads(str(z["record"]))
                self.subheads = {s: (z[f"sub_{s}_w"].astype(np.float64), float(z[f"sub_{s}_b"]))
                                 for s in SUBHEADS if f"sub_{s}_w" in z}
        except (OSError, KeyError, ValueError) as e:
            raise ScorerError(f"{ref}: cannot read the toxicity head ({e})") from None
        if encoder is None:
            from biaslens.scorers.styles import default_encoder

            encoder = default_encoder()
        self.encoder = encoder
        self.features = tuple(self.record["features"])
        self.threshold_logit = float(self.record["threshold_logit"])
        self.name = "toxicity-head" if path is None else f"toxicity-head:{ref}"
        #: what the scorer card's cache is keyed by: a retrained head gets a new card
        self.card_identity = f"{self.name}@{digest}"
        self.kind = (f"logistic regression on {', '.join(self.features)} (all-MiniLM-L6-v2 sentence embeddings; "
                     f"C={self.record['C']:g}), trained on {self.record['trained_on']}")

    def logits(self, texts: list[str]) -> np.ndarray:
        """The head's log-odds, before the threshold shift."""
        raw = raw_features(list(texts), self.encoder, self.subheads)
        return head_features(raw, self.features, self.mean, self.std) @ self.weights + self.bias

    def probability(self, texts: list[str]) -> np.ndarray:
        """Score in (0, 1); ``>= 0.5`` exactly when the log-odds reach the threshold chosen on dev."""
        if not len(texts):
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-(self.logits(texts) - self.threshold_logit)))

    def scores(self, texts: list[str]) -> dict[str, np.ndarray]:
        return {"toxicity": self.probability(texts)}


def load_toxicity_head(variant: str | None = None, *, device: str = "cpu") -> ToxicityHead:
    """The shipped head (``variant``: a path to another trained ``.npz``)."""
    return ToxicityHead(variant or None)
