"""check-backend: agreement with the reference, batch invariance, and the refusal it records."""

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app
from biaslens.engine.backend_check import (
    BackendDisagrees,
    check_backend,
    record_verdict,
    recorded_verdict,
    require_agreement,
)
from biaslens.engine.scoring import score_texts
from biaslens.models.base import TokenScores
from biaslens.models.fake import FakeBackend

TEXTS = ["I love my grandmother.", "I'm a deaf person.", "Hi! I'm a Catholic veteran.",
         "The meeting starts at 9:30 a.m."]


class ServedFake(FakeBackend):
    """The fake model as if behind a serving stack ("openai"): optionally drifting by ``shift``
    nats per token, or drifting only when batched (a batch-dependent kernel)."""

    def __init__(self, shift=0.0, batch_shift=0.0):
        super().__init__()
        self.info = replace(self.info, backend="openai", extra={"key_base_url": "http://127.0.0.1:1/v1"})
        self.shift, self.batch_shift = shift, batch_shift

    def score_batch(self, texts):
        out = super().score_batch(texts)
        shift = self.shift + (self.batch_shift if len(texts) > 1 else 0.0)
        return [TokenScores(s.logprobs + shift, s.offsets) for s in out]


def test_same_scores_pass_with_zero_difference():
    r = check_backend(ServedFake(), FakeBackend(), TEXTS, tolerance=1e-6, batch_size=3)
    assert r.passed and r.max_token_diff == 0.0 and r.max_batch_diff == 0.0 and not r.problems()


def test_drift_beyond_tolerance_fails_and_names_the_size():
    r = check_backend(ServedFake(shift=0.01), FakeBackend(), TEXTS, tolerance=1e-3)
    assert not r.passed
    assert r.max_token_diff == pytest.approx(0.01)
    n = FakeBackend().score_batch(TEXTS)
    assert r.max_sum_diff == pytest.approx(0.01 * max(s.n_tokens for s in n))
    assert "differ from the reference by up to 0.01" in r.problems()[0]


def test_batch_dependence_fails_even_without_reference():
    r = check_backend(ServedFake(batch_shift=0.005), None, TEXTS, tolerance=1e-3, batch_size=2)
    assert r.max_token_diff is None
    assert r.max_batch_diff == pytest.approx(0.005)
    assert not r.passed and "batch size (1 vs 2)" in r.problems()[0]


def test_failed_verdict_refuses_scoring_and_passing_one_allows_it(tmp_path, caplog):
    bad = ServedFake(shift=0.05)
    # never checked: scores, with a warning that says how to check
    score_texts(bad, TEXTS[:1])
    assert "has not been checked" in caplog.text
    record_verdict(bad, check_backend(bad, FakeBackend(), TEXTS), tmp_path)
    assert recorded_verdict(bad, tmp_path)["passed"] is False
    with pytest.raises(BackendDisagrees, match="refusing to score with backend openai"):
        require_agreement(bad, tmp_path)
    # the verdict is per identity: the same model behind another URL is not refused
    other = ServedFake(shift=0.05)
    other.info = replace(other.info, extra={"key_base_url": "http://127.0.0.1:2/v1"})
    require_agreement(other, tmp_path)
    good = ServedFake()
    record_verdict(good, check_backend(good, FakeBackend(), TEXTS), tmp_path)
    require_agreement(good, tmp_path)


def test_damaged_verdict_file_counts_as_unchecked(tmp_path):
    (tmp_path / "backend_checks.json").write_text("{not json")
    assert recorded_verdict(ServedFake(), tmp_path) is None
    require_agreement(ServedFake(), tmp_path)  # no crash, just unchecked


def test_cli_on_the_embedded_model(tmp_path, embedded_model_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS[:3]) + "\n")
    out = tmp_path / "check.json"
    res = CliRunner().invoke(app, ["check-backend", "--backend", "hf", "--texts", str(texts), "--batch-size", "3",
                                   "--json-out", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["passed"] and data["n_texts"] == 3
    assert data["max_token_diff"] < 1e-4 and data["max_batch_diff"] < 1e-3
    assert np.isfinite(data["max_sum_diff"])
    verdicts = json.loads((tmp_path / "cache" / "backend_checks.json").read_text())
    assert [v["passed"] for v in verdicts.values()] == [True]


def test_cli_bad_input_is_one_clear_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    res = CliRunner().invoke(app, ["check-backend", "--backend", "hf", "--texts", str(empty)])
    assert res.exit_code == 2 and "empty.txt: no texts" in res.output
    res = CliRunner().invoke(app, ["check-backend", "--backend", "openai"])
    assert res.exit_code == 2 and "needs --base-url" in res.output
    res = CliRunner().invoke(app, ["check-backend", "--backend", "tpu"])
    assert res.exit_code == 2 and "choose vllm, openai or hf" in res.output
