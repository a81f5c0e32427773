"""General statistics every method uses: pure functions over tables and arrays (no model code).

A method's own metric lives in its folder (``biaslens.methods.<name>.metrics``); the names this
package exported before the methods had folders still resolve, on first use, from there.
"""

from __future__ import annotations

import importlib
from typing import Any

from biaslens.metrics.continuation_pairs import (
    CallableDissimilarity,
    EmbeddingDissimilarity,
    JaccardDissimilarity,
    PairScores,
    ScoreDissimilarity,
    SentimentDissimilarity,
    aggregate_scores,
    cross_within_test,
    fairpair_scores,
    kfold_scores,
    make_dissimilarity,
    ngram_differences,
    prompt_level_test,
)
from biaslens.metrics.group_gaps import (
    demographic_gaps,
    demographic_mean_cis,
    extreme_generations,
    group_means,
    mean_table,
    prompt_means,
)
from biaslens.metrics.mannwhitney import (
    PairwiseMannWhitney,
    pairwise_mannwhitney,
)
from biaslens.metrics.multiple_testing import (
    benjamini_hochberg,
    holm,
)
from biaslens.metrics.proportions import (
    wilson_interval,
)

#: names exported here before each method had its own folder -> the module that holds them now
_MOVED: dict[str, tuple[str, str]] = {
    "GenBiasInterval": ("biaslens.methods.holistic.generation_metrics", "GenBiasInterval"),
    "LMBResult": ("biaslens.methods.redditbias.metrics", "LMBResult"),
    "LOVE_HATE_TEMPLATES": ("biaslens.methods.holistic.likelihood_metrics", "LOVE_HATE_TEMPLATES"),
    "LikelihoodBiasResult": ("biaslens.methods.holistic.likelihood_metrics", "LikelihoodBiasResult"),
    "NoiseFloor": ("biaslens.methods.holistic.generation_metrics", "NoiseFloor"),
    "PairedChange": ("biaslens.methods.holistic.generation_metrics", "PairedChange"),
    "axis_weighted_fgb": ("biaslens.methods.holistic.generation_metrics", "axis_weighted_fgb"),
    "bbq_bias_scores": ("biaslens.methods.bbq.metrics", "bias_scores"),
    "bias_tags": ("biaslens.methods.holistic.generation_metrics", "bias_tags"),
    "bootstrap_d_ci": ("biaslens.methods.redditbias.metrics", "bootstrap_d_ci"),
    "bootstrap_gen_bias_ci": ("biaslens.methods.holistic.generation_metrics", "bootstrap_gen_bias_ci"),
    "cohens_d_paired": ("biaslens.methods.redditbias.metrics", "cohens_d_paired"),
    "d_ci_t": ("biaslens.methods.redditbias.metrics", "d_ci_t"),
    "descriptor_cluster_means": ("biaslens.methods.holistic.generation_metrics", "descriptor_cluster_means"),
    "detectable_fgb": ("biaslens.methods.holistic.generation_metrics", "detectable_fgb"),
    "full_gen_bias": ("biaslens.methods.holistic.generation_metrics", "full_gen_bias"),
    "gen_bias_by_axis": ("biaslens.methods.holistic.generation_metrics", "gen_bias_by_axis"),
    "gen_bias_ci": ("biaslens.methods.holistic.generation_metrics", "gen_bias_ci"),
    "gender_polarity": ("biaslens.methods.bold.metrics", "gender_polarity"),
    "generation_bias_summary": ("biaslens.methods.holistic.generation_metrics", "generation_bias_summary"),
    "group_gaps": ("biaslens.methods.bold.metrics", "group_gaps"),
    "likelihood_bias": ("biaslens.methods.holistic.likelihood_metrics", "likelihood_bias"),
    "lmb_from_table": ("biaslens.methods.redditbias.metrics", "lmb_from_table"),
    "lmb_test": ("biaslens.methods.redditbias.metrics", "lmb_test"),
    "low_high_descriptors": ("biaslens.methods.holistic.likelihood_metrics", "low_high_descriptors"),
    "median_diff_ci": ("biaslens.methods.redditbias.metrics", "median_diff_ci"),
    "noise_floor_verdict": ("biaslens.methods.holistic.generation_metrics", "noise_floor_verdict"),
    "offensiveness_ranges": ("biaslens.methods.holistic.offensiveness_metrics", "offensiveness_ranges"),
    "outlier_mask": ("biaslens.methods.redditbias.metrics", "outlier_mask"),
    "paired_gen_bias_change": ("biaslens.methods.holistic.generation_metrics", "paired_gen_bias_change"),
    "partial_gen_bias": ("biaslens.methods.holistic.generation_metrics", "partial_gen_bias"),
    "percent_offensive": ("biaslens.methods.holistic.offensiveness_metrics", "percent_offensive"),
    "permutation_interval": ("biaslens.methods.holistic.generation_metrics", "permutation_interval"),
    "permutation_noise_floor": ("biaslens.methods.holistic.generation_metrics", "permutation_noise_floor"),
    "permuted_max_gap": ("biaslens.methods.bold.metrics", "permuted_max_gap"),
    "significance_stars": ("biaslens.methods.redditbias.metrics", "significance_stars"),
    "style_equality_bias_values": ("biaslens.methods.holistic.generation_metrics", "style_equality_bias_values"),
    "style_variances": ("biaslens.methods.holistic.generation_metrics", "style_variances"),
    "summed_cluster_gen_bias": ("biaslens.methods.holistic.generation_metrics", "summed_cluster_gen_bias"),
    "template_offensiveness": ("biaslens.methods.holistic.offensiveness_metrics", "template_offensiveness"),
}

__all__ = ["CallableDissimilarity", "EmbeddingDissimilarity", "JaccardDissimilarity", "PairScores", "PairwiseMannWhitney", "ScoreDissimilarity", "SentimentDissimilarity", "aggregate_scores", "benjamini_hochberg", "cross_within_test", "demographic_gaps", "demographic_mean_cis", "extreme_generations", "fairpair_scores", "group_means", "holm", "kfold_scores", "make_dissimilarity", "mean_table", "ngram_differences", "pairwise_mannwhitney", "prompt_level_test", "prompt_means", "wilson_interval"]


def __getattr__(name: str) -> Any:
    """The method metrics this package exported before (``biaslens.metrics.likelihood_bias`` ...),
    imported from the method's folder when first asked for."""
    if name in _MOVED:
        module, attr = _MOVED[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
