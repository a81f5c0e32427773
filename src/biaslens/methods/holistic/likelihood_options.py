"""Options of the ``holistic-likelihood`` suite, read from the ``likelihood:`` section of a run
configuration and as ``biaslens run holistic-likelihood`` flags. The sentence selection
(``--sample``, ``--axes`` ...) is shared with the other HolisticBias suites and lives in RunConfig."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from biaslens.options import LM_EVAL_TOKENIZER_FLAG, SAMPLES_FROM_LM_EVAL_FLAG, Section


class HolisticLikelihoodOptions(Section, section="likelihood", panel="HolisticBias likelihood"):
    """Options of the ``holistic-likelihood`` suite (Likelihood Bias)."""

    from_lm_eval: Path | None = Field(None, json_schema_extra=SAMPLES_FROM_LM_EVAL_FLAG, description=(
        "holistic-likelihood, redditbias: lm-eval's --log_samples file of the task `biaslens export lm-eval` "
        "wrote; analysed with no model calls (needs --tokenizer); crows-pairs: lm-eval's crows_pairs_english "
        "samples"))
    tokenizer: str | None = Field(None, json_schema_extra=LM_EVAL_TOKENIZER_FLAG, description=(
        "with --from-lm-eval: the model folder (or smollm2-135m) whose tokenizer counts each text's tokens"))
