"""RedditBias (Barikeri et al., 2021): bias specifications, official-file readers,
counterfactual swaps and spec-only template phrases."""

from .counterfactual import SwapResult, attribute_swap, augment, swap_terms, target_swap
from .readers import (
    AnnotatedPhrases,
    BiasTypeFiles,
    LabelReport,
    find_files,
    find_humanref,
    parse_labels,
    read_annotated,
    read_csv,
    read_lines,
    read_paired,
)
from .specs import (
    BUILTIN_NAMES,
    BiasSpec,
    RedditBiasError,
    attribute_regex,
    builtin_spec,
    builtin_specs,
    load_spec,
    resolve_specs,
)
from .templates import TEMPLATES, template_pairs

__all__ = [
    "BUILTIN_NAMES",
    "TEMPLATES",
    "AnnotatedPhrases",
    "BiasSpec",
    "BiasTypeFiles",
    "LabelReport",
    "RedditBiasError",
    "SwapResult",
    "attribute_regex",
    "attribute_swap",
    "augment",
    "builtin_spec",
    "builtin_specs",
    "find_files",
    "find_humanref",
    "load_spec",
    "parse_labels",
    "read_annotated",
    "read_csv",
    "read_lines",
    "read_paired",
    "resolve_specs",
    "swap_terms",
    "target_swap",
    "template_pairs",
]
