"""How well a judge (classifier) or a second annotator agrees with reference labels, with
figures that cannot flatter: chance-corrected headlines beside the baseline a trivial
classifier scores, per-class precision/recall with Wilson intervals, and item bootstraps.

- multi-class: balanced accuracy (mean per-class recall; the majority-class classifier scores
  exactly 1/K) and macro-F1, beside plain accuracy and the majority-class accuracy;
- binary scores: AUROC (baseline 0.5) and balanced accuracy at the threshold used (baseline 0.5);
- agreement: Cohen's kappa, unweighted or linearly weighted over ordered categories.

Intervals of the headlines are percentile bootstraps over items, resampled within each true
class (the class counts stay fixed, as balanced accuracy and AUROC condition on them).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from biaslens.metrics.likelihood_bias import wilson_interval
from biaslens.metrics.resampling import keyed_rng, percentile_interval

N_BOOT = 2000


def _codes(values: Iterable[Hashable], categories: Sequence[Hashable]) -> np.ndarray:
    index = {c: i for i, c in enumerate(categories)}
    try:
        return np.array([index[v] for v in values], dtype=np.int64)
    except KeyError as e:
        raise ValueError(f"label {e.args[0]!r} is not one of {list(categories)}") from None


def confusion(truth: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """(K, K) counts, rows = truth, columns = prediction (integer codes 0..K-1)."""
    return np.bincount(truth * k + pred, minlength=k * k).reshape(k, k)


def _confusions(truth: np.ndarray, pred: np.ndarray, k: int, idx: np.ndarray) -> np.ndarray:
    """(B, K, K) confusion matrices of the resamples ``idx`` (B, n)."""
    b = idx.shape[0]
    codes = (truth[idx] * k + pred[idx]) + (np.arange(b) * k * k)[:, None]
    return np.bincount(codes.ravel(), minlength=b * k * k).reshape(b, k, k)


def _balanced_accuracy(cm: np.ndarray) -> np.ndarray:
    """Mean recall over the classes present in the truth; works on (K, K) or (B, K, K)."""
    n_true = cm.sum(axis=-1)
    diag = np.diagonal(cm, axis1=-2, axis2=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rec = np.where(n_true > 0, diag / np.maximum(n_true, 1), np.nan)
    ba: np.ndarray = np.nanmean(rec, axis=-1)
    return ba


def _macro_f1(cm: np.ndarray) -> np.ndarray:
    """Mean F1 over the classes present in the truth or the predictions."""
    n_true, n_pred = cm.sum(axis=-1), cm.sum(axis=-2)
    diag = np.diagonal(cm, axis1=-2, axis2=-1)
    present = (n_true + n_pred) > 0
    f1 = np.where(present, 2 * diag / np.maximum(n_true + n_pred, 1), np.nan)
    mf1: np.ndarray = np.nanmean(f1, axis=-1)
    return mf1


def _stratified_indices(truth: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) resampled item indices, drawn with replacement within each true class."""
    cols = []
    for c in np.unique(truth):
        members = np.flatnonzero(truth == c)
        cols.append(members[rng.integers(0, len(members), (n_boot, len(members)))])
    return np.concatenate(cols, axis=1)


def per_class(truth: np.ndarray, pred: np.ndarray, categories: Sequence[Hashable]) -> dict[str, dict[str, Any]]:
    """Precision and recall of each class with 95% Wilson intervals and the counts behind them."""
    cm = confusion(truth, pred, len(categories))
    out: dict[str, dict[str, Any]] = {}
    for i, c in enumerate(categories):
        tp, n_true, n_pred = int(cm[i, i]), int(cm[i].sum()), int(cm[:, i].sum())
        (plo, phi), (rlo, rhi) = [(float(lo[0]), float(hi[0])) for lo, hi in
                                  (wilson_interval(np.array([tp]), np.array([max(n, 1)])) for n in (n_pred, n_true))]
        out[str(c)] = {"precision": tp / n_pred if n_pred else None,
                       "precision_ci": [plo, phi] if n_pred else None,
                       "recall": tp / n_true if n_true else None, "recall_ci": [rlo, rhi] if n_true else None,
                       "n_true": n_true, "n_predicted": n_pred, "n_correct": tp}
    return out


def multiclass_skill(truth: Iterable[Hashable], pred: Iterable[Hashable], categories: Iterable[Hashable], *,
                     key: str = "skill", n_boot: int = N_BOOT) -> dict[str, Any]:
    """Balanced accuracy (headline; baseline 1/K, K = classes present in the truth) and macro-F1
    (baseline: the majority-class classifier's macro-F1), each with a stratified item-bootstrap
    95% interval; plain accuracy vs the majority-class accuracy; per-class precision/recall.

    >>> r = multiclass_skill(["a", "a", "a", "b"], ["a", "a", "b", "b"], ["a", "b"], n_boot=10)
    >>> round(r["balanced_accuracy"], 4), r["baseline"], r["accuracy"], r["majority_accuracy"]
    (0.8333, 0.5, 0.75, 0.75)
    """
    cats = list(categories)
    t, p = _codes(truth, cats), _codes(pred, cats)
    k = len(cats)
    cm = confusion(t, p, k)
    present = np.flatnonzero(cm.sum(axis=1) > 0)
    counts = cm.sum(axis=1)
    majority = int(np.argmax(counts))
    maj_cm = confusion(t, np.full_like(t, majority), k)
    idx = _stratified_indices(t, n_boot, keyed_rng(f"{key}|multiclass"))
    cms = _confusions(t, p, k, idx)
    ba, f1 = float(_balanced_accuracy(cm)), float(_macro_f1(cm))
    return {"headline": "balanced accuracy", "value": ba, "ci": list(percentile_interval(_balanced_accuracy(cms))),
            "baseline": 1 / len(present), "baseline_what": f"1/K with K={len(present)} label classes: what always giving the "
                                                         "most common label scores",
            "balanced_accuracy": ba, "macro_f1": f1, "macro_f1_ci": list(percentile_interval(_macro_f1(cms))),
            "macro_f1_baseline": float(_macro_f1(maj_cm)), "accuracy": float(np.trace(cm) / len(t)),
            "majority_class": str(cats[majority]), "majority_accuracy": float(counts[majority] / len(t)),
            "n": int(len(t)), "n_boot": n_boot, "interval": "stratified item bootstrap, percentile, 95%",
            "per_class": per_class(t, p, cats)}


def auroc(scores: ArrayLike, truth: ArrayLike) -> float:
    """Area under the ROC curve (Mann-Whitney U / (n_pos * n_neg), ties counted half).

    >>> auroc([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0])
    0.875
    """
    from scipy.stats import rankdata

    s, y = np.asarray(scores, dtype=np.float64), np.asarray(truth).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return float("nan")
    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _auroc_rows(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    """AUROC of each row of (B, n) score/label arrays (every row has both classes)."""
    from scipy.stats import rankdata

    ranks = rankdata(scores, axis=1)
    n_pos = y.sum(axis=1)
    n_neg = y.shape[1] - n_pos
    auc: np.ndarray = ((ranks * y).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return auc


def binary_skill(prob: ArrayLike, truth: ArrayLike, threshold: float = 0.5, *, key: str = "skill",
                 n_boot: int = N_BOOT) -> dict[str, Any]:
    """AUROC of a score (headline; baseline 0.5) and balanced accuracy of ``prob >= threshold``
    (baseline 0.5), with stratified item-bootstrap 95% intervals; plain accuracy vs the
    majority-class accuracy; precision/recall of both classes. With only one class in the
    truth, AUROC and balanced accuracy are not measurable (None).

    >>> r = binary_skill([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0], n_boot=10)
    >>> r["value"], r["balanced_accuracy"], r["baseline"]
    (0.875, 0.75, 0.5)
    """
    s = np.asarray(prob, dtype=np.float64)
    y = np.asarray(truth).astype(np.int64)
    pred = (s >= threshold).astype(np.int64)
    cm = confusion(y, pred, 2)
    both = bool(cm[0].sum() and cm[1].sum())
    majority = int(cm[1].sum() > cm[0].sum())
    out: dict[str, Any] = {"headline": "AUROC", "value": None, "ci": None, "baseline": 0.5,
           "baseline_what": "what a score that ranks items at random scores",
           "threshold": threshold, "balanced_accuracy": None, "balanced_accuracy_ci": None,
           "balanced_accuracy_baseline": 0.5, "accuracy": float(np.trace(cm) / len(y)) if len(y) else None,
           "majority_class": bool(majority), "majority_accuracy": float(cm[majority].sum() / len(y)) if len(y) else None,
           "n": int(len(y)), "n_positive": int(cm[1].sum()), "n_boot": n_boot,
           "interval": "stratified item bootstrap, percentile, 95%",
           "per_class": {str(k): v for k, v in zip(("False", "True"), per_class(y, pred, [0, 1]).values())}}
    if both:
        idx = _stratified_indices(y, n_boot, keyed_rng(f"{key}|binary"))
        out["value"] = auroc(s, y)
        out["ci"] = list(percentile_interval(_auroc_rows(s[idx], y[idx])))
        out["balanced_accuracy"] = float(_balanced_accuracy(cm))
        out["balanced_accuracy_ci"] = list(percentile_interval(_balanced_accuracy(_confusions(y, pred, 2, idx))))
    return out


def no_measured_skill(skill: Mapping[str, Any]) -> bool:
    """True when the headline was not measured or its interval does not lie above its baseline."""
    return skill.get("value") is None or skill.get("ci") is None or skill["ci"][0] <= skill["baseline"]


# -- agreement between annotators ----------------------------------------------------------

def cohen_kappa(a: Iterable[Hashable], b: Iterable[Hashable], categories: Sequence[Hashable], weights: str | None = None) -> float:
    """Cohen's kappa of two raters over ``categories``; ``weights="linear"`` weighs a
    disagreement by |i - j| / (K - 1) in the given order (weighted kappa).

    >>> cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"], ["x", "y"])
    0.5
    """
    k = len(categories)
    cm = confusion(_codes(a, categories), _codes(b, categories), k).astype(np.float64)
    return float(_kappa(cm[None], weights)[0])


def _kappa(cms: np.ndarray, weights: str | None) -> np.ndarray:
    k = cms.shape[-1]
    i, j = np.indices((k, k))
    w = (i != j).astype(np.float64) if weights is None else np.abs(i - j) / (k - 1)
    n = cms.sum(axis=(1, 2))
    obs = (cms * w).sum(axis=(1, 2)) / n
    exp = (cms.sum(axis=2)[:, :, None] * cms.sum(axis=1)[:, None, :] * w).sum(axis=(1, 2)) / n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(exp > 0, 1 - obs / exp, np.nan)


def agreement(a: Iterable[Hashable], b: Iterable[Hashable], categories: Iterable[Hashable], *,
              weights: str | None = None, key: str = "agreement", n_boot: int = N_BOOT) -> dict[str, Any]:
    """Kappa with a percentile bootstrap 95% interval over items, raw agreement, n and each
    rater's label counts."""
    cats = list(categories)
    ca, cb = _codes(a, cats), _codes(b, cats)
    k = len(cats)
    kappa = float(_kappa(confusion(ca, cb, k).astype(np.float64)[None], weights)[0])
    idx = keyed_rng(f"{key}|kappa").integers(0, len(ca), (n_boot, len(ca)))
    draws = _kappa(_confusions(ca, cb, k, idx).astype(np.float64), weights)
    draws = draws[np.isfinite(draws)]
    return {"kappa": kappa, "ci": list(percentile_interval(draws)) if len(draws) else None,
            "weights": weights or "none", "raw_agreement": float(np.mean(ca == cb)), "n": int(len(ca)),
            "counts_a": {str(c): int((ca == i).sum()) for i, c in enumerate(cats)},
            "counts_b": {str(c): int((cb == i).sum()) for i, c in enumerate(cats)}}
