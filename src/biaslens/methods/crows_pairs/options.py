"""Options of the ``crows-pairs`` suite, read from the ``crows_pairs:`` section of a run
configuration and as ``biaslens run crows-pairs --crows-...`` flags."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from biaslens.options import LM_EVAL_TOKENIZER_FLAG, SAMPLES_FROM_LM_EVAL_FLAG, Section, flag


class CrowsPairsOptions(Section, section="crows_pairs", flag_prefix="crows-", panel="CrowS-Pairs"):
    """Options of the ``crows-pairs`` suite (Nangia et al. 2020)."""

    data_file: Path | None = Field(None, description=(
        "your own copy of crows_pairs_anonymized.csv (columns sent_more, sent_less, stereo_antistereo, bias_type) "
        "[default the shipped file]"))
    bias_types: list[str] | None = Field(None, json_schema_extra=flag(sep=","), description=(
        "comma-separated bias types [default all 9: race-color,gender,socioeconomic,nationality,religion,age,"
        "sexual-orientation,physical-appearance,disability]"))
    sample: int | None = Field(None, ge=2, description="a seeded random sample of N pairs [default all]")
    from_lm_eval: Path | None = Field(None, json_schema_extra=SAMPLES_FROM_LM_EVAL_FLAG, description=(
        "lm-eval's --log_samples file of crows_pairs_english, analysed with no model calls"))
    tokenizer: str | None = Field(None, json_schema_extra=LM_EVAL_TOKENIZER_FLAG, description=(
        "with --from-lm-eval: the model folder (or smollm2-135m) lm-eval ran, to check its prefix token"))
