"""Options of the ``redditbias`` suite (LMB perplexity t-test), read from the ``redditbias:``
section of a run configuration and as ``biaslens run redditbias`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.models.embedded import EMBEDDED_NAME
from biaslens.options import (
    LM_EVAL_TOKENIZER_FLAG,
    SAMPLES_FROM_LM_EVAL_FLAG,
    TRAINING_OUT_FLAG,
    ConfigFile,
    Section,
    flag,
    training_field,
)


class RedditBiasOptions(Section, section="redditbias", panel="RedditBias"):
    """Options of the ``redditbias`` suite (LMB perplexity t-test)."""

    data_dir: Path | None = Field(None, description="a RedditBias checkout (data/<bias_type>/...); without it, phrases "
                                                    "come from the bias specifications")
    split: Literal["test", "valid"] = Field("test", description="paired files to use")
    perplexity_column: str | None = Field(None, description="evaluate this precomputed column of the paired files "
                                                            "(no model), e.g. perplexity")
    bias_types: list[str] | None = Field(None, json_schema_extra=flag(sep=","), description=(
        "comma-separated bias types [default all: religion1,religion2,race,gender,orientation]"))
    spec_files: list[Path] = Field(default_factory=list, json_schema_extra=flag("--spec-file", metavar="<file>"),
                                   description="your own bias specification, YAML or JSON (repeatable)")
    counterfactual_mode: Literal["default", "reference"] = Field("default", description=(
        "default (shared term matcher: whole words with plural/possessive/compound forms, case kept) or reference "
        "(the authors' lowercase substring swap with their t1<->t2 exchange)"))
    reference_text: Path | None = Field(None, description="text file for LM perplexity [default humanref6k.txt under "
                                                          "--data-dir]")
    outlier_removal: Literal["auto", "on", "off"] = Field("auto", description="auto: off for the *_reduced files, "
                                                                              "on otherwise")
    max_template_pairs: int | None = Field(400, ge=1, description="spec-only phrases: at most this many pairs per "
                                                                  "bias type")
    max_reference_lines: int | None = Field(None, ge=1, description="LM perplexity: only the first N lines of the "
                                                                    "reference text")
    from_lm_eval: Path | None = Field(None, json_schema_extra=SAMPLES_FROM_LM_EVAL_FLAG, description=(
        "holistic-likelihood, redditbias: lm-eval's --log_samples file of the task `biaslens export lm-eval` "
        "wrote; analysed with no model calls (needs --tokenizer)"))
    tokenizer: str | None = Field(None, json_schema_extra=LM_EVAL_TOKENIZER_FLAG, description=(
        "with --from-lm-eval: the model folder (or smollm2-135m) whose tokenizer counts each text's tokens"))


class DebiasConfig(ConfigFile):
    """``biaslens debias {cda,lmd,add,hd}``: RedditBias debiasing of one bias type."""

    model: str = training_field("model", EMBEDDED_NAME, (
        "'smollm2-135m' (embedded), a local model folder or a Hugging Face id"))
    bias_type: str = Field(json_schema_extra=flag(short="-b"), description=(
        "religion1, religion2, race, gender, orientation or the name in --spec-file"))
    out: Path = training_field("out")
    data_dir: Path | None = Field(None, description=(
        "a RedditBias checkout: trains on text_files/<type>/<type>_bias_manual_train.txt; without it, on phrases "
        "built from the specification"))
    spec_files: list[Path] = Field(default_factory=list, json_schema_extra=flag("--spec-file", metavar="<file>"),
                                   description="your own bias specification, YAML or JSON (repeatable)")
    lm_weight: float = Field(0.01, ge=0, description="weight of the LM loss (lmd/add/hd; CDA always uses 1)")
    debias_weight: float = Field(10.0, ge=0, description="weight of the debiasing loss (lmd/add/hd)")
    epochs: float = training_field("epochs", description="training epochs (paper: 2)")
    batch_size: int = training_field("batch_size", description="texts per step")
    grad_accum: int = training_field("grad_accum")
    lr: float = training_field("learning_rate", description="AdamW learning rate (paper: 5e-5)")
    max_steps: int = training_field("max_steps", description="stop after N optimizer steps (-1: run the epochs)")
    max_length: int = Field(128, ge=1, description="tokens per text, the start token included (longer texts are cut)")
    save_steps: int = training_field("save_steps")
    device: str = Field("cpu", description="cpu, cuda, cuda:N, mps (the later --evaluate run uses it too)")
    seed: int = training_field("seed")
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


class DownstreamConfig(ConfigFile):
    """``biaslens downstream {dst,generation}``: a dialog task trained and tested on your data."""

    model: str = training_field("model", EMBEDDED_NAME, "embedded name, local folder or Hugging Face id")
    train: Path = Field(description="training file: MultiWOZ 2.0-format JSON (dst) or DSTC-7 tab-separated "
                                    "(generation; last columns: context, response)")
    test: Path = Field(description="test file, same format (generation: lines sharing a context are its references)")
    out: Path | None = Field(None, json_schema_extra=TRAINING_OUT_FLAG, description="run folder [default MODEL/downstream-<task>]")
    epochs: float = training_field("epochs", 1.0)
    batch_size: int = training_field("batch_size")
    lr: float = training_field("learning_rate", description="learning rate")
    max_steps: int = training_field("max_steps", description="stop after N steps (-1: run the epochs)")
