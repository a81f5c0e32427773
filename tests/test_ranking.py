"""metrics/ranking.py: simultaneous intervals for all pairwise differences of model headlines."""

import numpy as np
import pytest
from scipy.stats import binom
from scipy.stats import t as student_t

from biaslens.metrics.ranking import pairwise_tests, simultaneous_differences


def test_hand_computed_three_models():
    # se = half-width / 1.959964: 0.2 -> 0.102043, 0.1 -> 0.0510213; m = 3 pairs, so each
    # interval is at 1 - 0.05/3: z = Phi^-1(1 - 0.05/6) = 2.393980.
    # (0, 1): 0.5 - 0.9 = -0.4, se = sqrt(0.2^2 + 0.1^2) / 1.959964 = 0.114087 (0's upper half,
    #         1's lower half), interval -0.4 -+ 2.393980 * 0.114087 = -0.673122 to -0.126878;
    #         adjusted p = 6 * Phi(-0.4 / 0.114087) = 6 * Phi(-3.50609) = 0.0013642.
    # (0, 2): 0.05 -+ 0.273122 covers 0: not distinguishable, adjusted p capped at 1.
    # (1, 2): 0.45, se = sqrt(0.1^2 + 0.1^2) / 1.959964 = 0.072155, 0.45 -+ 0.172738.
    res = simultaneous_differences([0.5, 0.9, 0.45], [0.3, 0.8, 0.35], [0.7, 1.0, 0.55])
    assert res[["i", "j"]].values.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert (res["m"] == 3).all()
    assert res["se"].tolist() == pytest.approx([0.114087, 0.114087, 0.072155], abs=2e-6)
    assert res["ci_low"].tolist() == pytest.approx([-0.673122, -0.223122, 0.277262], abs=2e-6)
    assert res["ci_high"].tolist() == pytest.approx([-0.126878, 0.323122, 0.622738], abs=2e-6)
    assert res["p_adj"].iloc[0] == pytest.approx(0.0013642, abs=1e-7) and res["p_adj"].iloc[1] == 1.0
    assert res["distinguishable"].tolist() == [True, False, True]
    assert res["critical"].iloc[0] == pytest.approx(2.393980, abs=1e-6)


def test_the_facing_halves_and_student_t():
    # 0.9 [0.5, 0.95] vs 0.6 [0.55, 0.65]: the first's lower half (0.4) and the second's upper
    # half (0.05) face each other: se = sqrt(0.16 + 0.0025) / 1.959964 = 0.205674; df 10 (the
    # smaller): critical t_10(0.975) = 2.228139, half-width 0.458269 > 0.3.
    res = simultaneous_differences([0.9, 0.6], [0.5, 0.55], [0.95, 0.65], df=[10, 20])
    assert res["se"].iloc[0] == pytest.approx(0.205674, abs=2e-6)
    assert res["critical"].iloc[0] == pytest.approx(2.228139, abs=1e-6)
    assert res["ci_low"].iloc[0] == pytest.approx(0.3 - 0.458269, abs=2e-6)
    assert not res["distinguishable"].iloc[0]
    # with the (narrow) upper half of the first instead it would have been called: the halves matter
    assert simultaneous_differences([0.9, 0.6], [0.85, 0.55], [0.95, 0.65])["distinguishable"].iloc[0]


def test_models_without_interval_or_width_are_left_out_of_the_family():
    res = simultaneous_differences([0.1, 0.5, 0.9, 0.3], [0.0, np.nan, 0.9, 0.2], [0.2, 0.6, 0.9, 0.4],
                                   df=[10, 10, 10, np.nan])
    # model 1 has no interval, model 2 a zero-width one, model 3 no df: only pair (0, 2) counts,
    # through model 0's half alone
    assert res["m"].iloc[0] == 1
    usable = res.dropna(subset=["diff"])
    assert usable[["i", "j"]].values.tolist() == [[0, 2]]
    assert not res.loc[res["diff"].isna(), "distinguishable"].any()


def _fwer(make, k: int, reps: int, rng, df: bool) -> float:
    """Share of ``reps`` simulated leaderboards (all models equal) with any pair called different."""
    v, lo, hi, n = make(reps, k, rng)
    res = pairwise_tests(v, lo, hi, df=np.full(k, n - 1.0) if df else None)
    return float(res["distinguishable"].any(axis=-1).mean())


def _normal(reps, k, rng):
    se = rng.uniform(0.5, 2.0, (reps, k))
    v = rng.normal(0.0, se)
    return v, v - 1.959964 * se, v + 1.959964 * se, np.inf


def _skewed_mean_shared_items(reps, k, rng, n=15):
    """Means of n skewed item scores, the items shared by all models (positively correlated
    estimates), with 95% t-intervals: RedditBias's d_z on template pairs, in shape."""
    x = rng.exponential(1.0, (reps, 1, n)) + rng.exponential(1.0, (reps, k, n))
    m, s = x.mean(-1), x.std(-1, ddof=1) / np.sqrt(n)
    q = student_t.ppf(0.975, n - 1)
    return m, m - q * s, m + q * s, n


def _share(reps, k, rng, n=13, p=0.7):
    """A share of n units with a percentile-bootstrap interval (Likelihood Bias at the smoke
    budget: 13 descriptor pairs): discrete, bounded, its variance estimated from itself.
    Resampling n 0/1 units gives Binomial(n, share) / n: its exact quantiles are the interval
    the bootstrap approaches (the suite draws 2,000 resamples)."""
    share = rng.binomial(n, p, (reps, k)) / n
    return share, binom.ppf(0.025, n, share) / n, binom.ppf(0.975, n, share) / n, n


@pytest.mark.parametrize("k", [2, 5, 10, 50])
def test_familywise_error_under_the_null(k, terminal_summary_lines):
    """No two models differ: the chance of calling any pair different stays at about 5% or
    below (at most 0.07), for 2 to 50 models, in three designs; seeded, rates printed in the
    test summary (docs/leaderboard.md quotes them). Replications: 4,000 / 2,000 / 2,000
    (binomial standard error at 0.05: 0.0034 / 0.0049), for 50 models 1,000 / 500 / 500 (0.0069 / 0.0097)."""
    rng = np.random.default_rng(27 + k)
    reps = (1000, 500) if k == 50 else (4000, 2000)
    rates = [_fwer(_normal, k, reps[0], rng, df=False), _fwer(_skewed_mean_shared_items, k, reps[1], rng, df=True),
             _fwer(_share, k, reps[1], rng, df=True)]
    normal_reference = _fwer(_share, k, reps[1], rng, df=False)  # what the t reference avoids (not asserted)
    terminal_summary_lines.setdefault("leaderboard familywise error under the null", []).append(
        f"{k} models: normal {rates[0]:.3f}, skewed means n=15 on shared items (t) {rates[1]:.3f}, "
        f"share of n=13 with percentile interval (t, df 12) {rates[2]:.3f}; the same shares, normal "
        f"reference {normal_reference:.3f}")
    assert max(rates) <= 0.07, rates


def test_a_normal_reference_is_not_enough_for_small_samples():
    """Why the degrees of freedom are passed: the same small-sample shares referred to the
    normal call spurious differences far more often than 5% among 10 models."""
    rng = np.random.default_rng(3)
    assert _fwer(_share, 10, 2000, rng, df=False) > 0.12


def test_power_a_real_difference_is_found():
    rng = np.random.default_rng(5)
    found = 0
    for _ in range(300):
        se = np.full(5, 0.1)
        v = rng.normal([0, 0, 0, 0, 0.6], se)
        res = simultaneous_differences(v, v - 1.96 * se, v + 1.96 * se)
        found += res.loc[res["j"] == 4, "distinguishable"].all()
    assert found / 300 > 0.8



@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_paired_comparison_on_shared_items(rho, terminal_summary_lines):
    """Two models' headlines (means of 50 item scores, sd 1) on the same items, item scores
    correlated rho between the models: the leaderboard's paired test (each item's contribution,
    ``card_leaderboard.paired_se``) keeps its size and gains the power the correlation gives;
    the independent test (each model's 95% t-interval) cannot. 2,000 runs per cell, seeded."""
    import pandas as pd

    from biaslens.card_leaderboard import paired_se

    rng = np.random.default_rng(int(rho * 10) + 11)
    n, reps, delta = 50, 2000, 0.35
    q = student_t.ppf(0.975, n - 1)
    rates = {}
    for effect in (0.0, delta):
        e = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=(reps, n))  # reps x n x 2
        x = e + np.array([effect, 0.0])
        v = x.mean(1)
        half = q * x.std(1, ddof=1) / np.sqrt(n)
        index = pd.Index([f"item{i}" for i in range(n)])
        se_df = np.array([paired_se(pd.Series((x[r, :, 0] - v[r, 0]) / n, index),
                                    pd.Series((x[r, :, 1] - v[r, 1]) / n, index)) for r in range(reps)])
        ind = pairwise_tests(v, v - half, v + half, df=np.full(2, n - 1.0), interval_df=np.full(2, n - 1.0))
        par = pairwise_tests(v, v - half, v + half, df=np.full(2, n - 1.0), interval_df=np.full(2, n - 1.0),
                             pair_se=se_df[:, :1], pair_df=se_df[:, 1:])
        assert par["paired"].all()
        rates[effect] = (float(ind["distinguishable"].mean()), float(par["distinguishable"].mean()))
    terminal_summary_lines.setdefault("leaderboard: paired vs independent comparison on 50 shared items", []).append(
        f"item correlation {rho}: false call {rates[0.0][1]:.3f} paired, {rates[0.0][0]:.3f} independent; power at a "
        f"difference of {delta} sd: {rates[delta][1]:.3f} paired, {rates[delta][0]:.3f} independent")
    assert rates[0.0][1] <= 0.06 and rates[0.0][0] <= 0.06
    if rho == 0.5:
        assert rates[delta][1] >= rates[delta][0] + 0.2
    if rho == 0.9:
        assert rates[delta][1] > 0.95 and rates[delta][0] < 0.6
