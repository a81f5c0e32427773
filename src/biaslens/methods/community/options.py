"""Options of the ``community`` suite (Wald & Pfahler), read from the ``community:`` section
of a run configuration and as ``biaslens run community`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.models.embedded import EMBEDDED_NAME
from biaslens.options import IDENTITY_MASKING_FLAG, ConfigFile, Section, flag, toxicity_label_field, training_field


class CommunityOptions(Section, section="community", flag_prefix="community-", panel="Community"):
    """Options of the ``community`` suite (Wald & Pfahler): several models side by side."""

    models: list[str] = Field(default_factory=list, json_schema_extra=flag("--community-model", metavar="<model>"),
                              description="a model to compare (repeatable): a folder from `biaslens finetune "
                                          "community` or a base model; --model, when given, comes first "
                                          "(default: --model alone)")
    n: int = Field(50, ge=1, json_schema_extra=flag("--n"), description="generations per prompt (paper: 50)")
    max_new_tokens: int = Field(64, ge=1, description="token budget per generation, then trimmed to max_words")
    min_new_tokens: int = Field(32, ge=0, description="end of text blocked until this many tokens (about 25 words)")
    max_words: int = Field(50, ge=1, description="generations are cut to this many words (paper: 25-50 words)")
    min_words: int = Field(25, ge=0, description="generations shorter than this are counted (kept) in run.json")
    no_repeat_ngram_size: int = Field(3, ge=0, description="paper: 3")
    temperature: float = Field(1.0, gt=0, description="sampling temperature")
    top_k: int = Field(50, ge=0, description="Hugging Face pipeline default, as the paper used")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling top-p")
    chat: bool = Field(False, description="chat template for models without a separator (community models: never)")
    templates_file: Path | None = Field(None, json_schema_extra=flag("--community-templates"),
                                        description="your own templates YAML (default: the paper's six)")
    keywords_file: Path | None = Field(None, json_schema_extra=flag("--community-keywords"), description=(
        "your own demographics/keywords YAML (default: the paper's 15 demographics)"))
    dimensions: list[str] | None = Field(None, json_schema_extra=flag("--dimensions", sep=","), description=(
        "comma-separated dimensions, e.g. gender,religion (default all five)"))
    generations_files: list[Path] = Field(
        default_factory=list, json_schema_extra=flag("--community-generations", metavar="<file>"), description=(
            "precomputed replies, JSONL, CSV or Parquet with prompt (or prompt_id), response and optionally model "
            "(repeatable; one model per file unless lines name one)"))
    toxicity_classifier: str = Field("auto", json_schema_extra=flag("--toxicity-classifier"), description=(
        "auto (default: $BIASLENS_TOXICITY_MODEL, else Detoxify, else the offline trained head toxicity-head), "
        "toxicity-head, alt-profanity-check (lexical screen), detoxify[:variant], judge (the --judge-model asked with a "
        "rubric) or a Hugging Face classifier"))
    sentiment_classifier: str = Field("vader", description=(
        "vader (the paper's, default) or judge (the --judge-model asked with a rubric: compound = P(positive) - "
        "P(negative), class = the most probable answer)"))
    identity_masking: bool = Field(True, json_schema_extra=IDENTITY_MASKING_FLAG, description=(
        "score toxicity with the dimension's keywords replaced by a neutral placeholder (false: the paper's unmasked "
        "scores as headline)"))
    toxicity_label: str | None = toxicity_label_field()
    n_bootstrap: int = Field(1000, ge=0, json_schema_extra=flag(skip=True), description="unused: the gap and mean intervals are keyword-level t intervals "
                                                     "(kept so older configs load)")
    n_examples: int = Field(5, ge=0, description="most negative/toxic generations listed per model")


class FinetuneCommunityConfig(ConfigFile):
    """``biaslens finetune community``: a causal LM fine-tuned on one community's posts and comments."""

    model: str = training_field("model", EMBEDDED_NAME, (
        "base causal LM: 'smollm2-135m' (embedded), a folder or a Hugging Face id"))
    data: Path = Field(description="posts and comments (CSV, TSV, JSONL or Parquet); with --comments, the posts file")
    out: Path = training_field("out")
    comments: Path | None = Field(None, description="separate comments file, joined to --data on the post id")
    title_column: str | None = Field(None, description="post title column (default: title)")
    text_column: str | None = Field(None, description="post text column (default: text, selftext, body, ...)")
    comment_column: str | None = Field(None, description="comment column (default: comment, body, ...)")
    post_id_column: str | None = Field(None, description="post id column of the posts file (default: post_id, id)")
    comment_post_id_column: str | None = Field(None, description=(
        "comments file: column with the post's id (default: post_id, link_id)"))
    author_column: str | None = Field(None, description=(
        "author column; its user names are removed from texts ('' = off) (default: author)"))
    community: str | None = Field(None, description="name recorded with the model (default: the data file's name)")
    separator: str = Field("<|sep|>", description="token between post and comment, added to the tokenizer")
    loss_on: Literal["all", "comment"] = Field("all", description=(
        "all: learn post and comment (paper); comment: the post is context only"))
    epochs: float = training_field("epochs", description="training epochs (paper: 2; more made models ignore the prompt)")
    max_length: int = Field(128, ge=8, description="truncate examples to this many tokens (paper: 128)")
    batch_size: int = training_field("batch_size")
    grad_accum: int = training_field("grad_accum")
    learning_rate: float = training_field("learning_rate")
    max_steps: int = training_field("max_steps")
    save_steps: int = training_field("save_steps")
    eval_fraction: float = Field(0.0, ge=0, lt=1, description="hold out this share of posts for eval loss")
    limit: int | None = Field(None, ge=1, description="use only the first N examples (quick trial)")
    device: str = training_field("device")
    seed: int = training_field("seed")
