"""The RedditBias verdict end to end on fake models with a known answer: ``fake-unbiased`` (phrase
and counterfactual exchangeable: no bias by construction) and the same model with planted words
(a known bias against one group), at the card's budgets."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

import biaslens
from biaslens.models import load_model

QUIET = Console(stderr=True, quiet=True)


def _run(tmp_path, name, n, *, planted=None, seed=0):
    model = {"name": "fake-unbiased"}
    if planted:
        model.update(backend="fake", engine_options={"planted": planted})
    res = biaslens.run(suite="redditbias", model=model, redditbias={"max_template_pairs": n}, seed=seed,
                       out=str(tmp_path / name), cache_dir=str(tmp_path / "cache"), console=QUIET)
    return res.metrics, res.metrics["entries"][0]


def test_the_unbiased_fake_is_unbiased_by_construction():
    """Every text is an independent draw: a phrase and its counterfactual with the same number of
    tokens are exchangeable, so each is likelier half of the time (the plain fake is not: its words
    carry fixed log-probabilities, and "jews" vs "christians" leans the same way in every phrase)."""
    texts = [f"group{g} are trait{i}." for i in range(400) for g in ("a", "b")]
    fair = np.array([s.perplexity() for s in load_model("fake-unbiased").score_batch(texts)]).reshape(-1, 2)
    plain = np.array([s.perplexity() for s in load_model("fake").score_batch(texts)]).reshape(-1, 2)
    share = float(np.mean(fair[:, 0] > fair[:, 1]))
    assert abs(share - 0.5) < 0.075  # binomial sd at 400 pairs: 0.025
    assert np.mean(plain[:, 0] > plain[:, 1]) in (0.0, 1.0)  # the same word, the same lean, every time
    planted = load_model("fake-unbiased", backend="fake", planted={"groupa": 3.0})
    lean = np.array([s.perplexity() for s in planted.score_batch(texts)]).reshape(-1, 2)
    assert np.mean(lean[:, 0] < lean[:, 1]) > 0.6  # the planted word makes its phrases likelier
    assert planted.info.weights_hash != load_model("fake-unbiased").info.weights_hash  # never one cache entry
    with pytest.raises(Exception, match="unknown fake model"):
        load_model("fake-biased", backend="fake")


@pytest.mark.parametrize("seed", [0, 1])
def test_unbiased_model_at_the_smoke_budget_says_cannot_tell(tmp_path, seed):
    metrics, head = _run(tmp_path, f"smoke{seed}", 40, seed=seed)
    assert head["verdict"] == "cannot_tell" and head["ci_low"] == 0.0
    assert head["detectable"] == pytest.approx(0.534, abs=0.01) and head["level"] == pytest.approx(0.99)
    assert metrics["verdict"].startswith("cannot tell whether the model is biased")


def test_unbiased_model_at_the_default_budget_says_no_bias_detected(tmp_path):
    metrics, head = _run(tmp_path, "default", 200)
    assert head["verdict"] == "not_detected" and head["detectable"] <= 0.25
    assert metrics["verdict"].startswith("no bias detected in any of the 5 bias types")
    assert {e["verdict"] for e in metrics["entries"] if e["name"].startswith("sign_effect.")} == {"not_detected"}


def test_a_planted_bias_is_detected_in_its_bias_type(tmp_path):
    # 6 nats on the group word: the template phrases are full sentences (about 12 tokens), so one
    # word moves a phrase's perplexity less than it did in the old 4-token phrases (3 nats: -0.10,
    # not detected; 6: -0.44, 0.26 to 0.60)
    metrics, head = _run(tmp_path, "planted", 200, planted={"jews": 6.0, "jewish": 6.0})
    assert head["verdict"] == "detected" and head["ci_low"] > 0
    assert metrics["overview"]["against_minoritized"] == ["religion1"]
    assert metrics["verdict"].startswith("bias against the minoritized group in 1 of 5 bias types (religion1)")
    rel = next(e for e in metrics["entries"] if e["name"] == "sign_effect.religion1")
    assert rel["verdict"] == "detected" and rel["ci_high"] < 0 and rel["p_value"] < 0.05


def test_the_unbiased_fake_gives_no_bias_in_the_other_likelihood_suite(tmp_path):
    """HolisticBias Likelihood Bias at the card's smoke size: the plain fake reads as biased (85% of
    descriptor pairs differ), the unbiased fake does not."""
    res = biaslens.run(suite="holistic-likelihood", model={"name": "fake-unbiased"}, sample=780,
                       out=str(tmp_path / "hl"), cache_dir=str(tmp_path / "cache"), console=QUIET)
    head = res.metrics["entries"][0]
    assert head["ci_low"] <= 0.05 and not res.metrics["verdict"].startswith("bias detected")


def test_compare_decides_the_headline_paired_over_the_phrase_pairs(tmp_path):
    """Two runs on the same phrase pairs whose headline is the same bias type: the change of the
    largest |sign effect| is decided paired, by the pairs that changed side (at the headline's
    simultaneous level), not by whether two simultaneous intervals overlap. A stronger planted word
    is "worse" for the compare, the card comparison and the gate; a run against itself "no
    detectable change"."""
    from biaslens.comparison.runs import compare_runs

    _run(tmp_path, "mild", 200, planted={"jews": 6.0, "jewish": 6.0})
    _run(tmp_path, "strong", 200, planted={"jews": 12.0, "jewish": 12.0})
    m = compare_runs([tmp_path / "mild", tmp_path / "strong"], tmp_path / "cmp", ["mild", "strong"])
    head = m["redditbias"]["headline_change_vs_first"]["strong"]
    assert head["bias_type"] == "religion1" and head["verdict"] == "went up" and head["ci_low"] > 0
    assert head["level"] == pytest.approx(0.99) and head["change"] > 0
    change = m["changes"]["redditbias"]["strong"]
    assert change["outcome"] == "worse" and change["reason"].startswith("paired over the")
    assert "99% CI of the change" in change["reason"]
    # the two simultaneous intervals alone would not tell
    before, after = (m["changes"]["redditbias"]["strong"][k] for k in ("before_ci", "after_ci"))
    assert after[0] <= before[1], (before, after)
    same = compare_runs([tmp_path / "mild", tmp_path / "mild"], tmp_path / "cmp2", ["mild", "mild #2"])
    assert same["redditbias"]["headline_change_vs_first"]["mild #2"]["verdict"] == "no detectable change"
    assert same["changes"]["redditbias"]["mild #2"]["outcome"] == "no detectable change"
