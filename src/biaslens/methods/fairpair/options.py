"""Options of the ``fairpair`` suite, read from the ``fairpair:`` section of a run
configuration and as ``biaslens run fairpair --fairpair-...`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.options import Section, flag


class FairPairOptions(Section, section="fairpair", flag_prefix="fairpair-", panel="FairPair"):
    """Options of the ``fairpair`` suite. ``None`` sizes resolve per model at run time: the
    paper's settings (60 occupations, 100 samples, 128 tokens), or a small run on the
    embedded model (5 occupations, 20 samples, 32 tokens)."""

    occupations: list[str] | None = Field(None, json_schema_extra=flag(sep=","), description=(
        "comma-separated occupations [default the paper's 60; 5 on the embedded model]"))
    n_occupations: int | None = Field(None, ge=1, description="the first N of the paper's occupations")
    name_pairs: list[str | list[str]] = Field(
        default_factory=lambda: ["John:man/Jane:woman"], json_schema_extra=flag("--fairpair-names", metavar="<pair>"),
        description="name pair 'John/Jane' or 'John:man/Jane:woman' (repeatable; YAML also [John, man, Jane, woman])")
    descriptors: list[str] = Field(default_factory=list, json_schema_extra=flag(sep=",", keep_empty=True), description=(
        "comma-separated descriptors before the noun, e.g. 'young,old' (HolisticBias terms); '' = none"))
    samples: int | None = Field(None, ge=2, description="continuations per prompt [default 100; 20 on the embedded model]")
    max_new_tokens: int | None = Field(None, ge=1, description="tokens per continuation [default 128; 32 on the "
                                                               "embedded model]")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling top-p")
    temperature: float = Field(1.0, gt=0, description="sampling temperature")
    chat: bool = Field(False, description="wrap prompts in the model's chat template (off: plain continuation)")
    perturber: Literal["rule", "llm"] = Field("rule", description="rule (deterministic) or llm (the paper's instruction)")
    perturber_model: str | None = Field(None, description="model for the llm perturber [default the evaluated model]")
    mapping_file: Path | None = Field(None, description="rule perturber: your own word-pair YAML, or 'gender' "
                                                        "(default) / 'gender-full'")
    max_jaccard: float = Field(0.15, ge=0, le=1, description="filter: largest Jaccard dissimilarity original vs perturbed")
    filter_jaccard: Literal["masked", "raw"] = Field("masked", description="masked: the swapped words do not count; "
                                                                           "raw: as the paper")
    dissimilarities: list[str] = Field(default_factory=lambda: ["jaccard", "sentiment", "embedding"],
                                       json_schema_extra=flag(sep=","),
                                       description="comma-separated, from jaccard,sentiment,embedding")
    k_folds: int | None = Field(10, ge=2, description="folds of the k-fold variant (YAML null: off)")
    generations_file: Path | None = Field(None, json_schema_extra=flag("--fairpair-generations"), description=(
        "precomputed continuations, JSONL, CSV or Parquet with prompt and response (no model)"))
    ngram_top: int = Field(15, ge=1, description="n-grams shown per side")
