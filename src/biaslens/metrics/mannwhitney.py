"""Vectorized all-pairs Mann-Whitney U test, bit-compatible with scipy.

The Likelihood Bias metric (HolisticBias, paper 2.3.2) runs one two-sided Mann-Whitney U
test for every unordered pair of descriptors inside an (axis, template) block: up to
~150 descriptors, i.e. ~11,000 pairs per block and 571,584 pairs per full v1.0 run.
Calling :func:`scipy.stats.mannwhitneyu` once per pair is slow, so this module computes
all pairs of a block at once:

* The pooled values of the block are mapped to their distinct values (``np.unique``) and a
  count matrix ``C`` (descriptor x distinct value) is built.
* ``G = cumsum(C) - C / 2`` gives, for every descriptor ``b`` and value ``v``, the number
  of ``b``'s values strictly below ``v`` plus half of those equal to ``v``. Summing
  ``G[b, v(i)]`` over the samples ``i`` of descriptor ``a`` is exactly ``U1(a, b)`` (ties
  count one half, which is what average ranks give). This costs O(D x M) per block instead
  of the O(D^2 x M) of a dense indicator product.
* The tie term ``sum(t^3 - t)`` of a pooled pair is
  ``T_a + T_b + 3 * sum_v (c_a^2 c_b + c_a c_b^2)``, a small product over the (rare)
  values that occur more than once in the block.

All these quantities are small integers or half-integers, so they are exact in float64,
and the p-value is then computed with the same float operations, in the same order, as
scipy 1.17's ``_get_mwu_z``; results are identical to scipy bit for bit in practice (the
tests check 1e-12 relative). For any pair where ``method='auto'`` makes scipy use the
exact distribution (a sample of size <= 8 and no ties in the pooled pair) scipy itself is
called for that pair, so results always equal ``scipy.stats.mannwhitneyu(x, y)`` with its
defaults (two-sided, ``use_continuity=True``, ``method='auto'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

__all__ = ["PairwiseMannWhitney", "pairwise_mannwhitney"]

# scipy's 'auto' rule: asymptotic when both samples are larger than this, or with ties.
_EXACT_MAX_N = 8


@dataclass(frozen=True)
class PairwiseMannWhitney:
    """All-pairs Mann-Whitney U results for one block of samples.

    Pairs are listed in ``itertools.combinations(range(n_groups), 2)`` order, i.e. the
    order of ``np.triu_indices(n_groups, 1)``. Sample ``i`` is always the first sample
    ("x" in scipy's terms) and ``j`` the second.

    Attributes:
        i: Index of the first sample of each pair.
        j: Index of the second sample of each pair (``j > i``).
        n_0: Size of sample ``i``.
        n_1: Size of sample ``j``.
        u: Mann-Whitney U of the first sample (scipy's ``statistic``): the number of
            (x, y) pairs with x > y, ties counting 1/2.
        p_value: Two-sided p-value, identical to ``scipy.stats.mannwhitneyu`` defaults.
        rank_biserial: ``2 * u / (n_0 * n_1) - 1`` in [-1, 1]; positive when the first
            sample tends to have *larger* values than the second (for perplexities: the
            first descriptor is less likely under the model).
        exact: True where scipy's exact null distribution was used (scipy 'auto' rule:
            a sample of size <= 8 and no ties); False for the normal approximation.
    """

    i: np.ndarray
    j: np.ndarray
    n_0: np.ndarray
    n_1: np.ndarray
    u: np.ndarray
    p_value: np.ndarray
    rank_biserial: np.ndarray
    exact: np.ndarray

    def __len__(self) -> int:
        """Number of pairs."""
        return int(self.i.shape[0])


def _asymptotic_p(u1: np.ndarray, n1: np.ndarray, n2: np.ndarray, tie_term: np.ndarray) -> np.ndarray:
    """Two-sided continuity-corrected normal p-value, same float ops as scipy 1.17."""
    # Keep the operation order of scipy.stats._mannwhitneyu._get_mwu_z so results match
    # to the last bit: n1*n2/12 is evaluated first, then multiplied by the bracket.
    n1n2 = n1 * n2
    u2 = n1n2 - u1
    u = np.maximum(u1, u2)
    mu = n1n2 / 2
    n = n1 + n2
    s = np.sqrt(n1n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    numerator = u - mu
    numerator -= 0.5
    # sigma == 0 only when every pooled value is equal: z = -inf, p = 2 -> clipped to 1,
    # exactly as scipy does.
    with np.errstate(divide="ignore", invalid="ignore"):
        z = numerator / s
    p = special.ndtr(-z)
    p *= 2
    clipped: np.ndarray = np.clip(p, 0.0, 1.0)
    return clipped


def block_pairs(values: np.ndarray, sizes: np.ndarray) -> PairwiseMannWhitney:
    """All pairs for samples stored contiguously in ``values`` (group g has sizes[g])."""
    d = sizes.shape[0]
    starts = np.zeros(d, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    group_of = np.repeat(np.arange(d, dtype=np.int64), sizes)

    uniq, inv = np.unique(values, return_inverse=True)
    inv = inv.reshape(-1)
    nv = uniq.shape[0]
    counts = np.bincount(group_of * nv + inv, minlength=d * nv).reshape(d, nv).astype(np.float64)

    # G[b, v] = #(b's values < v) + #(b's values == v) / 2 (exact in float64).
    g = np.cumsum(counts, axis=1)
    g -= 0.5 * counts
    # s[b, a] = sum over samples of a of G[b, value] = U1 of (a as x, b as y).
    s = np.add.reduceat(g[:, inv], starts, axis=1)

    ii, jj = np.triu_indices(d, 1)
    u1 = s[jj, ii]

    # Tie term of the pooled pair, from the values that occur >= 2 times in the block.
    tied = counts.sum(axis=0) >= 2
    if tied.any():
        ct = counts[:, tied]
        t_own = (ct**3 - ct).sum(axis=1)
        cross = (ct**2) @ ct.T  # cross[a, b] = sum_v c_a(v)^2 c_b(v)
        tie_term = t_own[ii] + t_own[jj] + 3.0 * (cross[ii, jj] + cross[jj, ii])
    else:
        tie_term = np.zeros(ii.shape[0], dtype=np.float64)

    n1 = sizes[ii].astype(np.float64)
    n2 = sizes[jj].astype(np.float64)
    p = _asymptotic_p(u1, n1, n2, tie_term)

    # scipy 'auto' picks the exact distribution for small samples without ties: defer
    # to scipy for those (rare) pairs so results are always identical.
    exact = ((n1 <= _EXACT_MAX_N) | (n2 <= _EXACT_MAX_N)) & (tie_term == 0)
    if exact.any():
        for k in np.flatnonzero(exact):
            a, b = ii[k], jj[k]
            x = values[starts[a] : starts[a] + sizes[a]]
            y = values[starts[b] : starts[b] + sizes[b]]
            res = stats.mannwhitneyu(x, y)
            p[k] = float(res.pvalue)

    rank_biserial = 2.0 * u1 / (n1 * n2) - 1.0
    return PairwiseMannWhitney(
        i=ii,
        j=jj,
        n_0=sizes[ii].astype(np.int64),
        n_1=sizes[jj].astype(np.int64),
        u=u1,
        p_value=p,
        rank_biserial=rank_biserial,
        exact=exact,
    )


def pairwise_mannwhitney(
    samples: Sequence[np.ndarray] | np.ndarray,
    groups: np.ndarray | None = None,
    *,
    n_groups: int | None = None,
) -> PairwiseMannWhitney:
    """Two-sided Mann-Whitney U test for every unordered pair of samples, vectorized.

    Equivalent to calling ``scipy.stats.mannwhitneyu(x_i, x_j)`` (two-sided, continuity
    correction, ``method='auto'``) for each ``(i, j)`` in
    ``itertools.combinations(range(n_groups), 2)``, but computed for all pairs at once.

    Args:
        samples: Either a sequence of 1-D samples (one per group), or, when ``groups`` is
            given, one flat 1-D array of values.
        groups: Optional integer group code (0..n_groups-1) of each value in ``samples``.
        n_groups: Number of groups when ``groups`` is given (default ``max(groups) + 1``).

    Returns:
        A :class:`PairwiseMannWhitney` with one entry per pair.

    Raises:
        ValueError: If a sample is empty or contains NaN (scipy refuses both too).

    Example:
        >>> r = pairwise_mannwhitney([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [2.5, 7.0, 0.5]])
        >>> r.i.tolist(), r.j.tolist()
        ([0, 0, 1], [1, 2, 2])
        >>> r.u.tolist()
        [0.0, 4.0, 6.0]
        >>> r.rank_biserial.tolist()[0]
        -1.0
        >>> round(float(r.p_value[0]), 4)  # exact method (n <= 8, no ties), like scipy
        0.1
    """
    if groups is None:
        arrays = [np.asarray(x, dtype=np.float64).reshape(-1) for x in samples]
        sizes = np.array([a.shape[0] for a in arrays], dtype=np.int64)
        values = np.concatenate(arrays) if arrays else np.zeros(0)
    else:
        flat = np.asarray(samples, dtype=np.float64).reshape(-1)
        codes = np.asarray(groups).reshape(-1)
        if codes.shape[0] != flat.shape[0]:
            raise ValueError("`samples` and `groups` must have the same length")
        if codes.size and (codes.min() < 0 or not np.issubdtype(codes.dtype, np.integer)):
            raise ValueError("`groups` must hold non-negative integer codes")
        ng = int(codes.max()) + 1 if n_groups is None and codes.size else int(n_groups or 0)
        order = np.argsort(codes, kind="stable")
        values = flat[order]
        sizes = np.bincount(codes, minlength=ng).astype(np.int64)
        if sizes.shape[0] > ng:
            raise ValueError("a group code is >= n_groups")
    if np.isnan(values).any():
        raise ValueError("samples must not contain NaN")
    if (sizes == 0).any():
        raise ValueError("every sample must be non-empty")
    if sizes.shape[0] < 2:
        empty_i = np.zeros(0, dtype=np.int64)
        empty_f = np.zeros(0, dtype=np.float64)
        return PairwiseMannWhitney(
            empty_i, empty_i, empty_i, empty_i, empty_f, empty_f, empty_f, np.zeros(0, dtype=bool)
        )
    return block_pairs(values, sizes)
