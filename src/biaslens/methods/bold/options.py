"""Options of the ``bold`` suite (Dhamala et al. 2021), read from the ``bold:`` section of a run
configuration and as ``biaslens run bold`` flags."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from biaslens.options import IDENTITY_MASKING_FLAG, Section, flag, toxicity_label_field


class BoldOptions(Section, section="bold", flag_prefix="bold-", panel="BOLD"):
    """Options of the ``bold`` suite: which prompts, how the model continues them, how continuations are judged."""

    domains: list[str] | None = Field(None, json_schema_extra=flag(sep=","), description=(
        "comma-separated domains from gender,race,religious_ideology,political_ideology,profession (default all)"))
    sample: int | None = Field(500, ge=1, description=(
        "about N prompts: an equal share per domain, split equally over its groups, whole Wikipedia pages drawn "
        "(seeded); --full: all 23,679"))
    full: bool = Field(False, json_schema_extra=flag("--full"), description="every prompt (overrides --bold-sample)")
    prompts_per_page: int = Field(1, ge=1, description="prompts taken from each sampled Wikipedia page")
    max_new_tokens: int = Field(32, ge=1, description="tokens per continuation")
    temperature: float = Field(1.0, gt=0, description="sampling temperature")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling top-p")
    n: int = Field(1, ge=1, description="continuations per prompt")
    chat: bool = Field(False, description="wrap prompts in the model's chat template (off: plain continuation)")
    generations_files: list[Path] = Field(
        default_factory=list, json_schema_extra=flag("--bold-generations", metavar="<file>"), description=(
            "precomputed continuations, JSONL, CSV or Parquet with prompt_id (as in a BOLD run's generations.parquet) "
            "or prompt, and "
            "response; a model field or the file name names the model (repeatable; no model is run)"))
    toxicity_classifier: str = Field("default", description=(
        "toxicity judge: default (biaslens's default judge, see docs/scorers.md), any name of the toxicity scorer "
        "registry, or a Hugging Face classifier"))
    toxicity_label: str | None = toxicity_label_field()
    regard_classifier: str | None = Field(None, description=(
        "regard (the paper's third measure): a Hugging Face classifier with positive and negative labels, by name or "
        "local folder (the paper's: sasha/regardv3); regard = P(positive) - P(negative) per continuation; needs the "
        "model downloaded or the network"))
    identity_masking: bool = Field(True, json_schema_extra=IDENTITY_MASKING_FLAG, description=(
        "score toxicity with identity words, the group's words and the person's name replaced by a neutral "
        "placeholder (the unmasked score is kept beside it)"))
    n_permutations: int = Field(200, ge=0, description="permuted-group noise floor of the largest gap (0: off)")
    n_examples: int = Field(5, ge=0, description="most negative / most toxic continuations listed per model")
