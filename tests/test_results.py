"""The uniform records every suite writes (results.py)."""

import math

import pandas as pd
import pytest
from pydantic import ValidationError

from biaslens.results import METRICS_SCHEMA_VERSION, MetricEntry, MetricsRecord, RunRecord, RunResult, SuiteResult


def test_metric_entry_writes_nan_as_null_and_forbids_unknown_fields():
    e = MetricEntry(name="lb", value=float("nan"), ci_low=0.1, ci_high=float("inf"), higher_is_better=False)
    assert e.value is None and e.ci_low == 0.1 and e.ci_high is None
    with pytest.raises(ValidationError):
        MetricEntry(name="lb", value=1.0, lower_is_better=True)


def test_metrics_json_keeps_suite_keys_and_adds_the_uniform_part():
    res = SuiteResult(metrics={"likelihood_bias": 0.5, "warnings": ["few descriptors"], "by_axis": {"age": 1}},
                      entries=[MetricEntry(name="likelihood_bias", value=0.5, ci_low=0.4, ci_high=0.6)],
                      verdict="half the pairs differ")
    out = res.metrics_json("holistic-likelihood", "fake")
    assert out["likelihood_bias"] == 0.5 and out["by_axis"] == {"age": 1}
    assert out["schema_version"] == METRICS_SCHEMA_VERSION and out["suite"] == "holistic-likelihood"
    assert out["model"] == "fake" and out["verdict"] == "half the pairs differ"
    assert out["warnings"] == ["few descriptors"]
    assert out["entries"][0] == {"name": "likelihood_bias", "model": None, "value": 0.5, "ci_low": 0.4, "ci_high": 0.6,
                                 "interval": None, "higher_is_better": None, "ideal": None, "n_used": None,
                                 "n_missing": None, "description": "", "level": None, "df": None, "test": None,
                                 "p_value": None, "reference": None, "reference_label": None, "detectable": None,
                                 "verdict": None, "judge": None, "judge_has_skill": None}
    assert MetricsRecord.model_validate(out).headline.name == "likelihood_bias"


def test_run_result_reaches_tables_as_attributes():
    t = pd.DataFrame({"a": [1]})
    r = RunResult(out=".", metrics={}, tables={"continuations": t}, main_table="continuations")
    assert r.continuations is t and r.sentences is t
    with pytest.raises(AttributeError, match="no attribute or table 'per_prompt'"):
        r.per_prompt  # noqa: B018


def test_run_record_requires_a_known_status():
    base = {"format_version": 1, "biaslens_version": "0.1.0", "suite": "x", "status": "complete", "started": "t",
            "elapsed_seconds": 1.0, "model": {"name": "fake"}}
    assert RunRecord.model_validate(base).model_extra["model"] == {"name": "fake"}
    with pytest.raises(ValidationError, match="status"):
        RunRecord.model_validate({**base, "status": "done"})
    assert math.isfinite(RunRecord.model_validate(base).elapsed_seconds)
