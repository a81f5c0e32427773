"""A model that fails mid-run, for every suite that calls a model: the run is marked failed
(no result presented as complete), and re-running the same command resumes from the cache
and ends with exactly the metrics of an uninterrupted run."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import biaslens
from biaslens.models.fake import FakeBackend

#: suite -> extra config for a small, fast run on the fake backend
SUITES = {
    "holistic-likelihood": {"sample": 600},
    "holistic-generation": {"sample": 40},
    "redditbias": {"redditbias": {"bias_types": ["gender"], "max_template_pairs": 40}},
    "community": {"community": {"n": 2}},
    "fairpair": {"fairpair": {"n_occupations": 2, "samples": 4, "max_new_tokens": 8, "k_folds": 2}},
    "bbq": {"bbq": {"categories": ["Religion"], "sample": 40, "n_bootstrap": 100}},
    "bold": {"bold": {"sample": 30, "max_new_tokens": 8, "n_permutations": 20, "domains": ["gender", "race"]}},
    "crows-pairs": {"crows_pairs": {"sample": 120}},
    "winogender": {"winogender": {"n_bootstrap": 200}},
    "winobias": {"winobias": {"types": ["1"], "splits": ["dev"]}},
    "counterfactual": {"counterfactual": {"samples": 2, "max_new_tokens": 8, "langfair_cosine": False}},
}
BATCH = 8
_VOLATILE = {"elapsed_seconds", "seconds", "sentences_per_second", "started", "timings", "texts_per_second"}


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def _run(suite: str, out: Path, cache: Path, backend: FakeBackend):
    return biaslens.run(suite=suite, model={"name": "fake", "batch_size": BATCH}, out=out, cache_dir=cache, backend=backend,
                        console=_quiet(), **SUITES[suite])


def _stable(obj):
    """metrics.json without wall-clock fields."""
    if isinstance(obj, dict):
        return {k: _stable(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    return obj


@pytest.mark.parametrize("suite", list(SUITES))
def test_model_failure_mid_run_then_resume(suite, tmp_path):
    # how many model calls an uninterrupted run makes
    clean = FakeBackend()
    _run(suite, tmp_path / "clean", tmp_path / "clean-cache", clean)
    total = clean.scored_texts
    assert total > 4

    failing = FakeBackend(fail_after=total // 2)
    with pytest.raises(RuntimeError, match="fake model failure"):
        _run(suite, tmp_path / "out", tmp_path / "cache", failing)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["status"] == "failed" and "fake model failure" in run["error"]
    assert not (tmp_path / "out" / "metrics.json").exists()

    resumed = FakeBackend()
    _run(suite, tmp_path / "out", tmp_path / "cache", resumed)
    assert json.loads((tmp_path / "out" / "run.json").read_text())["status"] == "complete"
    # only what the failed run had not finished is computed again: every finished batch was
    # cached, so at most the batch in flight is lost
    assert resumed.scored_texts <= total - (total // 2) + BATCH
    a = _stable(json.loads((tmp_path / "out" / "metrics.json").read_text()))
    b = _stable(json.loads((tmp_path / "clean" / "metrics.json").read_text()))
    assert a == b
