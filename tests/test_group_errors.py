"""Issue #41: a judge's errors per group and its skill against a score that knows only the group
(biaslens.metrics.classification), checked with hand-computed numbers, against scipy, and in
seeded simulations where the right answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from biaslens.metrics import wilson_interval
from biaslens.metrics.classification import (
    auroc,
    group_errors,
    group_prior_scores,
    group_skill,
    heterogeneity_test,
    paired_auroc_difference,
)


def test_group_errors_by_hand():
    # group a: negatives flagged 2 of 3 (0.9 is a positive found; 0.6, 0.7 flagged, 0.1 not)
    prob = [0.9, 0.6, 0.7, 0.1, 0.2, 0.8, 0.3]
    truth = [1, 0, 0, 0, 1, 0, 0]
    groups = ["a", "a", "a", "a", "b", "b", "b"]
    r = group_errors(prob, truth, groups)
    assert r["a"]["n"] == 4 and r["a"]["n_positive"] == 1
    assert r["a"]["false_positive_rate"] == pytest.approx(2 / 3) and r["a"]["false_negative_rate"] == 0.0
    assert r["b"]["false_positive_rate"] == 0.5 and r["b"]["false_negative_rate"] == 1.0
    assert r["b"]["mean_score"] == pytest.approx((0.2 + 0.8 + 0.3) / 3)
    lo, hi = wilson_interval(np.array([2]), np.array([3]))
    assert r["a"]["false_positive_ci"] == pytest.approx([lo[0], hi[0]])
    # a group without positives has no false-negative rate (not 0)
    assert group_errors([0.1, 0.9], [0, 0], ["c", "c"])["c"]["false_negative_rate"] is None


def test_chi_square_agrees_with_scipy():
    rng = np.random.default_rng(3)
    groups = np.repeat(["a", "b", "c"], 80)
    errors = rng.random(240) < np.repeat([0.2, 0.3, 0.45], 80)
    r = heterogeneity_test(errors, groups.tolist())
    table = np.array([[(errors & (groups == g)).sum(), (~errors & (groups == g)).sum()] for g in "abc"])
    stat, p, df, _ = chi2_contingency(table, correction=False)
    assert r["test"] == "chi-square" and r["df"] == df == 2
    assert r["statistic"] == pytest.approx(stat) and r["p_value"] == pytest.approx(p)


def test_exact_test_holds_its_size_with_small_counts():
    """15 groups of 6-40 negatives and a 15% false-positive rate alike in every group (expected
    counts below 5, where the chi-square reference is wrong): the permutation test rejects at 0.05
    in about 5% of seeded data sets, never far above."""
    rng = np.random.default_rng(41)
    sizes = rng.integers(6, 40, 15)
    groups = np.repeat(np.arange(15), sizes).astype(str).tolist()
    rejections = []
    for _ in range(200):
        errors = rng.random(len(groups)) < 0.15
        r = heterogeneity_test(errors, groups, key=f"size{_}", n_permutations=999)
        assert r["test"].startswith("exact")
        rejections.append(r["p_value"] <= 0.05)
    assert 0.02 <= np.mean(rejections) <= 0.085


def test_exact_test_finds_a_group_that_flags_more():
    """The community pattern: one group's harmless replies flagged at 0.40, the rest at 0.15."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(10, 45, 15)
    groups = np.repeat(np.arange(15), sizes)
    rate = np.where(groups == 0, 0.6, 0.12)
    hits = [heterogeneity_test(rng.random(len(groups)) < rate, groups.astype(str).tolist(), key=f"p{i}",
                               n_permutations=999)["p_value"] <= 0.05 for i in range(40)]
    assert np.mean(hits) >= 0.7


def test_group_prior_and_paired_difference_by_hand():
    prior = group_prior_scores([1, 1, 0, 0, 0, 0], ["a", "a", "a", "b", "b", "b"], ["a", "b", "a", "b"])
    assert prior.tolist() == pytest.approx([2 / 3, 0.0, 2 / 3, 0.0])
    # a judge that ranks every positive first vs the prior that ties within groups
    truth = [1, 0, 0, 0]
    judge = [0.9, 0.1, 0.2, 0.3]
    r = paired_auroc_difference(judge, prior, truth, n_boot=200)
    assert r["auroc"] == 1.0 and r["auroc_other"] == pytest.approx(auroc(prior, truth)) == pytest.approx(5 / 6)
    assert r["value"] == pytest.approx(1 / 6)
    # the same score against itself: zero, with a zero-width interval (the draws are paired)
    same = paired_auroc_difference(judge, judge, truth, n_boot=200)
    assert same["value"] == 0 and same["ci"] == [0.0, 0.0]


def _community_like(rng: np.random.Generator, n: int, informative: float):
    """Replies of 15 groups whose toxic rates differ (2-12%), scored by a judge that knows each
    group's rate and, with weight ``informative``, something about the reply itself."""
    groups = rng.integers(0, 15, n)
    base = np.linspace(0.02, 0.12, 15)[groups]
    truth = rng.random(n) < base
    noise = rng.standard_t(3, n) * 0.05  # heavy tails, as real judge scores
    score = base + informative * truth + noise
    return score, truth.astype(int), groups.astype(str).tolist()


def test_a_judge_that_knows_only_the_group_does_not_beat_the_prior():
    rng = np.random.default_rng(0)
    beats, covered = 0, 0
    for i in range(30):
        dev_s, dev_y, dev_g = _community_like(rng, 900, 0.0)
        s, y, g = _community_like(rng, 900, 0.0)
        r = group_skill(s, y, g, dev_y, dev_g, threshold=0.1, key=f"sim{i}", n_boot=300)["vs_group_prior"]
        beats += r["beats"]
        covered += r["ci"][0] <= 0 <= r["ci"][1] or r["ci"][1] < 0
    assert beats <= 3  # the interval lies above 0 in about 2.5% of runs, never often
    assert covered >= 27


def test_a_judge_that_reads_the_text_beats_the_prior():
    rng = np.random.default_rng(1)
    dev_s, dev_y, dev_g = _community_like(rng, 900, 0.3)
    s, y, g = _community_like(rng, 900, 0.3)
    r = group_skill(s, y, g, dev_y, dev_g, threshold=0.2, key="beats", n_boot=500)
    assert r["vs_group_prior"]["beats"] and r["vs_group_prior"]["ci"][0] > 0
    assert set(r["per_group"]) == set(g) and r["per_group_test"]["false_positive_rate"]["p_value"] is not None
    lo, hi = r["false_positive_range"]
    assert lo == min(v["false_positive_rate"] for v in r["per_group"].values()) and hi >= lo
