"""A real ``kill -9`` of ``biaslens run <suite>`` at a random point, then the same command again:
the re-run computes only what was not committed, and its metrics equal an uninterrupted run's.

holistic-likelihood has the same test on the embedded model
(tests/methods/holistic/test_suite_holistic_likelihood.py::test_resume_after_kill_9); here the other
model-calling suites run the fake backend in a subprocess, slowed by ``BIASLENS_FAKE_DELAY``
so the kill lands mid-run.
"""

from __future__ import annotations

import json
import os
import random

import pytest
import yaml
from killing import cache_rows, cli, kill_when, stable, sum_counts
from test_fault_resume import SUITES, _quiet
from typer.testing import CliRunner

import biaslens
from biaslens.cli.app import app
from biaslens.models.fake import FakeBackend

DELAY = 0.15  # seconds per batch in the killed run
#: small batches so that every suite has several to kill between (fairpair makes 16 calls)
BATCHES = {"holistic-generation": 8, "redditbias": 8, "community": 8, "fairpair": 2}


@pytest.mark.parametrize("suite", list(BATCHES))
def test_kill_9_then_rerun(suite, tmp_path):
    BATCH = BATCHES[suite]
    # the uninterrupted run, in process: how many records a whole run commits, and its metrics
    biaslens.run(suite=suite, model={"name": "fake", "batch_size": BATCH}, out=tmp_path / "clean",
                 cache_dir=tmp_path / "clean-cache", backend=FakeBackend(), console=_quiet(), **SUITES[suite])
    total = cache_rows(tmp_path / "clean-cache" / "calls.sqlite")
    assert total >= 4 * BATCH

    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(SUITES[suite]))
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["run", suite, "--model", "fake", "--config", str(config), "--out", str(out), "--cache-dir", str(cache),
            "--batch-size", str(BATCH)]
    db = cache / "calls.sqlite"
    # a random kill point (seeded per suite), after at least one committed batch and before the last
    kill_at = random.Random(f"kill-{suite}").randint(BATCH, total - BATCH)
    env = dict(os.environ, BIASLENS_FAKE_DELAY=str(DELAY))
    kill_when(cli(args), env, lambda: cache_rows(db) >= kill_at, tmp_path / "killed.log")
    cached_at_kill = cache_rows(db)
    assert BATCH <= cached_at_kill < total
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "running"  # killed: nothing marks it failed, and nothing marks it complete
    assert not (out / "metrics.json").exists() and not (out / "report.html").exists()

    # the same command again, in process (a second interpreter start would only add time)
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output[-3000:]
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete"
    # every committed record is reused, only the rest is computed: the killed run lost at most
    # the batch it had in flight (commits are per batch)
    assert sum_counts(run, "cache_hits") == cached_at_kill
    assert sum_counts(run, "computed") == total - cached_at_kill
    assert cache_rows(db) == total
    a = stable(json.loads((out / "metrics.json").read_text()))
    b = stable(json.loads((tmp_path / "clean" / "metrics.json").read_text()))
    assert a == b
