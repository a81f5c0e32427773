"""Options of the ``redditbias`` suite (LMB perplexity t-test), read from the ``redditbias:``
section of a run configuration and as ``biaslens run redditbias`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.options import LM_EVAL_TOKENIZER_FLAG, SAMPLES_FROM_LM_EVAL_FLAG, Section, flag


class RedditBiasOptions(Section):
    """Options of the ``redditbias`` suite (LMB perplexity t-test)."""

    section = "redditbias"
    panel = "RedditBias"

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
