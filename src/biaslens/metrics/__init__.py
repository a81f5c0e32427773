"""Bias metrics: pure functions over per-item tables (no model code)."""

from .community import (
    demographic_gaps,
    demographic_mean_cis,
    extreme_generations,
    group_means,
    mean_table,
    prompt_means,
)
from .fairpair import (
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
    d_ci_t,
    lmb_from_table,
    lmb_test,
    median_diff_ci,
    outlier_mask,
    significance_stars,
)
from .mannwhitney import PairwiseMannWhitney, pairwise_mannwhitney
from .multiple_testing import benjamini_hochberg, holm

__all__ = [
    "CallableDissimilarity",
    "EmbeddingDissimilarity",
    "JaccardDissimilarity",
    "PairScores",
    "ScoreDissimilarity",
    "SentimentDissimilarity",
    "aggregate_scores",
    "cross_within_test",
    "fairpair_scores",
    "kfold_scores",
    "make_dissimilarity",
    "ngram_differences",
    "prompt_level_test",
    "LMBResult",
    "LOVE_HATE_TEMPLATES",
    "LikelihoodBiasResult",
    "PairwiseMannWhitney",
    "benjamini_hochberg",
    "bootstrap_d_ci",
    "d_ci_t",
    "median_diff_ci",
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
from .generation_bias import (
    GenBiasInterval,
    NoiseFloor,
    PairedChange,
    axis_weighted_fgb,
    bias_tags,
    bootstrap_gen_bias_ci,
    descriptor_cluster_means,
    detectable_fgb,
    full_gen_bias,
    gen_bias_by_axis,
    gen_bias_ci,
    generation_bias_summary,
    noise_floor_verdict,
    paired_gen_bias_change,
    partial_gen_bias,
    permutation_interval,
    permutation_noise_floor,
    style_equality_bias_values,
    style_variances,
    summed_cluster_gen_bias,
)
from .offensiveness import offensiveness_ranges, percent_offensive, template_offensiveness

__all__ += [
    "GenBiasInterval",
    "NoiseFloor",
    "PairedChange",
    "axis_weighted_fgb",
    "bias_tags",
    "bootstrap_gen_bias_ci",
    "gen_bias_ci",
    "descriptor_cluster_means",
    "detectable_fgb",
    "full_gen_bias",
    "gen_bias_by_axis",
    "generation_bias_summary",
    "noise_floor_verdict",
    "offensiveness_ranges",
    "paired_gen_bias_change",
    "partial_gen_bias",
    "percent_offensive",
    "permutation_interval",
    "permutation_noise_floor",
    "style_equality_bias_values",
    "style_variances",
    "summed_cluster_gen_bias",
    "template_offensiveness",
]


__all__ += [
    "demographic_gaps",
    "demographic_mean_cis",
    "extreme_generations",
    "group_means",
    "mean_table",
    "prompt_means",
]

from .bbq import bias_scores as bbq_bias_scores  # noqa: E402

__all__ += ["bbq_bias_scores"]

from .bold import gender_polarity, group_gaps, permuted_max_gap  # noqa: E402

__all__ += ["gender_polarity", "group_gaps", "permuted_max_gap"]
