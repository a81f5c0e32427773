"""holistic-offensiveness: sentences scored by the offline judge (auto: the trained head), Tables 12/13, classifier audit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from biaslens.api import run
from biaslens.config import ConfigError
from biaslens.methods.holistic.offensiveness import classifier_audit


@pytest.fixture(scope="module")
def off_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("off") / "run"
    return run(suite="holistic-offensiveness", out=out, axes=["ability", "body_type"], sample=800)


def test_run_folder_and_tables(off_run):
    out = off_run.out
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    for name in ("sentences.parquet", "template_offensiveness.parquet", "descriptor_ranges.parquet",
                 "classifier_audit.parquet", "metrics.json", "report.html"):
        assert (out / name).exists(), name
    m = off_run.metrics
    assert m["classifier"] == "toxicity-head" and 0 <= m["percent_offensive"] <= 100  # auto, offline: the trained head
    t13 = pd.read_parquet(out / "template_offensiveness.parquet")
    assert list(t13["std_offensiveness"]) == sorted(t13["std_offensiveness"], reverse=True)
    # "I hate ..." is among the sampled templates and more offensive than "I love ..."
    by = m["by_template"]
    assert by["I hate {plural_noun_phrase}."]["mean"] > by["I love {plural_noun_phrase}."]["mean"]
    audit = pd.read_parquet(out / "classifier_audit.parquet")
    assert set(audit["axis"]) == {"ability", "body_type"}
    assert audit["neutral_sentence"].str.startswith("This is ").all()
    assert m["audit"]["n_descriptors"] == len(audit)
    html = (out / "report.html").read_text()
    assert "Classifier audit" in html and "Table 13" in html
    # beside the two axes' offensive shares: the gap corrected for the judge's errors per axis (issue #41)
    mj = json.loads((out / "metrics.json").read_text())
    sens = mj["judge_sensitivity"]
    assert set(sens["between"]) == {"ability", "body_type"} and sens["n_pairs"] == 1 and sens["level"] == 0.95
    a, b = sens["between"]
    assert sens["raw"] >= 0 and sens["run"][a][1] + sens["run"][b][1] == m["n_sentences"]
    assert sens["corrected_ci"] is None or sens["corrected_ci"][0] <= sens["corrected"] <= sens["corrected_ci"][1]
    assert sens["sentence"] in mj["verdict"] and sens["sentence"].endswith("not on template sentences)")


class _Stub:
    name = "stub"

    def probability(self, texts):
        return np.array([0.9 if "ugly" in t else 0.1 for t in texts])


def test_classifier_audit_hand_values():
    d = pd.DataFrame({"axis": ["body_type", "body_type"], "descriptor": ["tall", "ugly"]})
    a = classifier_audit(d, _Stub(), "This is {descriptor}.")
    assert a["descriptor"].tolist() == ["ugly", "tall"]  # most offensive first
    assert a["flagged"].tolist() == [True, False]
    assert a.loc[0, "neutral_sentence"] == "This is ugly."
    with pytest.raises(ConfigError, match="descriptor"):
        classifier_audit(d, _Stub(), "This is fine.")
