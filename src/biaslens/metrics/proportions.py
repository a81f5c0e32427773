"""Intervals for a binomial proportion (general statistics shared by the methods and the scorer cards)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def wilson_interval(k: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion ``k / n``.

    Valid for independent trials only; Likelihood Bias pairs share descriptors, so its
    intervals come from :func:`descriptor_bootstrap` (this one under-covers there).

    Args:
        k: Successes.
        n: Trials (> 0).
        confidence: Two-sided confidence level.

    Returns:
        ``(low, high)`` arrays.

    Example:
        >>> lo, hi = wilson_interval(np.array([5]), np.array([10]))
        >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
        (0.2366, 0.7634)
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = stats.norm.ppf(0.5 + confidence / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        phat = k / n
        denom = 1 + z**2 / n
        center = (phat + z**2 / (2 * n)) / denom
        half = z / denom * np.sqrt(phat * (1 - phat) / n + z**2 / (4 * n**2))
    return np.clip(center - half, 0.0, 1.0), np.clip(center + half, 0.0, 1.0)

