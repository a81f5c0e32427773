"""Vectorized pairwise Mann-Whitney U and p-value corrections against scipy."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

try:
    import biaslens  # noqa: F401
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from biaslens.metrics import benjamini_hochberg, holm, pairwise_mannwhitney


def _check_against_scipy(samples: list[np.ndarray]) -> None:
    res = pairwise_mannwhitney(samples)
    pairs = list(itertools.combinations(range(len(samples)), 2))
    assert len(res) == len(pairs)
    assert res.i.tolist() == [i for i, _ in pairs]
    assert res.j.tolist() == [j for _, j in pairs]
    for k, (i, j) in enumerate(pairs):
        ref = stats.mannwhitneyu(samples[i], samples[j])
        assert res.u[k] == pytest.approx(float(ref.statistic), rel=1e-12, abs=0)
        assert res.p_value[k] == pytest.approx(float(ref.pvalue), rel=1e-12, abs=1e-300)
        assert res.n_0[k] == len(samples[i]) and res.n_1[k] == len(samples[j])
        n1n2 = len(samples[i]) * len(samples[j])
        assert res.rank_biserial[k] == pytest.approx(2 * float(ref.statistic) / n1n2 - 1, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["continuous", "rounded", "few_values"])
def test_random_blocks_match_scipy(seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(2, 12))
    sizes = rng.integers(1, 45, size=n_groups)  # unequal, including tiny samples
    samples = []
    for n in sizes:
        x = rng.lognormal(mean=3.0, sigma=0.5, size=n)
        if kind == "rounded":
            x = np.round(x, 0)  # many ties
        elif kind == "few_values":
            x = rng.integers(0, 3, size=n).astype(np.float64)  # massive ties
        samples.append(x)
    _check_against_scipy(samples)


def test_equal_sizes_30_like_holistic_bias() -> None:
    rng = np.random.default_rng(123)
    samples = [rng.lognormal(4.0, 0.3, size=30) for _ in range(25)]
    samples[3][:5] = samples[7][:5]  # a few ties across descriptors
    _check_against_scipy(samples)


def test_tiny_samples_use_exact_like_scipy() -> None:
    rng = np.random.default_rng(7)
    samples = [rng.normal(size=n) for n in (1, 2, 3, 5, 8, 9, 20)]
    res = pairwise_mannwhitney(samples)
    _check_against_scipy(samples)
    # exact only when a sample has <= 8 values (and there are no ties)
    small = (res.n_0 <= 8) | (res.n_1 <= 8)
    assert (res.exact == small).all()


def test_tiny_samples_with_ties_use_asymptotic() -> None:
    samples = [np.array([1.0, 2.0, 2.0]), np.array([2.0, 3.0]), np.array([5.0, 6.0, 7.0])]
    res = pairwise_mannwhitney(samples)
    assert res.exact.tolist() == [False, False, True]
    _check_against_scipy(samples)


def test_constant_samples_sigma_zero() -> None:
    # All pooled values equal -> sigma == 0; scipy returns p = 1 (clipped from 2).
    samples = [np.full(10, 3.0), np.full(12, 3.0), np.full(9, 4.0), np.full(3, 3.0)]
    res = pairwise_mannwhitney(samples)
    assert res.p_value[0] == 1.0
    assert res.u[0] == 60.0
    _check_against_scipy(samples)


def test_hand_computed_example() -> None:
    # x = [3, 1, 4], y = [4, 5, 2, 9]
    # pooled sorted: 1(x) 2(y) 3(x) 4(x) 4(y) 5(y) 9(y)
    # ranks:          1    2    3   4.5  4.5   6    7
    # R_x = 1 + 3 + 4.5 = 8.5; U1 = R_x - 3*4/2 = 2.5 (check: 3>2, 4>2, 4=4 -> 1+1+0.5)
    # rank-biserial = 2*2.5/12 - 1 = -7/12 (x tends to be smaller -> negative)
    # one tie of size 2: tie term 2^3-2 = 6; n = 7
    # sigma = sqrt(12/12 * (8 - 6/42)) = sqrt(55/7); U = max(2.5, 9.5) = 9.5; mu = 6
    # z = (9.5 - 6 - 0.5) / sigma = 3 * sqrt(7/55); p = 2 * sf(z) = erfc(z / sqrt(2))
    res = pairwise_mannwhitney([[3.0, 1.0, 4.0], [4.0, 5.0, 2.0, 9.0]])
    assert res.u.tolist() == [2.5]
    assert res.rank_biserial[0] == pytest.approx(-7 / 12, rel=1e-15)
    z = 3 * math.sqrt(7 / 55)
    assert res.p_value[0] == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)
    assert not res.exact[0]


def test_grouped_input_equals_list_input() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 5, size=100)
    vals = np.round(rng.normal(size=100), 1)
    a = pairwise_mannwhitney(vals, codes)
    b = pairwise_mannwhitney([vals[codes == g] for g in range(5)])
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.p_value, b.p_value)


def test_degenerate_inputs() -> None:
    assert len(pairwise_mannwhitney([np.arange(3.0)])) == 0
    with pytest.raises(ValueError):
        pairwise_mannwhitney([np.arange(3.0), np.array([])])
    with pytest.raises(ValueError):
        pairwise_mannwhitney([np.arange(3.0), np.array([1.0, np.nan])])


def test_benjamini_hochberg_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.uniform(size=500), rng.uniform(0, 1e-4, size=50), [0.5, 0.5, 0.5, 0.0, 1.0]])
    rng.shuffle(p)
    np.testing.assert_allclose(benjamini_hochberg(p), stats.false_discovery_control(p), rtol=1e-12, atol=0)


def test_benjamini_hochberg_nan_and_shape() -> None:
    p = np.array([[0.01, np.nan], [0.04, 0.03]])
    out = benjamini_hochberg(p)
    assert out.shape == (2, 2) and np.isnan(out[0, 1])
    expected = stats.false_discovery_control(np.array([0.01, 0.04, 0.03]))
    np.testing.assert_allclose(out[~np.isnan(out)], expected, rtol=1e-12)


def test_holm_hand_computation() -> None:
    # p = [0.01, 0.04, 0.03, 0.005], m = 4; ascending: 0.005, 0.01, 0.03, 0.04
    # raw factors: 4*0.005=0.02, 3*0.01=0.03, 2*0.03=0.06, 1*0.04=0.04
    # running max: 0.02, 0.03, 0.06, 0.06
    out = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(out, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    # capped at 1
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])


def test_holm_against_reference_definition() -> None:
    rng = np.random.default_rng(5)
    p = rng.uniform(0, 0.05, size=200)
    m = len(p)
    order = np.argsort(p, kind="stable")
    ref = np.empty(m)
    running = 0.0
    for k, idx in enumerate(order):  # statsmodels-style step-down definition
        running = max(running, min(1.0, (m - k) * p[idx]))
        ref[idx] = running
    np.testing.assert_allclose(holm(p), ref, rtol=1e-12)
    assert np.isnan(holm([np.nan, 0.1])[0])
    with pytest.raises(ValueError):
        holm([1.5])
