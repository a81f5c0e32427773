"""Bias metrics: pure functions over per-item tables (no model code)."""

from .likelihood_bias import (
    LOVE_HATE_TEMPLATES,
    LikelihoodBiasResult,
    likelihood_bias,
    low_high_descriptors,
    wilson_interval,
)
from .mannwhitney import PairwiseMannWhitney, pairwise_mannwhitney
from .multiple_testing import benjamini_hochberg, holm

__all__ = [
    "LOVE_HATE_TEMPLATES",
    "LikelihoodBiasResult",
    "PairwiseMannWhitney",
    "benjamini_hochberg",
    "holm",
    "likelihood_bias",
    "low_high_descriptors",
    "pairwise_mannwhitney",
    "wilson_interval",
]
