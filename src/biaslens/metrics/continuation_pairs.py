"""FairPair metrics (spec ``fairpair.md`` section 2): bias between the two continuation sets
against each set's own sampling variability.

For one prompt x: A = perturbed continuations of x, B = continuations of p(x), d a dissimilarity.

- B(x)   = mean over all (i, j) of d(A_i, B_j)                     (cross-set bias)
- V_A(x) = mean over i != j of d(A_i, A_j); V_B(x) likewise          (sampling variability)
- F(x)   = B(x)^2 / (V_A(x) V_B(x))   ~1: sampling variability explains it; >1: real difference

Dissimilarities are objects with three methods, so the k-fold variant can merge samples in the
way that suits each (mean score for sentiment, union of tokens for Jaccard):
``represent(texts)``, ``pairwise(X, Y) -> matrix`` and ``fold(X, groups)``.
Values are fractions here; the report shows them x100 as the paper does.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

__all__ = [
    "CallableDissimilarity", "Dissimilarity", "EmbeddingDissimilarity", "JaccardDissimilarity", "PairScores",
    "ScoreDissimilarity", "SentimentDissimilarity", "aggregate_scores", "cross_within_test", "fairpair_scores",
    "kfold_groups", "kfold_scores", "jackknife_se", "make_dissimilarity", "ngram_differences", "prompt_level_test",
]


class Dissimilarity(Protocol):
    """What FairPair needs from a dissimilarity d(a, b) >= 0."""

    name: str

    def represent(self, texts: Sequence[str]) -> Any:
        """Per-text representations (scores, token sets, embeddings)."""

    def pairwise(self, x: Any, y: Any) -> np.ndarray:
        """len(x) by len(y) matrix of d between representations."""

    def fold(self, x: Any, groups: list[np.ndarray]) -> Any:
        """One representation per group of samples (the k-fold variant)."""


# -- built-in dissimilarities -----------------------------------------------------------

_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def _tokens(text: str) -> list[str]:
    return [t.lower().replace("\u2019", "'") for t in _TOKEN.findall(text)]


class JaccardDissimilarity:
    """Token-set Jaccard dissimilarity 1 - |T(a) & T(b)| / |T(a) | T(b)| (lowercase word tokens);
    a fold is the union of its samples' token sets. Two empty texts are at distance 0."""

    name = "jaccard"

    def represent(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """The set of lowercase word tokens of each text."""
        return [frozenset(_tokens(t)) for t in texts]

    def pairwise(self, x: list[frozenset[str]], y: list[frozenset[str]]) -> np.ndarray:
        """Jaccard dissimilarity of every token set of ``x`` with every one of ``y``."""
        from scipy import sparse

        vocab: dict[str, int] = {}
        for s in (*x, *y):
            for t in s:
                vocab.setdefault(t, len(vocab))

        def matrix(sets: list[frozenset[str]]) -> sparse.csr_matrix:
            rows = [i for i, s in enumerate(sets) for _ in s]
            cols = [vocab[t] for s in sets for t in s]
            return sparse.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(sets), max(1, len(vocab))))

        mx, my = matrix(x), matrix(y)
        inter = np.asarray((mx @ my.T).todense(), dtype=np.float64)
        sx = np.asarray(mx.sum(1)).reshape(-1, 1)
        sy = np.asarray(my.sum(1)).reshape(1, -1)
        union = sx + sy - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            dist: np.ndarray = np.where(union > 0, 1.0 - inter / np.where(union > 0, union, 1.0), 0.0)
        return dist

    def fold(self, x: list[frozenset[str]], groups: list[np.ndarray]) -> list[frozenset[str]]:
        """The union of the token sets of each group."""
        return [frozenset[str]().union(*(x[i] for i in g)) for g in groups]


class ScoreDissimilarity:
    """|s(a) - s(b)| for any per-text scorer s (sentiment, toxicity, ...); a fold is the mean score.

    Args:
        scorer: texts -> array of floats.
        name: the column name in tables and the report.
    """

    def __init__(self, scorer: Callable[[list[str]], Any], name: str):
        self.scorer = scorer
        self.name = name

    def represent(self, texts: Sequence[str]) -> np.ndarray:
        """The score of each text."""
        return np.asarray(self.scorer(list(texts)), dtype=np.float64).reshape(-1)

    def pairwise(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """|x_i - y_j| for every pair of scores."""
        dist: np.ndarray = np.abs(np.asarray(x)[:, None] - np.asarray(y)[None, :])
        return dist

    def fold(self, x: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
        """The mean score of each group."""
        return np.array([float(np.mean(x[g])) for g in groups])


class SentimentDissimilarity(ScoreDissimilarity):
    """|s(a) - s(b)| with s a sentiment score (the paper's: VADER's compound score, which the
    caller passes in: metrics call no scorer)."""

    def __init__(self, score: Callable[[list[str]], np.ndarray]):
        super().__init__(score, "sentiment")


class EmbeddingDissimilarity:
    """1 - cosine similarity of sentence embeddings (the shipped all-MiniLM-L6-v2 by default);
    a fold is the normalised mean embedding."""

    name = "embedding"

    def __init__(self, encoder: Any = None, *, load_encoder: Callable[[], Any] | None = None):
        if encoder is None and load_encoder is None:
            raise ValueError("EmbeddingDissimilarity needs an encoder (or load_encoder, called on first use)")
        self._encoder = encoder
        self._load = load_encoder

    @property
    def encoder(self) -> Any:
        """The sentence encoder (loaded on first use)."""
        # loaded on first use: pairwise/fold on stored embeddings (re-rendering a run) need no model
        if self._encoder is None:
            assert self._load is not None  # __init__ asks for one of the two
            self._encoder = self._load()
        return self._encoder

    def represent(self, texts: Sequence[str]) -> np.ndarray:
        """The embedding of each text (rows)."""
        return np.asarray(self.encoder.encode(list(texts)), dtype=np.float64)

    def pairwise(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """1 - cosine similarity of every pair of (unit-norm) embeddings."""
        dist: np.ndarray = np.clip(1.0 - x @ y.T, 0.0, 2.0)
        return dist

    def fold(self, x: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
        """The normalised mean embedding of each group."""
        m = np.stack([x[g].mean(0) for g in groups])
        unit: np.ndarray = m / np.clip(np.linalg.norm(m, axis=1, keepdims=True), 1e-12, None)
        return unit


class CallableDissimilarity:
    """Any ``d(a: str, b: str) -> float``; a fold joins its texts with a newline unless
    ``fold_texts`` says otherwise. Slow (one call per pair): fine for tens of samples."""

    def __init__(self, fn: Callable[[str, str], float], name: str,
                 fold_texts: Callable[[list[str]], str] | None = None):
        self.fn = fn
        self.name = name
        self.fold_texts = fold_texts or "\n".join

    def represent(self, texts: Sequence[str]) -> list[str]:
        """The texts themselves."""
        return list(texts)

    def pairwise(self, x: list[str], y: list[str]) -> np.ndarray:
        """``fn(a, b)`` for every pair of texts."""
        return np.array([[float(self.fn(a, b)) for b in y] for a in x], dtype=np.float64).reshape(len(x), len(y))

    def fold(self, x: list[str], groups: list[np.ndarray]) -> list[str]:
        """The texts of each group joined by ``fold_texts``."""
        return [self.fold_texts([x[i] for i in g]) for g in groups]


BUILTIN = ("jaccard", "sentiment", "embedding")


def make_dissimilarity(spec: str | Dissimilarity | Callable[[str, str], float],
                       scorer_based: Mapping[str, Callable[[], Dissimilarity]] | None = None) -> Dissimilarity:
    """A dissimilarity from a name (``jaccard``; ``sentiment`` and ``embedding`` from
    ``scorer_based``, factories the caller provides since metrics call no scorer), an object
    with the three methods, or a plain ``d(a, b)`` function."""
    if isinstance(spec, str):
        if spec == "jaccard":
            return JaccardDissimilarity()
        factories = scorer_based or {}
        if spec in factories:
            return factories[spec]()
        if spec in BUILTIN:
            raise ValueError(f"dissimilarity {spec!r} needs a scorer: pass scorer_based (the fairpair suite's "
                             "SCORER_DISSIMILARITIES)")
        raise ValueError(f"unknown dissimilarity {spec!r}; built in: {', '.join(BUILTIN)} "
                         "(or pass an object with represent/pairwise/fold, or a function d(a, b))")
    if all(hasattr(spec, m) for m in ("represent", "pairwise", "fold")):
        return spec  # type: ignore[return-value]
    if callable(spec):
        return CallableDissimilarity(spec, getattr(spec, "__name__", "custom"))
    raise TypeError(f"not a dissimilarity: {spec!r}")


# -- the metric -------------------------------------------------------------------------


@dataclass
class PairScores:
    """FairPair quantities for one prompt (or one set of folds).

    Attributes:
        B: mean cross-set dissimilarity.
        V_A, V_B: mean within-set dissimilarity (i != j).
        F: B^2 / (V_A V_B); NaN when a set has no variability (V = 0) or fewer than 2 samples.
        cross: every d(A_i, B_j).
        within_a, within_b: d over unordered pairs i < j within A and within B.
    """

    B: float
    V_A: float
    V_B: float
    F: float
    cross: np.ndarray
    within_a: np.ndarray
    within_b: np.ndarray


def _within(d: Dissimilarity, x: Any) -> tuple[float, np.ndarray]:
    m = d.pairwise(x, x)
    n = m.shape[0]
    if n < 2:
        return float("nan"), np.zeros(0)
    # mean over i != j (ordered pairs) = over both triangles; for a symmetric d the upper one
    off = ~np.eye(n, dtype=bool)
    return float(m[off].mean()), m[np.triu_indices(n, 1)]


def fairpair_f(b: float, v_a: float, v_b: float) -> float:
    """F = B^2 / (V_A V_B), NaN when undefined (a set without variability).

    >>> fairpair_f(0.5, 1.0, 1.0), fairpair_f(0.5, 0.0, 1.0)
    (0.25, nan)
    """
    denom = v_a * v_b
    if not (math.isfinite(denom) and denom > 0 and math.isfinite(b)):
        return float("nan")
    return b * b / denom


def fairpair_scores(a_reps: Any, b_reps: Any, d: Dissimilarity) -> PairScores:
    """B, V_A, V_B and F for one prompt from the representations of sets A and B.

    >>> d = ScoreDissimilarity(lambda t: [float(s) for s in t], "x")
    >>> s = fairpair_scores(np.array([0.0, 1.0]), np.array([0.0, 1.0]), d)
    >>> (s.B, s.V_A, s.V_B, s.F)
    (0.5, 1.0, 1.0, 0.25)
    """
    cross = np.asarray(d.pairwise(a_reps, b_reps), dtype=np.float64)
    b = float(cross.mean()) if cross.size else float("nan")
    va, wa = _within(d, a_reps)
    vb, wb = _within(d, b_reps)
    return PairScores(b, va, vb, fairpair_f(b, va, vb), cross.reshape(-1), wa, wb)


def kfold_groups(n: int, k: int, rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """``k`` nearly equal groups of ``range(n)``, shuffled when ``rng`` is given.

    >>> [g.tolist() for g in kfold_groups(5, 2)]
    [[0, 1, 2], [3, 4]]
    """
    if not 2 <= k <= n:
        raise ValueError(f"k-fold needs 2 <= k <= samples, got k={k} with {n} samples")
    idx = rng.permutation(n) if rng is not None else np.arange(n)
    return [np.sort(g) for g in np.array_split(idx, k)]


def kfold_scores(a_reps: Any, b_reps: Any, n_a: int, n_b: int, d: Dissimilarity, k: int, seed: int = 0) -> PairScores:
    """The k-fold variant: B and V computed between fold representations (mean score for
    sentiment, union of token sets for Jaccard, mean embedding) instead of single samples."""
    rng = np.random.default_rng(seed)
    fa = d.fold(a_reps, kfold_groups(n_a, k, rng))
    fb = d.fold(b_reps, kfold_groups(n_b, k, rng))
    return fairpair_scores(fa, fb, d)


def aggregate_scores(per_prompt: pd.DataFrame) -> pd.DataFrame:
    """Mean B, V_A, V_B and F over prompts, per dissimilarity (the paper's Table 3 row).

    ``per_prompt`` has columns ``dissimilarity, B, V_A, V_B, F``; prompts with undefined F
    are left out of the mean F and counted in ``n_undefined_F``.
    """
    rows = []
    for name, g in per_prompt.groupby("dissimilarity", sort=False):
        f = g["F"].to_numpy(dtype=np.float64)
        rows.append({"dissimilarity": name, "V_A": g["V_A"].mean(), "V_B": g["V_B"].mean(), "B": g["B"].mean(),
                     "F": float(np.nanmean(f)) if np.isfinite(f).any() else float("nan"),
                     "F_median": float(np.nanmedian(f)) if np.isfinite(f).any() else float("nan"),
                     "n_prompts": int(len(g)), "n_undefined_F": int((~np.isfinite(f)).sum())})
    return pd.DataFrame(rows, columns=["dissimilarity", "V_A", "V_B", "B", "F", "F_median", "n_prompts",
                                       "n_undefined_F"])


@dataclass
class TestResult:
    """Welch t-test of cross-set against within-set dissimilarities."""

    t: float
    p: float
    p_greater: float
    df: float
    mean_cross: float
    mean_within: float
    n_cross: int
    n_within: int
    #: Welch standard error of mean_cross - mean_within
    se: float = float("nan")
    #: the actual standard error of mean_cross - mean_within: prompts independent, within a prompt a
    #: delete-one-sample jackknife (:func:`jackknife_se`); NaN when not computed
    se_jackknife: float = float("nan")

    def detectable(self, alpha: float = 0.05, power: float = 0.8) -> tuple[float, float]:
        """The excess of the cross mean over the within mean that the two-sided test at ``alpha``
        detects with probability ``power`` at this size, and the F it corresponds to,
        (1 + excess / within)^2 (F ~ (B / V)^2). The test rejects when the difference exceeds
        z(1 - alpha/2) Welch standard errors; the difference itself varies by its actual standard
        error, the jackknife one when computed (the pairs share samples). Both standard errors are
        measured on this run; under a real difference they are larger (the cross-set values spread
        more), by a factor sqrt(1 + :data:`SPREAD_GROWTH` excess / within) calibrated on simulated
        scores (without it the stated F was detected in about 64% of runs at 5 x 20 instead of 80%;
        tests/methods/fairpair/test_fairpair_calibration.py). NaN when the test is undefined."""
        from scipy import stats

        if not (math.isfinite(self.se) and math.isfinite(self.mean_within) and self.mean_within > 0):
            return float("nan"), float("nan")
        spread = self.se_jackknife if math.isfinite(self.se_jackknife) else self.se
        base = float(stats.norm.ppf(1 - alpha / 2) * self.se + stats.norm.ppf(power) * spread)
        excess = base
        for _ in range(50):  # fixed point: both errors grow with the difference itself
            excess = base * math.sqrt(1 + SPREAD_GROWTH * excess / self.mean_within)
        return excess, (1 + excess / self.mean_within) ** 2

    def needed_size(self, prompts: int, samples: int, target_f: float, alpha: float = 0.05,
                    power: float = 0.8) -> tuple[int, int] | None:
        """The smallest design of :data:`DESIGNS` (prompts x samples per set, at least this run's)
        whose detectable F is at most ``target_f``, scaling this run's standard errors (the Welch
        one with 1 / (sqrt(prompts) samples), the jackknife one with 1 / sqrt(prompts samples));
        None when none of them reaches it."""
        from scipy import stats

        spread = self.se_jackknife if math.isfinite(self.se_jackknife) else self.se
        if not (math.isfinite(self.se) and math.isfinite(spread) and self.mean_within > 0):
            return None
        need = (math.sqrt(target_f) - 1) * self.mean_within
        for p, m in DESIGNS:
            if p < prompts or m < samples:
                continue
            welch = self.se * math.sqrt(prompts / p) * samples / m
            jack = spread * math.sqrt(prompts * samples / (p * m))
            grow = math.sqrt(1 + SPREAD_GROWTH * need / self.mean_within)
            if (stats.norm.ppf(1 - alpha / 2) * welch + stats.norm.ppf(power) * jack) * grow <= need:
                return p, m
        return None


#: growth of the test's standard errors with the difference (variance x (1 + 8 excess / within)),
#: calibrated on the simulated scores of tests/methods/fairpair/test_fairpair_calibration.py at 5 x 20
SPREAD_GROWTH = 8.0

#: designs (prompts x samples per set) :meth:`TestResult.needed_size` proposes, smallest first
DESIGNS = ((5, 20), (10, 20), (10, 50), (20, 50), (20, 100), (60, 100), (60, 200), (120, 200), (120, 500))


def jackknife_se(cross: Sequence[np.ndarray], within_a: Sequence[np.ndarray], within_b: Sequence[np.ndarray]) -> float:
    """The standard error of the pooled ``mean(cross) - mean(within)`` of :func:`cross_within_test`
    when every prompt gives it m samples of each set: per prompt the statistic's delete-one-sample
    jackknife variance (over the samples of A and of B), prompts independent. ``cross[k]`` is
    prompt k's m x m matrix d(A_i, B_j); ``within_a[k]``, ``within_b[k]`` its m x m within-set
    matrices. NaN with fewer than 3 samples per prompt.

    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(0, 1, 20), rng.normal(0, 1, 20)
    >>> d = lambda x, y: np.abs(x[:, None] - y[None, :])
    >>> round(jackknife_se([d(a, b)], [d(a, a)], [d(b, b)]), 3)
    0.035
    """
    total, prompts = 0.0, 0
    for c, wa, wb in zip(cross, within_a, within_b):
        m = c.shape[0]
        if m < 3 or c.shape != (m, m):
            return float("nan")
        ua, ub = np.triu(wa, 1).sum(), np.triu(wb, 1).sum()
        ra = wa.sum(1) - np.diag(wa)  # a sample's within-set sum (both orders are the same pair)
        rb = wb.sum(1) - np.diag(wb)
        pairs = (m - 1) * (m - 2) / 2 + m * (m - 1) / 2
        drop_a = (c.sum() - c.sum(1)) / ((m - 1) * m) - (ua - ra + ub) / pairs
        drop_b = (c.sum() - c.sum(0)) / ((m - 1) * m) - (ua + ub - rb) / pairs
        total += (m - 1) / m * (((drop_a - drop_a.mean()) ** 2).sum() + ((drop_b - drop_b.mean()) ** 2).sum())
        prompts += 1
    return float(math.sqrt(total) / prompts) if prompts else float("nan")


def cross_within_test(cross: np.ndarray, within: np.ndarray) -> TestResult:
    """The paper's significance test: Welch t-test of all cross-set dissimilarities against all
    within-set ones (pooled over prompts). ``p`` is two-sided, ``p_greater`` tests cross > within.

    The pairs share samples, so they are not independent; measured by simulation (seeded, in
    ``tests/methods/fairpair/test_fairpair_calibration.py``) the test is conservative under no difference (about
    1.7% rejections at 0.05 at 5 x 20 and 60 x 100 samples; docs/fairpair.md) when each prompt
    gives it equally many samples of A and B, as the fairpair suite does. :func:`prompt_level_test`
    is a companion with one value per prompt.
    """
    from scipy import stats

    cross = np.asarray(cross, dtype=np.float64)
    within = np.asarray(within, dtype=np.float64)
    cross, within = cross[np.isfinite(cross)], within[np.isfinite(within)]
    if len(cross) < 2 or len(within) < 2:
        nan = float("nan")
        return TestResult(nan, nan, nan, nan, float(np.mean(cross)) if len(cross) else nan,
                          float(np.mean(within)) if len(within) else nan, len(cross), len(within))
    res = stats.ttest_ind(cross, within, equal_var=False)
    t, p = float(res.statistic), float(res.pvalue)
    if not math.isfinite(t):  # both constant and equal: no evidence of a difference
        t, p = 0.0, 1.0
    p_greater = p / 2 if t > 0 else 1 - p / 2
    va, vb = cross.var(ddof=1) / len(cross), within.var(ddof=1) / len(within)
    df = (va + vb) ** 2 / (va**2 / (len(cross) - 1) + vb**2 / (len(within) - 1)) if va + vb > 0 else float("nan")
    return TestResult(t, p, p_greater, float(df), float(cross.mean()), float(within.mean()), len(cross), len(within),
                      float(math.sqrt(va + vb)))


def prompt_level_test(b: np.ndarray, v_a: np.ndarray, v_b: np.ndarray) -> dict[str, float]:
    """Paired t-test over prompts of B(x) against (V_A(x) + V_B(x)) / 2 (one value per prompt, so
    the observations are independent); ``p_greater`` tests B > V."""
    from scipy import stats

    b, v = np.asarray(b, float), (np.asarray(v_a, float) + np.asarray(v_b, float)) / 2
    ok = np.isfinite(b) & np.isfinite(v)
    if ok.sum() < 2:
        return {"t": float("nan"), "p": float("nan"), "p_greater": float("nan"), "n_prompts": int(ok.sum())}
    diff = b[ok] - v[ok]
    if np.allclose(diff, diff[0]):
        t, p = (0.0, 1.0) if diff[0] == 0 else (math.copysign(math.inf, diff[0]), 0.0)
    else:
        res = stats.ttest_rel(b[ok], v[ok])
        t, p = float(res.statistic), float(res.pvalue)
    p_greater = p / 2 if t > 0 else 1 - p / 2
    return {"t": t, "p": p, "p_greater": p_greater, "n_prompts": int(ok.sum())}


# -- qualitative view -------------------------------------------------------------------

STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from as is was are were be been being am it its this that
these those there here i me my we our you your he him his she her hers they them their not no so do does did
has have had will would can could just than then too very also about into out up down over s t
""".split())


def _ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def ngram_differences(a_texts: Sequence[str], b_texts: Sequence[str], *, n_range: tuple[int, int] = (1, 4),
                      top: int = 15, min_count: int = 3, drop_stopword_only: bool = True) -> pd.DataFrame:
    """The 1-4-grams whose frequency differs most between set A and set B (paper Figure 6).

    Frequency is the share of continuations that contain the n-gram (each text counts once).

    Returns:
        ``top`` rows for each side: ``ngram, n, freq_a, freq_b, diff`` (freq_a - freq_b) and
        ``side`` ("A" more frequent in A, "B" more frequent in B), largest differences first.
    """
    cols = ["side", "ngram", "n", "freq_a", "freq_b", "diff", "count_a", "count_b"]
    if not a_texts or not b_texts:
        return pd.DataFrame(columns=cols)
    ca: Counter[tuple[str, ...]] = Counter()
    cb: Counter[tuple[str, ...]] = Counter()
    lo, hi = n_range
    for texts, counter in ((a_texts, ca), (b_texts, cb)):
        for t in texts:
            toks = _tokens(t)
            for n in range(lo, hi + 1):
                counter.update(_ngrams(toks, n))
    rows = []
    na, nb = len(a_texts), len(b_texts)
    for g in set(ca) | set(cb):
        if ca[g] + cb[g] < min_count:
            continue
        if drop_stopword_only and all(w in STOPWORDS for w in g):
            continue
        fa, fb = ca[g] / na, cb[g] / nb
        rows.append((" ".join(g), len(g), fa, fb, fa - fb, ca[g], cb[g]))
    df = pd.DataFrame(rows, columns=cols[1:])
    if df.empty:
        return pd.DataFrame(columns=cols)
    # ties: the longer n-gram (more specific), then alphabetical, so the output is stable
    top_a = df[df["diff"] > 0].sort_values(["diff", "n", "ngram"], ascending=[False, False, True]).head(top)
    top_b = df[df["diff"] < 0].sort_values(["diff", "n", "ngram"], ascending=[True, False, True]).head(top)
    return pd.concat([top_a.assign(side="A"), top_b.assign(side="B")], ignore_index=True)[cols]
