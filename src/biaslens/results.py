"""The typed, versioned records every suite writes: one metric entry shape, one
``metrics.json`` schema, one Python result.

Each suite keeps its own detailed keys in ``metrics.json`` (the paper's numbers, per
axis, per bias type ...); on top of them every suite writes the same uniform part, so
a reader (the bias card, ``compare``, a dashboard) needs no per-suite code to find the
headline number, its interval and whether lower is better.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: version of the uniform part of metrics.json (bump when a field changes meaning)
METRICS_SCHEMA_VERSION = 3


#: what every surface says next to a number that rests on a judge without measured skill
NO_SKILL_NOTE = "judge without measured skill"


#: a verdict as a reader reads it (the JSON keeps the identifiers)
VERDICT_WORDS = {"detected": "detected", "not_detected": "not detected", "cannot_tell": "cannot tell"}


def verdict_words(verdict: Any) -> str:
    """``"not_detected"`` -> ``"not detected"``; anything else as it is ("–" for none)."""
    if verdict is None or verdict != verdict:
        return "–"
    return VERDICT_WORDS.get(str(verdict), str(verdict))


class MetricEntry(BaseModel):
    """One number a suite reports, with what a reader needs to trust it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="metric name, e.g. 'likelihood_bias' or 'full_gen_bias'; never carries a model, so "
                      "that two models' entries name the same metric")
    model: str | None = Field(None, description="the model the entry measures, in a run that measures several "
                              "(community, FairPair); null: the run's model")
    value: float | None = Field(description="the point estimate; null when it cannot be computed")
    ci_low: float | None = Field(None, description="lower end of the interval (null: none)")
    ci_high: float | None = Field(None, description="upper end of the interval (null: none)")
    interval: str | None = Field(None, description="how the interval was made, e.g. 'BCa bootstrap over descriptors, 95%'")
    higher_is_better: bool | None = Field(None, description="true/false; null when neither direction is better")
    ideal: float | None = Field(None, description="the value of an unbiased model, where there is one")
    n_used: int | None = Field(None, description="items the value rests on")
    n_missing: int | None = Field(None, description="items dropped (missing scores, unmatched rows)")
    description: str = ""
    # --- the verdict as data: what the card, compare, the leaderboard and the picture read ---
    level: float | None = Field(None, description="coverage of [ci_low, ci_high], e.g. 0.95, or 1 - 0.05/5 for an "
                                "interval simultaneous over 5 types; null: 0.95")
    df: float | None = Field(None, description="degrees of freedom of the interval's t reference; null: normal or "
                             "resampling interval")
    test: str | None = Field(None, description="the test the verdict rests on, after any multiplicity correction")
    p_value: float | None = Field(None, description="that test's p-value (corrected where the test says so)")
    reference: float | None = Field(None, description="the value the verdict compares the estimate with when it is not "
                                    "`ideal` (a noise floor, a chance level)")
    reference_label: str | None = Field(None, description="what `reference` is, e.g. 'permuted-label noise floor'")
    detectable: float | None = Field(None, description="the smallest effect, in this entry's units, that the design "
                                     "detects with 80% power (what 'cannot tell' rules out)")
    verdict: Literal["detected", "not_detected", "cannot_tell"] | None = Field(
        None, description="'detected': the test rejects; 'not_detected': it does not and the design could have "
        "detected `detectable`; 'cannot_tell': it does not and the design has no power")
    judge: str | None = Field(None, description="the scorer (judge) the value rests on, if any")
    judge_has_skill: bool | None = Field(None, description="false when that judge has no measured skill on labelled "
                                         "real model output: the value is then not evidence of bias")

    @field_validator("value", "ci_low", "ci_high", "ideal", "reference", "detectable", "p_value", mode="before")
    @classmethod
    def _finite_or_none(cls, v: Any) -> float | None:
        # NaN/inf have no JSON form: a number that cannot be computed is null
        if v is None:
            return None
        v = float(v)
        return v if math.isfinite(v) else None


class MetricsRecord(BaseModel):
    """The uniform part of every suite's ``metrics.json`` (suite keys ride along)."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = METRICS_SCHEMA_VERSION
    suite: str
    model: str | None = None
    entries: list[MetricEntry] = Field(default_factory=list, description="headline entry first")
    verdict: str | None = Field(None, description="one sentence with its uncertainty, or null")
    warnings: list[str] = Field(default_factory=list)

    @property
    def headline(self) -> MetricEntry | None:
        return self.entries[0] if self.entries else None


class RunRecord(BaseModel):
    """``run.json``: what ran, how it ended, on what. Suites add their own sections
    (``model``, ``scoring``, ``generation`` ...), which ride along as extra fields."""

    model_config = ConfigDict(extra="allow")

    format_version: int = Field(description="version of this record's layout")
    biaslens_version: str
    suite: str
    status: Literal["running", "complete", "failed"] = Field(
        description="'complete' only after every file of the run was written")
    error: str | None = Field(None, description="the failure's message, as the terminal showed it")
    error_kind: str | None = Field(None, description="the kind of failure: bad_input, model, server_timeout, "
                                   "server_overloaded, server_error, server_unreachable, scorer, disk_full, analysis, "
                                   "interrupted, internal")
    started: str
    elapsed_seconds: float
    config: dict[str, Any] = Field(default_factory=dict, description="the RunConfig, as JSON")
    versions: dict[str, str] = Field(default_factory=dict, description="python and package versions")
    platform: dict[str, Any] = Field(default_factory=dict, description="machine, CPU model and flags, cores, argv")
    timings: dict[str, float] = Field(default_factory=dict, description="seconds per phase")
    peak_rss_mb: float | None = None
    files: list[str] = Field(default_factory=list, description="every file the run wrote")


@dataclass
class SuiteResult:
    """What a suite's ``analyse`` returns: the metrics, the derived tables to write, and
    the suite's own analysis object for its report and summary."""

    metrics: dict[str, Any]
    entries: list[MetricEntry] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)
    analysis: Any = None
    verdict: str | None = None
    warnings: list[str] = field(default_factory=list)

    def metrics_json(self, suite: str, model: str | None) -> dict[str, Any]:
        """metrics.json: the suite's keys, then the uniform part (validated). Its ``warnings`` hold
        the suite's warnings and each scorer card's no-skill verdicts (overall, at the threshold, beyond
        the group: a script reading only the uniform part must see that a number rests on a judge
        without measured skill)."""
        warnings = list(self.metrics.get("warnings") or self.warnings)
        for card in self.metrics.get("scorer_cards") or []:
            # no skill, none at the threshold, none beyond the group (the gap may be the judge's)
            for key in ("skill_warning", "threshold_warning", "group_warning"):
                w = card.get(key) if isinstance(card, dict) else None
                if w and w not in warnings:
                    warnings.append(w)
        uniform = MetricsRecord(suite=suite, model=self.metrics.get("model") or model, entries=self.entries, verdict=self.verdict,
                                warnings=warnings)
        return {**self.metrics, **uniform.model_dump(mode="json")}


@dataclass
class RunResult:
    """What a finished run returns in Python (the same things are in the run folder).

    ``tables`` holds every table the run wrote; a table is also reachable as an
    attribute (``result.sentences``, ``result.continuations``), and ``sentences`` is the
    suite's main per-item table.
    """

    out: Path
    metrics: dict[str, Any]
    tables: dict[str, Any] = field(default_factory=dict)
    analysis: Any = None
    stats: dict[str, Any] = field(default_factory=dict)
    main_table: str | None = None

    @property
    def sentences(self) -> Any:
        return self.tables.get(self.main_table) if self.main_table else None

    def __getattr__(self, name: str) -> Any:
        tables = self.__dict__.get("tables") or {}
        if name in tables:
            return tables[name]
        raise AttributeError(f"{type(self).__name__} has no attribute or table {name!r}")
