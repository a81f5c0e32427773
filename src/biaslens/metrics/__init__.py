"""Bias metrics: pure functions over per-item tables (no model code)."""

from .likelihood_bias import (
    LOVE_HATE_TEMPLATES,
    LikelihoodBiasResult,
    likelihood_bias,
    low_high_descriptors,
    wilson_interval,
)
from .lmb import (
    LMBResult,
    bootstrap_d_ci,
    cohens_d_paired,
    lmb_from_table,
    lmb_test,
    outlier_mask,
    significance_stars,
)
from .mannwhitney import PairwiseMannWhitney, pairwise_mannwhitney
from .multiple_testing import benjamini_hochberg, holm

__all__ = [
    "LMBResult",
    "LOVE_HATE_TEMPLATES",
    "LikelihoodBiasResult",
    "PairwiseMannWhitney",
    "benjamini_hochberg",
    "bootstrap_d_ci",
    "cohens_d_paired",
    "holm",
    "likelihood_bias",
    "lmb_from_table",
    "lmb_test",
    "low_high_descriptors",
    "outlier_mask",
    "pairwise_mannwhitney",
    "significance_stars",
    "wilson_interval",
]
