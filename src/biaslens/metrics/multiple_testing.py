"""Multiple-comparison corrections returning adjusted p-values.

The HolisticBias reference counts a pair as significant when its raw p < 0.05, with no
correction, although a full run tests 571,584 pairs. biaslens reports that figure for
comparison with the paper, plus Benjamini-Hochberg (false discovery rate) and Holm
(family-wise error rate) adjusted versions.

NaN p-values are left out of the family (they do not count in ``m``) and stay NaN.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["benjamini_hochberg", "holm"]


def _adjusted(p: ArrayLike, adjust_sorted: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``adjust_sorted`` (ascending p-values -> their adjusted values, same order) applied to the
    non-NaN values of ``p``; NaN stays NaN and does not count in the family."""
    arr = np.asarray(p, dtype=np.float64)
    flat = arr.reshape(-1)
    if np.any((flat < 0) | (flat > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    ok = np.flatnonzero(~np.isnan(flat))
    out = np.full(flat.shape, np.nan)
    if ok.shape[0]:
        vals = flat[ok]
        order = np.argsort(vals, kind="stable")
        res = np.empty(ok.shape[0])
        res[order] = adjust_sorted(vals[order])
        out[ok] = res
    return out.reshape(arr.shape)


def benjamini_hochberg(p: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up, controls the FDR).

    ``p_adj[(k)] = min_{j >= k} min(1, m * p_(j) / j)`` for the ascending order
    ``p_(1) <= ... <= p_(m)``; identical to ``scipy.stats.false_discovery_control(p)``
    and R's ``p.adjust(p, "BH")``. Reject at level q where ``p_adj < q``.

    Args:
        p: p-values (any shape); NaNs are ignored and returned as NaN.

    Returns:
        Adjusted p-values, same shape as ``p``.

    Example:
        >>> import numpy as np
        >>> np.round(benjamini_hochberg([0.01, 0.04, 0.03, 0.20]), 4).tolist()
        [0.04, 0.0533, 0.0533, 0.2]
    """
    def step_up(v: np.ndarray) -> np.ndarray:
        m = v.shape[0]
        adj = v * (m / np.arange(1, m + 1, dtype=np.float64))
        # Step-up: each adjusted value is the smallest one at its rank or above.
        return np.clip(np.minimum.accumulate(adj[::-1])[::-1], 0.0, 1.0)

    return _adjusted(p, step_up)


def holm(p: ArrayLike) -> np.ndarray:
    """Holm step-down adjusted p-values (controls the family-wise error rate).

    ``p_adj[(k)] = max_{j <= k} min(1, (m - j + 1) * p_(j))`` for the ascending order
    ``p_(1) <= ... <= p_(m)`` (R's ``p.adjust(p, "holm")``, statsmodels' ``holm``). Takes
    and returns what :func:`benjamini_hochberg` does; on its example:

    >>> import numpy as np
    >>> np.round(holm([0.01, 0.04, 0.03, 0.20]), 4).tolist()
    [0.04, 0.09, 0.09, 0.2]
    """
    def step_down(v: np.ndarray) -> np.ndarray:
        adj = np.minimum(v * np.arange(v.shape[0], 0, -1, dtype=np.float64), 1.0)
        # Step-down: an adjusted value can never be smaller than one before it.
        return np.maximum.accumulate(adj)

    return _adjusted(p, step_down)
