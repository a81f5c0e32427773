"""FairPair data: Common Sents prompts and the e -> e' perturbers with their filters."""

from biaslens.vocabulary.commonsents import occupations
from biaslens.vocabulary.perturb import (
    FILTER_REASONS,
    INSTRUCTION,
    FilterResult,
    LLMPerturber,
    NamePair,
    PerturbationMap,
    ReferenceCheck,
    RulePerturber,
    TermPair,
    check_perturbation,
    context_of,
    jaccard,
    parse_name_pair,
    token_set,
)

from .commonsents import (
    PromptPair,
    build_prompts,
    default_name_pairs,
    expand_descriptors,
    select_occupations,
    sentence,
)

__all__ = [
    "FILTER_REASONS", "INSTRUCTION", "FilterResult", "LLMPerturber", "NamePair", "PerturbationMap", "PromptPair",
    "ReferenceCheck", "RulePerturber", "TermPair", "build_prompts", "check_perturbation", "context_of", "default_name_pairs", "expand_descriptors",
    "jaccard",
    "occupations", "parse_name_pair", "select_occupations", "sentence", "token_set",
]
