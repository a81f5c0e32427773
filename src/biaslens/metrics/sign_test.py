"""The exact sign test of paired differences, its effect size and interval, its power, and
Holm-consistent interval levels: inference that holds at any skew.

For paired values ``a_i``, ``b_i`` (a phrase and its counterfactual, one model), the effect is
the **sign effect** ``P(a > b) - P(a < b)`` among untied pairs, in [-1, 1] (0: no lean; -0.5:
three pairs in four lean towards ``a < b``). Given the number of untied pairs ``n``, the count
``k`` with ``a > b`` is Binomial(n, (1 + effect) / 2) whatever the distribution of the
differences, so:

- the test of effect = 0 is the exact binomial test (two-sided, equal-tailed; Bin(n, 1/2) is
  symmetric, so this is also ``scipy.stats.binomtest``'s p);
- the interval is Clopper-Pearson's for ``(1 + effect) / 2``, mapped to the effect scale. It
  excludes 0 exactly when the test's p is below ``1 - level`` (both are tail probabilities of
  the same binomial): test and interval agree by construction;
- coverage is at least ``level`` for every distribution of the differences (skewed, heavy-tailed,
  discrete), and power is an exact binomial sum (:func:`sign_power`, :func:`sign_detectable`).

Mean-based tests (the paired t, a sign-flip permutation of the mean, bootstraps of d_z) hold no
such guarantee when the differences are skewed: see docs/redditbias.md for the simulations.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

__all__ = ["sign_counts", "sign_test_p", "sign_effect_ci", "sign_power", "sign_detectable", "holm_levels"]


def sign_counts(diff: ArrayLike) -> tuple[int, int, int]:
    """``(n_positive, n_negative, n_ties)`` of the finite paired differences (NaN left out).

    >>> sign_counts([3.0, -1.0, 0.0, 2.5, float("nan")])
    (2, 1, 1)
    """
    d = np.asarray(diff, dtype=np.float64)
    d = d[np.isfinite(d)]
    return int((d > 0).sum()), int((d < 0).sum()), int((d == 0).sum())


def sign_test_p(k: ArrayLike, n: ArrayLike) -> np.ndarray:
    """Two-sided exact sign test: ``min(1, 2 * min(P(K <= k), P(K >= k)))``, K ~ Bin(n, 1/2);
    vectorised; NaN where ``n < 1``. 9 of 10 untied pairs lean one way: 2 * 11/1024:

    >>> round(float(sign_test_p(9, 10)), 5)
    0.02148
    """
    k, n = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        tail = np.minimum(stats.binom.cdf(k, n, 0.5), stats.binom.sf(k - 1, n, 0.5))
        p = np.minimum(1.0, 2.0 * tail)
    return np.where(n >= 1, p, np.nan)


def sign_effect_ci(k: ArrayLike, n: ArrayLike, level: ArrayLike = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval of the sign effect ``2 * P(a > b | untied) - 1`` from ``k`` of
    ``n`` untied pairs with ``a > b``, at ``level`` (vectorised). 9 of 10: effect 0.8,

    >>> [round(float(x), 4) for x in sign_effect_ci(9, 10)]
    [0.11, 0.9949]
    """
    k, n, lev = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (k, n, level)))
    a = (1.0 - lev) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, n - k), 1.0)
    bad = ~(n >= 1)
    return np.where(bad, np.nan, 2 * lo - 1), np.where(bad, np.nan, 2 * hi - 1)


def _rejection_bounds(n: int, alpha: float) -> tuple[int, int]:
    """The largest ``k_lo`` and smallest ``k_hi`` the level-``alpha`` two-sided test rejects at."""
    ks = np.arange(n + 1)
    reject = sign_test_p(ks, n) < alpha
    lo = ks[(ks <= n / 2) & reject]
    hi = ks[(ks >= n / 2) & reject]
    return (int(lo.max()) if lo.size else -1), (int(hi.min()) if hi.size else n + 1)


def sign_power(n: int, effect: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided sign test at ``alpha`` with ``n`` untied pairs, true effect
    ``effect``. 10 pairs at 5% reject at 0-1 or 9-10 of 10; with effect 0.8 (p = 0.9):

    >>> round(sign_power(10, 0.8), 4)
    0.7361
    """
    if n < 1:
        return 0.0
    k_lo, k_hi = _rejection_bounds(n, alpha)
    q = (1.0 + effect) / 2.0
    return float(stats.binom.cdf(k_lo, n, q) + stats.binom.sf(k_hi - 1, n, q))


@functools.lru_cache(maxsize=1024)
def sign_detectable(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest sign effect (either direction; the test is symmetric) that the two-sided
    exact sign test at ``alpha`` detects with at least ``power``, with ``n`` untied pairs; NaN
    when even an effect of 1 is not detected (too few pairs). At 200 pairs and 5%:

    >>> round(sign_detectable(200), 3)
    0.203
    """
    if n < 1 or sign_power(n, 1.0, alpha) < power:
        return float("nan")
    # power is increasing in the effect for a fixed rejection region: bisect on it
    return float(optimize.brentq(lambda e: sign_power(n, e, alpha) - power, 0.0, 1.0, xtol=1e-6))


def holm_levels(p: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """Interval levels that agree with Holm's step-down procedure at ``alpha``.

    With the p-values in ascending order, Holm rejects the j-th (1-based) while every one
    before it was rejected and ``p_(j) < alpha / (m - j + 1)``; it stops at the first step s
    that fails. The j-th gets level ``1 - alpha / (m - j + 1)`` for j < s and every later one
    the level of step s, ``1 - alpha / (m - s + 1)``. An interval at its level that is dual to
    its test (excludes the null exactly when p < 1 - level) then excludes the null exactly when
    Holm rejects it. NaN p-values are left out of the family (level NaN).

    Three p-values: 0.001 < 0.05/3 and 0.012 < 0.05/2 are rejected, 0.3 is not (>= 0.05/1):

    >>> holm_levels([0.001, 0.3, 0.012]).round(4).tolist()
    [0.9833, 0.95, 0.975]
    """
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    order = ok[np.argsort(p[ok], kind="stable")]
    stopped = None
    for j, i in enumerate(order):  # j = 0 .. m-1: step j+1, denominator m - j
        if stopped is None and not p[i] < alpha / (m - j):
            stopped = m - j
        out[i] = 1 - alpha / (stopped if stopped is not None else m - j)
    return out
