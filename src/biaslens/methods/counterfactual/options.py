"""Options of the ``counterfactual`` suite, read from the ``counterfactual:`` section of a run
configuration and as ``biaslens run counterfactual --counterfactual-...`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.options import IDENTITY_MASKING_FLAG, Section, flag


class CounterfactualOptions(Section, section="counterfactual", flag_prefix="counterfactual-",
                            panel="Counterfactual (your prompts)"):
    """Options of the ``counterfactual`` suite: whose prompts, which identities are varied, how the
    model continues each variant, how continuations are judged."""

    prompts: Path | None = Field(None, description=(
        "your prompts: a text file (one prompt a line), JSONL, CSV or Parquet with a 'prompt' field (other fields "
        "kept) [default: the shipped example, biaslens/methods/counterfactual/data/example_prompts.txt]"))
    axes: list[str] = Field(
        default_factory=lambda: ["gender", "race_ethnicity", "religion", "age", "disability", "sexual_orientation"],
        json_schema_extra=flag(sep=","), description=(
            "comma-separated axes varied, from gender,race_ethnicity,religion,age,disability,sexual_orientation,"
            "nationality (and the name of a --counterfactual-word-pairs file)"))
    groups: list[str] = Field(default_factory=list, json_schema_extra=flag(sep=","), description=(
        "comma-separated groups (descriptors, e.g. 'Muslim,Christian,Jewish'; 'male,female' for gender): an axis "
        "named here uses these groups instead of its default set"))
    word_pairs: Path | None = Field(None, description=(
        "your own word pairs: a YAML file as FairPair's mapping (name, source_label, target_label, pairs of "
        "[source, target]), varied as one more axis named by its 'name'"))
    perturber: Literal["rule", "llm"] = Field("rule", description=(
        "who writes the variants: rule (FairPair's rule perturber and the descriptor lists) or llm (a language "
        "model given FairPair's instruction, each variant checked: it must name the new group and change no more "
        "than the mention; the others are dropped and counted)"))
    perturber_model: str | None = Field(None, description=(
        "the language model of --counterfactual-perturber llm [default: the evaluated model]"))
    samples: int = Field(5, ge=1, description="continuations per variant")
    max_new_tokens: int = Field(32, ge=1, description="tokens per continuation")
    temperature: float = Field(1.0, gt=0, description="sampling temperature")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling top-p")
    chat: bool = Field(False, description="wrap prompts in the model's chat template (off: plain continuation)")
    generations_file: Path | None = Field(None, json_schema_extra=flag("--counterfactual-generations"), description=(
        "precomputed continuations of the variants (JSONL, CSV or Parquet with prompt and response; the prompt as "
        "in variants.csv; no model is run)"))
    dry_run: bool = Field(False, description="write the variants table (variants.csv) and stop before any generation")
    toxicity_classifier: str = Field("default", description=(
        "toxicity judge: default (biaslens's default judge, see docs/scorers.md), any name of the toxicity scorer "
        "registry, or a Hugging Face classifier"))
    identity_masking: bool = Field(True, json_schema_extra=IDENTITY_MASKING_FLAG, description=(
        "score toxicity with identity words and the variant's group replaced by a neutral placeholder"))
    langfair_cosine: bool = Field(True, description=(
        "LangFair's cosine similarity of sentence embeddings (loads the MiniLM sentence encoder)"))
    n_examples: int = Field(3, ge=0, description="largest gaps whose continuations the report shows side by side")
