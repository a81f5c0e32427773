"""The paired-preference statistics (metrics/pair_preference.py) at the sizes the CrowS-Pairs,
Winogender and WinoBias suites run, by seeded simulation where the right answer is known:
coverage of the intervals and size of the tests with clustered, heavy-tailed and skewed
differences, and agreement of each verdict with the interval shown beside it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biaslens.metrics.pair_preference import by_group, holm_levels, mean_difference, share_preferred, sign_test

REPS = 400


def _clustered(rng, n_units: int, per_unit: int, mu: float, sd_unit: float):
    """Differences sharing a unit effect (a template written twice), heavy-tailed items (t, 3 df)."""
    u = rng.normal(0, sd_unit, n_units)
    d = mu + np.repeat(u, per_unit) + rng.standard_t(3, n_units * per_unit)
    return d, np.repeat(np.arange(n_units), per_unit)


def _true_share(mu: float, sd_unit: float) -> float:
    big = np.random.default_rng(99)
    return float((mu + big.normal(0, sd_unit, 2_000_000) + big.standard_t(3, 2_000_000) > 0).mean() * 100)


@pytest.mark.parametrize("n_units,mu", [(198, 0.0), (198, 0.6), (396, 1.5)])  # WinoBias cells and types
def test_share_interval_covers_over_clustered_templates(n_units, mu):
    """Two items per schema with a shared schema effect: the design-effect Wilson interval covers
    the true share in about 95% of runs; the interval that treats items as independent does not."""
    rng = np.random.default_rng(n_units + int(10 * mu))
    truth = _true_share(mu, 1.5)
    hit = naive = 0
    for _ in range(REPS):
        d, cl = _clustered(rng, n_units, 2, mu, 1.5)
        r = share_preferred(d, cl)
        hit += r["ci_low"] <= truth <= r["ci_high"]
        q = share_preferred(d)
        naive += q["ci_low"] <= truth <= q["ci_high"]
    print(f"units {n_units}, true share {truth:.1f}%: coverage {hit / REPS:.3f} clustered, {naive / REPS:.3f} naive")
    assert 0.925 <= hit / REPS <= 0.975
    assert naive / REPS < hit / REPS - 0.04  # clustering matters at this unit effect


@pytest.mark.parametrize("n", [60, 120, 1508])  # CrowS-Pairs' smallest type, Winogender's templates, all pairs
def test_score_test_size_and_agreement_with_interval(n):
    """No preference (symmetric differences): the test rejects about 5% of the time, and it rejects
    exactly when the interval excludes 50%."""
    rng = np.random.default_rng(n)
    rejected = 0
    for _ in range(REPS):
        d = rng.standard_t(2, n) * rng.choice([0.2, 3.0], n)
        r = share_preferred(d)
        rejected += r["p"] < 0.05
        assert (r["p"] < 0.05) == (not r["ci_low"] <= 50 <= r["ci_high"])
    print(f"n {n}: size {rejected / REPS:.3f}")
    assert 0.02 <= rejected / REPS <= 0.08


@pytest.mark.parametrize("n", [60, 120])
def test_mean_interval_covers_with_skewed_heavy_tails(n):
    """Log-likelihood differences are heavy-tailed and can be skewed: the t-interval over units
    still covers the mean in at least 92.5% of runs at the smallest size a suite reports."""
    rng = np.random.default_rng(7 * n)
    mu = 0.3
    cover = 0
    for _ in range(REPS):
        d = mu + 0.7 * rng.standard_t(3, n) + (rng.gamma(2.0, 1.0, n) - 2.0)
        r = mean_difference(d)
        cover += r["ci_low"] <= mu <= r["ci_high"]
    print(f"n {n}: coverage {cover / REPS:.3f}")
    assert cover / REPS >= 0.925


def test_clustered_mean_interval_matches_unit_means():
    """With equal cluster sizes the cluster-robust interval is the t-interval of the unit means."""
    rng = np.random.default_rng(3)
    d, cl = _clustered(rng, 120, 2, 0.4, 1.0)
    r = mean_difference(d, cl)
    means = d.reshape(120, 2).mean(axis=1)
    lo, hi = stats.t.interval(0.95, 119, means.mean(), stats.sem(means))
    assert r["ci_low"] == pytest.approx(lo) and r["ci_high"] == pytest.approx(hi) and r["df"] == 119


def test_sign_test_is_the_binomial_test_over_units():
    d = np.array([1.0, -1.0, 2.0, 2.0, -3.0, -1.0, 0.5, 0.7])
    r = sign_test(d, ["a", "a", "b", "b", "c", "c", "d", "d"])
    assert (r["sign_units_first"], r["sign_units_second"], r["sign_units_tied"]) == (2, 1, 1)
    assert r["sign_p"] == pytest.approx(stats.binomtest(2, 3).pvalue)


def test_holm_verdicts_agree_with_their_intervals():
    """Per-group rows: 'detected' exactly where the interval at the row's Holm level excludes 50%."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        groups = np.repeat(np.arange(9), 80)
        shift = np.repeat(rng.choice([0.0, 0.15, 0.3], 9), 80)
        d = rng.normal(shift, 1.0)
        t = by_group(d, groups)
        for r in t.itertuples():
            excludes = not r.ci_low <= 50 <= r.ci_high
            assert (r.verdict == "detected") == excludes, r
        assert np.allclose(t["level"], holm_levels(t["p"].to_numpy()))
