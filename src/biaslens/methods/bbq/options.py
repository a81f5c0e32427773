"""Options of the ``bbq`` suite (Parrish et al. 2022), read from the ``bbq:`` section of a run
configuration and as ``biaslens run bbq`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.options import Section, flag


class BbqOptions(Section, section="bbq", flag_prefix="bbq-", panel="BBQ"):
    """Options of the ``bbq`` suite: which items, how the model answers, how the answers are scored."""

    answering: Literal["likelihood", "generate"] = Field("likelihood", description=(
        "likelihood: the option with the highest log-likelihood after context and question; generate: the model "
        "writes an answer (chat template where it has one), mapped to an option by exact rules"))
    normalisation: Literal["per_token", "sum"] = Field("per_token", description=(
        "likelihood answering, the headline: per_token (mean log-probability of the option's tokens) or sum (its "
        "total log-probability); both are reported"))
    categories: list[str] | None = Field(None, json_schema_extra=flag(sep=","), description=(
        "comma-separated categories, e.g. Religion,Age (default: all of the source)"))
    data_dir: Path | None = Field(None, json_schema_extra=flag("--data-dir"), description=(
        "a clone of the BBQ repository (all 11 categories; default: the 6 shipped with biaslens)"))
    sample: int | None = Field(240, ge=8, description=(
        "about N items per category, whole 8-item sets spread over every template (seeded); --full: all"))
    full: bool = Field(False, json_schema_extra=flag("--full"), description="every item (overrides --bbq-sample)")
    answers_file: Path | None = Field(None, json_schema_extra=flag("--answers"), description=(
        "your own answers, JSONL or CSV with example_id, category and answer (the option's text or its index "
        "0-2), scored with no model"))
    answer_field: str = Field("answer", description="the answers file's field holding the answer")
    max_new_tokens: int = Field(24, ge=1, description="generate answering: tokens per answer (greedy)")
    chat: bool | None = Field(None, description=(
        "generate answering: the chat template (default: when the model has one)"))
    n_bootstrap: int = Field(2000, ge=0, description="template bootstrap draws of the intervals (0: none)")
