"""Which of several models' headline numbers differ, with the family-wise error controlled.

A leaderboard compares every pair of k models (m = k(k-1)/2 comparisons); calling a pair
different whenever its two 95% intervals miss each other, or whenever one unadjusted test says
p < 0.05, declares spurious differences far more often than 5% of the time once k is more than
two or three. :func:`simultaneous_differences` gives Bonferroni-adjusted (simultaneous)
intervals for all pairwise differences: with probability at least 1 - alpha every one of the m
intervals covers its true difference, so the chance of calling any pair different when no two
models differ is at most alpha.

Each model's headline and its interval are enough. Each side's standard error is read off its
interval, from the half that faces the other model (intervals of bounded or skewed statistics
are asymmetric), at the interval's own level and reference: ``se = half-width / q`` with ``q``
the ``(1 + level) / 2`` quantile of Student's t with the interval's degrees of freedom
(``interval_df``), or of the normal for a normal or resampling interval. A simultaneous interval
(level 1 - 0.05/5, say) read as if it were 95% would give a standard error too large by the
ratio of the two quantiles. The difference's standard error is ``sqrt(se_a**2 + se_b**2)``: exact
for independent normal estimates, conservative when the two are positively correlated (same
items scored by both models); not valid for negatively correlated estimates. Where both models
scored the same items, a paired standard error computed from them (``pair_se``, e.g. from each
item's contribution to the headline) replaces it: far more power when the items' scores are
correlated between models. Standard errors estimated from few units make the ratio
heavier-tailed than normal, which matters far out in Bonferroni's tail: pass each model's
degrees of freedom (``df``) to refer it to Student's t.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import norm
from scipy.stats import t as student_t

__all__ = ["simultaneous_differences", "pairwise_tests", "interval_quantile"]


def interval_quantile(ci_level: ArrayLike, interval_df: ArrayLike | None = None) -> np.ndarray:
    """The quantile an interval's half-width is a multiple of the standard error by: Student's t
    with ``interval_df`` where finite, else the normal, at ``(1 + ci_level) / 2`` (vectorised).

    >>> [round(float(q), 3) for q in interval_quantile([0.95, 0.99, 0.95], [np.nan, np.nan, 10])]
    [1.96, 2.576, 2.228]
    """
    lev = np.asarray(ci_level, dtype=np.float64)
    z: np.ndarray = np.asarray(norm.ppf(0.5 + lev / 2), dtype=np.float64)
    if interval_df is None:
        return z
    d = np.asarray(interval_df, dtype=np.float64)
    lev, d = np.broadcast_arrays(lev, d)
    with np.errstate(invalid="ignore"):
        t: np.ndarray = np.asarray(student_t.ppf(0.5 + lev / 2, np.where(d > 0, d, 1.0)), dtype=np.float64)
    out: np.ndarray = np.where(np.isfinite(d) & (d > 0), t, np.broadcast_to(z, d.shape))
    return out


def pairwise_tests(values: ArrayLike, ci_low: ArrayLike, ci_high: ArrayLike, *, alpha: float = 0.05,
                   ci_level: ArrayLike = 0.95, df: ArrayLike | None = None, interval_df: ArrayLike | None = None,
                   pair_se: ArrayLike | None = None, pair_df: ArrayLike | None = None) -> dict[str, np.ndarray]:
    """The arrays behind :func:`simultaneous_differences`, for a batch: inputs ``(..., k)``,
    outputs ``(..., m_all)`` over the pairs ``np.triu_indices(k, 1)`` (``m`` per batch row)."""
    v, lo, hi = (np.asarray(a, dtype=np.float64) for a in (values, ci_low, ci_high))
    ok = np.isfinite(v) & np.isfinite(lo) & np.isfinite(hi) & (lo <= v) & (v <= hi)
    i, j = np.triu_indices(v.shape[-1], 1)
    diff = v[..., i] - v[..., j]
    q = np.broadcast_to(interval_quantile(ci_level, interval_df), v.shape)
    # the half of each interval that faces the other model
    up = diff >= 0
    s_i = np.where(up, v[..., i] - lo[..., i], hi[..., i] - v[..., i]) / q[..., i]
    s_j = np.where(up, hi[..., j] - v[..., j], v[..., j] - lo[..., j]) / q[..., j]
    se = np.sqrt(s_i ** 2 + s_j ** 2)
    usable = ok[..., i] & ok[..., j]
    paired = np.zeros(diff.shape, dtype=bool)
    if pair_se is not None:  # the same items in both models: their paired standard error
        ps = np.broadcast_to(np.asarray(pair_se, dtype=np.float64), diff.shape)
        paired = np.isfinite(ps) & usable
        se = np.where(paired, ps, se)
    usable &= se > 0
    pdf = None
    if df is not None:
        d = np.broadcast_to(np.asarray(df, dtype=np.float64), v.shape)
        pdf = np.minimum(d[..., i], d[..., j])
        if pair_df is not None:
            pdf = np.where(paired, np.broadcast_to(np.asarray(pair_df, dtype=np.float64), diff.shape), pdf)
        usable &= np.isfinite(pdf) & (pdf >= 1)
    pair_df = pdf
    m = usable.sum(axis=-1, keepdims=True)
    q = 1 - alpha / (2 * np.maximum(m, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(diff) / se
        if pair_df is None:
            crit, tail = norm.ppf(q) * np.ones_like(diff), norm.sf(ratio)
        else:
            safe = np.where(usable, pair_df, 1.0)
            # few distinct (m, df): the quantile once per distinct pair of them
            keys, inverse = np.unique(np.stack([np.broadcast_to(q, diff.shape), safe], -1).reshape(-1, 2),
                                      axis=0, return_inverse=True)
            crit = student_t.ppf(keys[:, 0], keys[:, 1])[inverse.reshape(-1)].reshape(diff.shape)
            tail = student_t.sf(ratio, safe)
        p = np.minimum(1.0, m * 2 * tail)
    return {"usable": usable, "diff": diff, "se": se, "critical": crit, "p_adj": p, "m": m[..., 0],
            "distinguishable": usable & (ratio > crit), "paired": paired & usable}


def simultaneous_differences(values: ArrayLike, ci_low: ArrayLike, ci_high: ArrayLike, *, alpha: float = 0.05,
                             ci_level: ArrayLike = 0.95, df: ArrayLike | None = None,
                             interval_df: ArrayLike | None = None, pair_se: ArrayLike | None = None,
                             pair_df: ArrayLike | None = None) -> pd.DataFrame:
    """All pairwise differences ``values[i] - values[j]`` (i < j) with Bonferroni-simultaneous intervals.

    Args:
        values: each model's estimate.
        ci_low: the lower end of each model's two-sided ``ci_level`` interval; a model without
            a finite interval is left out of the family (its pairs get NaN and
            ``distinguishable`` False).
        ci_high: the upper end of that interval.
        alpha: the family-wise error rate over all pairs that have intervals.
        ci_level: the level of each model's own interval (one number or one per model; their
            half-widths give the standard errors).
        interval_df: per model, the degrees of freedom of its interval's t reference (NaN or
            None: a normal or resampling interval), for reading its half-width.
        pair_se: per pair (``np.triu_indices(k, 1)`` order), a paired standard error of the
            difference from the items both models scored; NaN where there is none (the
            independent one is used).
        pair_df: per pair, the degrees of freedom of ``pair_se`` (replacing the smaller of the
            two models' ``df`` for the paired pairs).
        df: per model, the degrees of freedom of its standard error (the number of independent
            units its interval rests on, less one); a pair is referred to Student's t with the
            smaller of its two (Welch's conservative choice). None: normal (large samples). An
            estimated standard error makes the ratio heavier-tailed than normal, and Bonferroni
            works far out in that tail (z = 4.1 for 50 models), so a small-sample interval needs it.

    Returns:
        One row per pair: ``i``, ``j``, ``diff``, ``se``, ``ci_low``, ``ci_high`` (the
        simultaneous ``1 - alpha`` interval of the difference), ``p_adj`` (Bonferroni-adjusted
        two-sided p, consistent with the interval: ``p_adj < alpha`` exactly when the interval
        excludes 0), ``distinguishable``, ``paired`` (the pair's standard error came from shared
        items), and ``m`` (pairs in the family).
        A pair whose facing half-widths are both 0 has no usable uncertainty: NaN, not
        distinguishable.

    Three models at 0.0, 1.0 and 0.1, each with a 95% interval of +-0.196 (a standard error of
    0.1): every difference has a standard error of sqrt(0.1**2 + 0.1**2) = 0.141 and, over the 3
    pairs, a Bonferroni critical value z(1 - 0.05/6) = 2.394, so a half-width of 0.339: the
    differences of 1.0 and 0.9 are told apart, that of 0.1 is not.

    >>> d = simultaneous_differences([0.0, 1.0, 0.1], [-0.196, 0.804, -0.096], [0.196, 1.196, 0.296])
    >>> [(int(a), int(b), round(float(x), 1), bool(y)) for a, b, x, y in zip(d.i, d.j, d["diff"], d.distinguishable)]
    [(0, 1, -1.0, True), (0, 2, -0.1, False), (1, 2, 0.9, True)]
    >>> round(float(d.critical[0]), 3), round(float(d.ci_high[1] - d["diff"][1]), 3)
    (2.394, 0.339)
    """
    v = np.asarray(values, dtype=np.float64)
    r = pairwise_tests(v, ci_low, ci_high, alpha=alpha, ci_level=ci_level, df=df, interval_df=interval_df,
                       pair_se=pair_se, pair_df=pair_df)
    i, j = np.triu_indices(v.shape[-1], 1)
    usable, diff, se, z_m, p, m = r["usable"], r["diff"], r["se"], r["critical"], r["p_adj"], int(r["m"])
    nan = np.full(diff.shape, np.nan)
    return pd.DataFrame({
        "i": i, "j": j, "diff": np.where(usable, diff, nan), "se": np.where(usable, se, nan),
        "ci_low": np.where(usable, diff - z_m * se, nan), "ci_high": np.where(usable, diff + z_m * se, nan),
        "p_adj": np.where(usable, p, nan), "distinguishable": r["distinguishable"],
        "critical": np.where(usable, z_m, nan), "paired": r["paired"], "m": m})
