"""The configurations of the training commands (``biaslens debias``, ``finetune community``,
``tune style-equality``, ``downstream``): each is read from ``--config FILE.yaml``, ``-S
field=value`` and the command's flags, which are generated from these fields
(:mod:`biaslens.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.config import ConfigFile
from biaslens.models.embedded import EMBEDDED_NAME
from biaslens.options import flag

_MODEL = flag("--model", short="-m")
_OUT = flag("--out", short="-o")


class DebiasConfig(ConfigFile):
    """``biaslens debias {cda,lmd,add,hd}``: RedditBias debiasing of one bias type."""

    model: str = Field(EMBEDDED_NAME, json_schema_extra=_MODEL, description=(
        "'smollm2-135m' (embedded), a local model folder or a Hugging Face id"))
    bias_type: str = Field(json_schema_extra=flag(short="-b"), description=(
        "religion1, religion2, race, gender, orientation or the name in --spec-file"))
    out: Path = Field(json_schema_extra=_OUT, description="output model folder (re-run the same command to resume)")
    data_dir: Path | None = Field(None, description=(
        "a RedditBias checkout: trains on text_files/<type>/<type>_bias_manual_train.txt; without it, on phrases "
        "built from the specification"))
    spec_files: list[Path] = Field(default_factory=list, json_schema_extra=flag("--spec-file", metavar="<file>"),
                                   description="your own bias specification, YAML or JSON (repeatable)")
    lm_weight: float = Field(0.01, ge=0, description="weight of the LM loss (lmd/add/hd; CDA always uses 1)")
    debias_weight: float = Field(10.0, ge=0, description="weight of the debiasing loss (lmd/add/hd)")
    epochs: float = Field(2.0, gt=0, description="training epochs (paper: 2)")
    batch_size: int = Field(8, ge=1, description="texts per step")
    grad_accum: int = Field(1, ge=1, description="gradient accumulation steps")
    lr: float = Field(5e-5, gt=0, description="AdamW learning rate (paper: 5e-5)")
    max_steps: int = Field(-1, description="stop after N optimizer steps (-1: run the epochs)")
    max_length: int = Field(128, ge=1, description="tokens per text, the start token included (longer texts are cut)")
    save_steps: int = Field(50, ge=1, description="checkpoint every N steps (resume point)")
    device: str = Field("cpu", description="cpu, cuda, cuda:N, mps (the later --evaluate run uses it too)")
    seed: int = Field(0, description="training seed")
    cda_mode: Literal["targets", "attributes"] | None = Field(None, description=(
        "cda: targets (CTDA, default) or attributes (CADA)"))
    counterfactual_mode: Literal["default", "reference"] = Field("default", description=(
        "cda: default (shared term matcher: whole words with plural/possessive forms, case kept) or reference "
        "(the authors' lowercase substring swap)"))
    cda_sides: Literal["one-sided", "two-sided"] = Field("one-sided", description=(
        "cda targets: one-sided (the paper: minoritized -> dominant copies) or two-sided (copies in both directions)"))
    max_template_pairs: int = Field(400, ge=1, description="without --data-dir: at most this many template phrases")
    grid: bool = Field(False, description=(
        "run the reference grid (batch 4/8/16, grad. accum. 1/5/8, lm 0.001/0.01, debias 10/50/100) and keep the "
        "model with the highest validation p-value"))
    grid_file: Path | None = Field(None, description="your own grid, YAML: hyperparameter -> list of values "
                                                     "(implies --grid)")
    evaluate: bool = Field(True, description=(
        "afterwards, run the redditbias suite (test split, LM perplexity) on the result into OUT/eval for "
        "`biaslens compare`"))
    max_reference_lines: int | None = Field(None, description=(
        "evaluation: LM perplexity on the first N lines of the reference text only"))
    score_first_token: bool = Field(True, json_schema_extra=flag("--score-first-token/--no-start-token"), description=(
        "--no-start-token: grid validation and --evaluate score phrases the authors' way, exp(mean loss over tokens "
        "2..n), no start token (recorded; `compare` will not mix definitions)"))
    keep_checkpoints: bool = Field(False, description="keep OUT/checkpoints after success (optimizer state: large)")


class FinetuneCommunityConfig(ConfigFile):
    """``biaslens finetune community``: a causal LM fine-tuned on one community's posts and comments."""

    model: str = Field(EMBEDDED_NAME, json_schema_extra=_MODEL, description=(
        "base causal LM: 'smollm2-135m' (embedded), a folder or a Hugging Face id"))
    data: Path = Field(description="posts and comments (CSV, TSV, JSONL or Parquet); with --comments, the posts file")
    out: Path = Field(json_schema_extra=_OUT, description="output model folder (re-run the same command to resume)")
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
    epochs: float = Field(2.0, gt=0, description="training epochs (paper: 2; more made models ignore the prompt)")
    max_length: int = Field(128, ge=8, description="truncate examples to this many tokens (paper: 128)")
    batch_size: int = Field(8, ge=1, description="examples per step")
    grad_accum: int = Field(1, ge=1, description="gradient accumulation steps")
    learning_rate: float = Field(5e-5, gt=0, description="AdamW learning rate")
    max_steps: int = Field(-1, description="stop after N optimizer steps (-1: the epochs decide)")
    save_steps: int = Field(50, ge=1, description="checkpoint every N steps (resume point)")
    eval_fraction: float = Field(0.0, ge=0, lt=1, description="hold out this share of posts for eval loss")
    limit: int | None = Field(None, ge=1, description="use only the first N examples (quick trial)")
    device: str = Field("cpu", description="cpu, cuda, cuda:N, mps")
    seed: int = Field(0, description="training seed")


class StyleEqualityConfig(ConfigFile):
    """``biaslens tune style-equality``: tuning on a holistic-generation run's responses tagged by bias value."""

    model: str = Field(EMBEDDED_NAME, json_schema_extra=_MODEL, description=(
        "base causal LM (normally the model of the run): 'smollm2-135m', a folder or a Hugging Face id"))
    generations: Path = Field(json_schema_extra=flag(short="-g"), description=(
        "a finished `biaslens run holistic-generation` run folder"))
    out: Path = Field(json_schema_extra=_OUT, description="output model folder (re-run the same command to resume)")
    beta: float | None = Field(None, description=(
        "tag 'bias' when the bias value exceeds this (paper: 0.0003 DialoGPT, 0.003 BlenderBot, for its 217-style "
        "classifier) [default: the run's median bias value]"))
    alpha: int = Field(0, ge=0, le=2, description="exponent of ||m_d - m_bar|| in the bias value: 0, 1 or 2 (paper: 0)")
    tags: bool = Field(True, json_schema_extra=flag("--tags/--no-tags"), description=(
        "--no-tags: ablation, tune on the same pairs without tags (generates without a tag)"))
    epochs: float = Field(1.0, gt=0, description="training epochs (early stopping on validation loss may stop sooner)")
    max_steps: int = Field(-1, description="stop after N optimizer steps (-1: the epochs decide)")
    batch_size: int = Field(8, ge=1, description="examples per step")
    learning_rate: float = Field(2e-5, gt=0, description="AdamW learning rate")
    max_length: int = Field(128, ge=8, description="truncate examples to this many tokens")
    eval_fraction: float = Field(0.1, ge=0, lt=1, description="share of responses held out for validation perplexity")
    eval_steps: int = Field(50, ge=1, description="validate (and checkpoint) every N steps")
    patience: int = Field(3, ge=0, description="early stopping: validations without improvement (0 = off)")
    device: str = Field("cpu", description="cpu, cuda, cuda:N, mps")
    seed: int = Field(0, description="training seed")


class DownstreamConfig(ConfigFile):
    """``biaslens downstream {dst,generation}``: a dialog task trained and tested on your data."""

    model: str = Field(EMBEDDED_NAME, json_schema_extra=_MODEL, description=(
        "embedded name, local folder or Hugging Face id"))
    train: Path = Field(description="training file: MultiWOZ 2.0-format JSON (dst) or DSTC-7 tab-separated "
                                    "(generation; last columns: context, response)")
    test: Path = Field(description="test file, same format (generation: lines sharing a context are its references)")
    out: Path | None = Field(None, json_schema_extra=_OUT, description="run folder [default MODEL/downstream-<task>]")
    epochs: float = Field(1.0, gt=0, description="training epochs")
    batch_size: int = Field(8, ge=1, description="examples per step")
    lr: float = Field(5e-5, gt=0, description="learning rate")
    max_steps: int = Field(-1, description="stop after N steps (-1: run the epochs)")
