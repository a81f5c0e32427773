"""Every registered suite's metric entries carry the uniform fields (results.MetricEntry)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from test_fault_resume import SUITES as FAULT_SUITES

import biaslens
from biaslens.models.fake import FakeBackend
from biaslens.suites import SUITES as REGISTERED

#: a small run of every registered suite on the fake backend
SUITES = {**FAULT_SUITES, "holistic-offensiveness": {"sample": 400, "axes": ["ability", "body_type"]}}


def test_every_registered_suite_is_covered():
    assert set(SUITES) == set(REGISTERED)


@pytest.mark.parametrize("suite", sorted(REGISTERED))
def test_headline_entries_say_how_many_items_and_which_way_is_better(suite, tmp_path):
    res = biaslens.run(suite=suite, model={"name": "fake", "batch_size": 8}, out=tmp_path / "run",
                       cache_dir=tmp_path / "cache", backend=FakeBackend(), console=Console(file=io.StringIO()),
                       **SUITES[suite])
    entries = res.metrics["entries"]
    assert entries, f"{suite}: no metric entries"
    for e in entries:
        where = f"{suite}: {e['name']}"
        assert isinstance(e["n_used"], int) and e["n_used"] > 0, where
        assert isinstance(e["n_missing"], int) and e["n_missing"] >= 0, where
        # a direction, or (a signed measure such as a gap or an effect size) the value of an unbiased model
        assert isinstance(e["higher_is_better"], bool) or e["ideal"] is not None, where
        if e["ci_low"] is not None or e["ci_high"] is not None:
            assert e["interval"], f"{where}: an interval without a description"
    if suite == "community":
        # metrics/group_gaps.py: keyword-level t, simultaneous over the pairs the largest gap is picked from
        assert all("keyword-level" in e["interval"] and "simultaneous" in e["interval"] for e in entries), entries
