"""Paired preference: which of two forms of a sentence a model scores higher, with the
statistics the benchmarks that count it lack (CrowS-Pairs, Winogender, WinoBias).

Each item is a difference ``d = score(first form) - score(second form)`` (log-likelihood, nats),
and items may share a *unit*: a template filled several times, a schema written twice. The unit,
not the item, is what was sampled, so every interval and test here is over units:

- :func:`share_preferred`: the share of items with ``d > 0`` (ties count as not preferred, the
  CrowS-Pairs rule), its Wilson score interval with the cluster design effect (``n`` replaced by
  the effective number of items ``n / deff``; the t quantile with ``units - 1`` degrees of freedom)
  and the score test against 50% that inverts to that interval (so the verdict and the interval
  always agree), plus the exact sign test over units (ties excluded) beside it;
- :func:`mean_difference`: the mean difference with its cluster-robust t-interval (units - 1 df);
- :func:`holm_levels`: per-group interval levels that agree with Holm's step-down decisions;
- :func:`verdict`: "detected" / "not_detected" / "cannot_tell", from the test and the smallest
  effect the design detects with 80% power.

``tests/test_pair_preference.py`` checks coverage and size by seeded simulation at the sizes the
suites run (clustered, heavy-tailed and skewed differences).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from biaslens.metrics.multiple_testing import holm
from biaslens.metrics.proportions import wilson_interval

__all__ = ["MEANINGFUL_D", "MEANINGFUL_SHARE", "POWER", "by_group", "holm_levels", "mean_difference",
           "occupation_variance", "share_preferred", "sign_test", "verdict"]

#: the power the detectable effect is computed for
POWER = 0.8
#: a share this far from 50% (percentage points) is worth detecting: a design that cannot detect
#: it with 80% power says "cannot tell" rather than "not detected"
MEANINGFUL_SHARE = 10.0
#: the same for a mean difference, in standard deviations of the unit-level differences (Cohen's
#: "small" effect)
MEANINGFUL_D = 0.2


def _units(n: int, clusters: ArrayLike | None) -> np.ndarray:
    """Integer unit codes of the items (each item its own unit when ``clusters`` is None)."""
    if clusters is None:
        return np.arange(n)
    codes, _ = pd.factorize(pd.Series(np.asarray(clusters, dtype=object)), sort=False)
    return np.asarray(codes, dtype=np.int64)


def _cluster_variance(resid: np.ndarray, units: np.ndarray) -> tuple[float, int]:
    """The cluster-robust variance of a mean, sum_g (sum_i resid)^2 / n^2 x G/(G-1), and G."""
    sums = np.bincount(units, weights=resid)
    g = int(np.count_nonzero(np.bincount(units)))
    n = resid.shape[0]
    return float((sums**2).sum() / n**2 * g / max(g - 1, 1)), g


def occupation_variance(resid: np.ndarray, occupations: tuple[ArrayLike, ArrayLike]) -> tuple[float, int]:
    """The variance of a mean clustered two ways by the two occupations each item names (dyadic,
    Cameron, Gelbach & Miller 2011 with both roles pooled): sum over occupations of (the residuals
    of the items naming it)^2, less the same over unordered occupation pairs (items naming both
    would count twice), / n^2 x G/(G-1), G the occupations; and G. Items that share an occupation,
    in either role, are correlated; items that share none are not. Never below the pair-clustered
    variance (the two-way estimator can fall below it in small samples).

    >>> r = np.array([1.0, -1.0, 2.0, 0.0])
    >>> v, g = occupation_variance(r, (["a", "b", "a", "c"], ["b", "a", "c", "d"]))
    >>> g, round(v, 4)  # a: 1-1+2 = 2, b: 0, c: 2, d: 0; pairs ab: 0, ac: 2 -> (4 + 4 - 4)/16 x 4/3,
    (4, 0.375)
    >>> # below the pair-clustered (ab: 0, ac: 2, cd: 0 -> 4/16 x 3/2): that one
    """
    a = np.asarray(occupations[0], dtype=object)
    b = np.asarray(occupations[1], dtype=object)
    codes, names = pd.factorize(pd.Series(np.concatenate([a, b])), sort=False)
    n = resid.shape[0]
    ca, cb = codes[:n], codes[n:]
    g = len(names)
    per_occ = np.bincount(ca, weights=resid, minlength=g) + np.bincount(cb, weights=resid, minlength=g)
    same = ca == cb  # an item naming one occupation twice counts once
    per_occ -= np.bincount(ca[same], weights=resid[same], minlength=g)
    pair = np.minimum(ca, cb) * g + np.maximum(ca, cb)
    _, pair_codes = np.unique(pair, return_inverse=True)
    pair_sums = np.bincount(pair_codes, weights=resid * ~same)
    var_pair, _ = _cluster_variance(resid, pair_codes)
    var = float(((per_occ**2).sum() - (pair_sums**2).sum()) / n**2 * g / max(g - 1, 1))
    return max(var, var_pair), g


def _scored(diffs: ArrayLike, clusters: ArrayLike | None, occupations: tuple[ArrayLike, ArrayLike] | None
            ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None, int]:
    """The scored differences (missing ones left out, counted), their units and their occupations."""
    d = np.asarray(diffs, dtype=np.float64)
    ok = ~np.isnan(d)
    units = _units(d.shape[0], clusters)[ok]
    occ = None if occupations is None else (np.asarray(occupations[0], dtype=object)[ok],
                                            np.asarray(occupations[1], dtype=object)[ok])
    return d[ok], units, occ, int((~ok).sum())


def _variance(resid: np.ndarray, units: np.ndarray, occupations: tuple[np.ndarray, np.ndarray] | None
              ) -> tuple[float, int]:
    return _cluster_variance(resid, units) if occupations is None else occupation_variance(resid, occupations)


def share_preferred(diffs: ArrayLike, clusters: ArrayLike | None = None, *, level: float = 0.95,
                    occupations: tuple[ArrayLike, ArrayLike] | None = None) -> dict[str, Any]:
    """The share (percent) of items whose first form scores higher, its interval and tests.

    ``d`` NaN items are dropped (``n_missing``); ``d == 0`` is a tie and counts as not preferred.
    Returns ``share``, ``ci_low``, ``ci_high`` (percent), ``level``, ``df`` (units - 1), ``n``,
    ``n_units``, ``n_eff``, ``deff``, ``ties``, ``p`` (score test of 50% with the design effect),
    ``sign_p`` and its counts (exact sign test over units, ties excluded), ``detectable``
    (percentage points from 50% detected with 80% power) and ``n_missing``.

    ``occupations`` (two arrays: the occupations each item names): the variance clustered two ways
    by them (:func:`occupation_variance`) instead of by ``clusters``; ``n_units`` and ``df`` then
    count occupations.

    >>> r = share_preferred([1.0, 2.0, -1.0, 3.0, 0.0, 2.0, 1.0, -2.0, 4.0, 1.0])
    >>> r["share"], r["ties"], r["n_units"]
    (70.0, 1, 10)
    >>> round(r["ci_low"], 1), round(r["ci_high"], 1), round(r["p"], 3)
    (35.7, 90.7, 0.238)
    """
    d, units, occ, n_missing = _scored(diffs, clusters, occupations)
    n = int(d.shape[0])
    out: dict[str, Any] = {"n": n, "n_missing": n_missing, "ties": int((d == 0).sum()), "level": level}
    if n < 2:
        return out | {"share": float(100 * (d > 0).mean()) if n else None, "ci_low": None, "ci_high": None,
                      "p": None, "sign_p": None, "df": None, "n_units": n, "n_eff": float(n), "deff": 1.0,
                      "detectable": None}
    y = (d > 0).astype(np.float64)
    p_hat = float(y.mean())
    if (clusters is None and occ is None) or p_hat in (0.0, 1.0):
        deff, g = 1.0, int(np.unique(units).shape[0])
    else:
        var, g = _variance(y - p_hat, units, occ)
        # negatively correlated items (a schema's two twins lean opposite ways) shrink the variance; the
        # floor keeps a cluster-level variance of 0 (every cluster at p_hat) from an infinite n_eff
        deff = max(var / (p_hat * (1 - p_hat) / n), g / n)
    n_eff = n / deff
    df = max(g - 1, 1)
    crit = float(stats.t.ppf(0.5 + level / 2, df))
    # Wilson's interval with the t quantile: the normal-quantile form at the matching confidence
    lo, hi = wilson_interval(np.array([p_hat * n_eff]), np.array([n_eff]), confidence=2 * stats.norm.cdf(crit) - 1)
    z = (p_hat - 0.5) / np.sqrt(0.25 / n_eff)
    beta = float(stats.t.ppf(POWER, df))
    return out | {"share": 100 * p_hat, "ci_low": 100 * float(lo[0]), "ci_high": 100 * float(hi[0]), "df": float(df),
                  "p": float(2 * stats.t.sf(abs(z), df)), "n_units": g, "n_eff": float(n_eff), "deff": float(deff),
                  "detectable": float(100 * (crit + beta) * 0.5 / np.sqrt(n_eff)), **sign_test(d, units)}


def sign_test(diffs: ArrayLike, clusters: ArrayLike | None = None) -> dict[str, Any]:
    """The exact two-sided sign test over units: a unit leans to the first form when the mean sign
    of its items is positive; units with mean sign 0 (ties) are left out.

    >>> sign_test([1.0, 2.0, -1.0, 3.0, 0.0])
    {'sign_p': 0.625, 'sign_units_first': 3, 'sign_units_second': 1, 'sign_units_tied': 1}
    >>> sign_test([1.0, -1.0, 2.0, 2.0], clusters=["a", "a", "b", "b"])["sign_units_tied"]
    1
    """
    d = np.asarray(diffs, dtype=np.float64)
    units = _units(d.shape[0], clusters)
    lean = np.bincount(units, weights=np.sign(d))
    first, second = int((lean > 0).sum()), int((lean < 0).sum())
    p = float(stats.binomtest(first, first + second, 0.5).pvalue) if first + second else float("nan")
    return {"sign_p": p, "sign_units_first": first, "sign_units_second": second,
            "sign_units_tied": int((lean == 0).sum() - (np.bincount(units) == 0).sum())}


def mean_difference(diffs: ArrayLike, clusters: ArrayLike | None = None, *, level: float = 0.95,
                    occupations: tuple[ArrayLike, ArrayLike] | None = None) -> dict[str, Any]:
    """The mean of ``d`` with its cluster-robust t-interval (units - 1 degrees of freedom), the
    t-test of 0 that inverts to it, the unit-level standard deviation and the detectable mean.

    >>> r = mean_difference([0.5, 1.5, -0.5, 2.5])
    >>> r["mean"], round(r["ci_low"], 3), round(r["ci_high"], 3), r["df"]
    (1.0, -1.054, 3.054, 3.0)
    """
    d, units, occ, n_missing = _scored(diffs, clusters, occupations)
    n = int(d.shape[0])
    out: dict[str, Any] = {"n": n, "n_missing": n_missing, "level": level}
    if n < 2:
        return out | {"mean": float(d.mean()) if n else None, "ci_low": None, "ci_high": None, "se": None,
                      "df": None, "t": None, "p": None, "n_units": n, "sd_units": None, "detectable": None}
    mean = float(d.mean())
    var, g = _variance(d - mean, units, occ)
    se = float(np.sqrt(var))
    df = max(g - 1, 1)
    crit = float(stats.t.ppf(0.5 + level / 2, df))
    t = mean / se if se > 0 else float("nan")
    return out | {"mean": mean, "ci_low": mean - crit * se, "ci_high": mean + crit * se, "se": se, "df": float(df),
                  "t": t, "p": float(2 * stats.t.sf(abs(t), df)) if se > 0 else float("nan"), "n_units": g,
                  # the spread of one unit's mean difference: se x sqrt(units) (what Cohen's d_z divides by)
                  "sd_units": se * np.sqrt(g),
                  "detectable": (crit + float(stats.t.ppf(POWER, df))) * se}


def holm_levels(p: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """Per-test interval levels that agree with Holm's step-down decisions: the test of rank r
    (smallest p first) gets 1 - alpha/(m - r + 1) while Holm keeps rejecting, and every test from
    the first one Holm keeps gets that step's level, so an interval excludes the null exactly
    when Holm rejects (for a test that inverts to its interval). NaN p-values get NaN.

    >>> holm_levels([0.001, 0.02, 0.03, 0.5], alpha=0.05).round(5).tolist()
    [0.9875, 0.98333, 0.98333, 0.98333]
    >>> holm_levels([0.001, 0.01, 0.02, 0.5], alpha=0.05).round(5).tolist()
    [0.9875, 0.98333, 0.975, 0.95]
    """
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.shape[0]
    order = ok[np.argsort(p[ok], kind="stable")]
    stop_level = None
    for r, i in enumerate(order, start=1):
        step = 1 - alpha / (m - r + 1)
        if stop_level is None and p[i] >= alpha / (m - r + 1):
            stop_level = step
        out[i] = step if stop_level is None else stop_level
    return out


def verdict(p: float | None, detectable: float | None, meaningful: float, alpha: float = 0.05) -> str | None:
    """"detected" when ``p < alpha``; else "not_detected" when the design detects ``meaningful``
    (``detectable <= meaningful``), "cannot_tell" when it does not.

    >>> verdict(0.01, 12.0, 10.0), verdict(0.4, 6.0, 10.0), verdict(0.4, 18.0, 10.0)
    ('detected', 'not_detected', 'cannot_tell')
    """
    if p is None or not np.isfinite(p):
        return None
    if p < alpha:
        return "detected"
    return "not_detected" if detectable is not None and detectable <= meaningful else "cannot_tell"


def by_group(diffs: ArrayLike, groups: ArrayLike, clusters: ArrayLike | None = None, *, alpha: float = 0.05,
             order: list[Any] | None = None, occupations: tuple[ArrayLike, ArrayLike] | None = None) -> pd.DataFrame:
    """:func:`share_preferred` and :func:`mean_difference` per group, Holm over the groups: one row
    per group with ``share``, its interval at the Holm-consistent level (:func:`holm_levels`),
    ``p`` and ``p_holm`` (score test), ``sign_p``, ``mean_diff`` with its 95% interval, counts and
    ``verdict`` (on ``p_holm``). Groups in ``order`` (default: first appearance).

    >>> t = by_group([1.0, 2.0, -1.0, 1.0, 1.0, 1.0], ["a", "a", "a", "b", "b", "b"])
    >>> t["group"].tolist(), t["share"].round(1).tolist(), t["n"].tolist()
    (['a', 'b'], [66.7, 100.0], [3, 3])
    """
    d = np.asarray(diffs, dtype=np.float64)
    g = pd.Series(np.asarray(groups, dtype=object))
    cl = None if clusters is None else np.asarray(clusters, dtype=object)
    occ = None if occupations is None else (np.asarray(occupations[0], dtype=object),
                                            np.asarray(occupations[1], dtype=object))

    def occ_of(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        return None if occ is None else (occ[0][mask], occ[1][mask])

    names = order if order is not None else list(dict.fromkeys(g.tolist()))
    rows = []
    for name in names:
        mask = (g == name).to_numpy()
        if not mask.any():
            continue
        share = share_preferred(d[mask], None if cl is None else cl[mask], occupations=occ_of(mask))
        mean = mean_difference(d[mask], None if cl is None else cl[mask], occupations=occ_of(mask))
        rows.append({"group": name, "n": share["n"], "n_units": share["n_units"], "ties": share["ties"],
                     "share": share["share"], "p": share["p"], "sign_p": share["sign_p"],
                     "mean_diff": mean["mean"], "mean_ci_low": mean["ci_low"], "mean_ci_high": mean["ci_high"],
                     "mask": mask})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    p = table["p"].astype(float).to_numpy()
    table["p_holm"] = holm(p)
    table["level"] = holm_levels(p, alpha)
    lows, highs, detect = [], [], []
    for mask, level in zip(table["mask"], table["level"]):
        level = level if np.isfinite(level) else 1 - alpha
        s = share_preferred(d[mask], None if cl is None else cl[mask], level=level, occupations=occ_of(mask))
        lows.append(s["ci_low"])
        highs.append(s["ci_high"])
        detect.append(s["detectable"])
    table["ci_low"], table["ci_high"], table["detectable"] = lows, highs, detect
    # a group too small to test (one item: no p) cannot tell, rather than carrying no verdict
    table["verdict"] = [verdict(p, dt, MEANINGFUL_SHARE, alpha) or "cannot_tell"
                        for p, dt in zip(table["p_holm"], table["detectable"])]
    cols = ["group", "n", "n_units", "ties", "share", "ci_low", "ci_high", "level", "p", "p_holm", "sign_p",
            "mean_diff", "mean_ci_low", "mean_ci_high", "detectable", "verdict"]
    return table[cols]


def shared_positions(ids_a: Sequence[int], ids_b: Sequence[int]) -> tuple[list[int], list[int]]:
    """Positions of the tokens two token-id sequences share: the ``equal`` blocks of
    ``difflib.SequenceMatcher`` over the ids, in order (the authors' ``get_span``).

    >>> shared_positions([101, 7, 8, 9, 102], [101, 7, 5, 6, 9, 102])
    ([0, 1, 3, 4], [0, 1, 4, 5])
    """
    matcher = difflib.SequenceMatcher(None, [str(x) for x in ids_a], [str(x) for x in ids_b])
    a: list[int] = []
    b: list[int] = []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            a += range(a0, a1)
            b += range(b0, b1)
    return a, b

