"""VADER sentiment (Hutto and Gilbert 2014), lexicon shipped in the vaderSentiment wheel."""

from __future__ import annotations

import numpy as np

from biaslens.scorers.base import ScorerError

POSITIVE_THRESHOLD = 0.05
NEGATIVE_THRESHOLD = -0.05


class VaderSentiment:
    """Compound sentiment in [-1, 1] and the standard classes (>= 0.05 positive,
    <= -0.05 negative, else neutral).

    >>> v = VaderSentiment()
    >>> v.classes(np.array([0.5, 0.0, -0.3])).tolist()
    ['positive', 'neutral', 'negative']
    """

    name = "vader"

    def __init__(self):
        try:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
        except ImportError as e:
            raise ScorerError("VADER is not installed: pip install vaderSentiment") from e
        self._analyzer = SentimentIntensityAnalyzer()

    def compound(self, texts: list[str]) -> np.ndarray:
        return np.asarray([self._analyzer.polarity_scores(t)["compound"] for t in texts], dtype=np.float64)

    def labels(self, texts: list[str]) -> np.ndarray:
        """The class of each text at the standard cut-offs."""
        return self.classes(self.compound(texts))

    @staticmethod
    def classes(compound: np.ndarray) -> np.ndarray:
        return np.where(compound >= POSITIVE_THRESHOLD, "positive",
                        np.where(compound <= NEGATIVE_THRESHOLD, "negative", "neutral"))
