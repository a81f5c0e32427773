"""Shared by the bootstraps of the metrics: descriptor draws (Likelihood Bias, generation bias)
and keyed percentile bootstraps of a mean (community bias)."""

from __future__ import annotations

import hashlib

import numpy as np


def keyed_rng(key: str) -> np.random.Generator:
    """A generator seeded by a text key (seed and the labels of what is resampled), so a run on a
    subset draws the same numbers for the same key.

    >>> keyed_rng("0|m|gender").integers(0, 10, 3).tolist() == keyed_rng("0|m|gender").integers(0, 10, 3).tolist()
    True
    """
    return np.random.default_rng(int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little"))


def bootstrap_means(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``n_boot`` resamples (with replacement) of ``x``.

    >>> bootstrap_means(np.array([2.0, 2.0]), 3, np.random.default_rng(0)).tolist()
    [2.0, 2.0, 2.0]
    """
    means: np.ndarray = x[rng.integers(0, len(x), (n_boot, len(x)))].mean(axis=1)
    return means


def percentile_interval(draws: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of bootstrap draws.

    >>> percentile_interval(np.array([3.0, 1.0, 2.0, 5.0, 4.0]), 0.5)
    (2.0, 4.0)
    """
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha])
    return float(lo), float(hi)


def draw_counts(idx: np.ndarray, k: int) -> np.ndarray:
    """How often each of ``k`` units occurs in each bootstrap draw (last axis = the draws).

    >>> draw_counts(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist()
    [[2.0, 0.0, 1.0], [0.0, 1.0, 2.0]]
    """
    idx = np.asarray(idx).astype(np.int64)
    lead = idx.shape[:-1]
    flat = idx.reshape(-1, idx.shape[-1])
    rows = np.arange(flat.shape[0], dtype=np.int64)[:, None] * k
    counts = np.bincount((flat + rows).ravel(), minlength=flat.shape[0] * k)
    return counts.reshape(*lead, k).astype(np.float64)


def jackknife_t_interval(theta: float, leave_one_out: np.ndarray, level: float = 0.95, *,
                         log: bool = False) -> tuple[float, float]:
    """Delete-one jackknife interval: the jackknife bias-corrected estimate
    n theta - (n - 1) mean(leave-one-out) -/+ t(n-1) x the jackknife standard error, on the log
    scale when ``log`` (every value must then be > 0). With few units it covers better than
    bootstrap percentile/BCa intervals, which see only the spread of the units at hand, and the
    bias correction matters for a variance of few units, which runs low (docs/holistic-generation.md).

    Leave-one-out values 1, 2, 4 of theta = 2: centre 3*2 - 2*(7/3) = 4/3, SE = sqrt(2/3 * 14/3)
    = 1.7638, t(2) = 4.3027, so 4/3 -/+ 7.5893:

    >>> [round(x, 4) for x in jackknife_t_interval(2.0, np.array([1.0, 2.0, 4.0]))]
    [-6.2558, 8.9225]
    """
    from scipy.stats import t

    g = np.log(leave_one_out) if log else np.asarray(leave_one_out, dtype=np.float64)
    n = len(g)
    centre = n * (float(np.log(theta)) if log else float(theta)) - (n - 1) * float(g.mean())
    se = float(np.sqrt((n - 1) / n * np.sum((g - g.mean()) ** 2)))
    q = float(t.ppf(0.5 + level / 2, n - 1))
    lo, hi = centre - q * se, centre + q * se
    return (float(np.exp(lo)), float(np.exp(hi))) if log else (lo, hi)
