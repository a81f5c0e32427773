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

from biaslens.metrics.proportions import wilson_interval
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


# -- errors per group (issue #41) -----------------------------------------------------------
# A gap between groups in a judge's score is the model's only where the judge errs alike across
# the groups and knows more than the group itself: these figures measure both.

#: Monte Carlo draws of the exact (permutation) heterogeneity test
N_PERMUTATIONS = 10_000


def group_errors(prob: ArrayLike, truth: ArrayLike, groups: Sequence[Hashable], threshold: float = 0.5
                 ) -> dict[str, dict[str, Any]]:
    """Per group: n, positives, the false-positive rate (flagged among the true negatives) and the
    false-negative rate (missed among the true positives) of ``prob >= threshold``, each with a
    95% Wilson interval (None where the group has no negatives / positives), and the mean score.

    >>> r = group_errors([0.9, 0.6, 0.1, 0.2, 0.7], [1, 0, 0, 0, 1], ["a", "a", "a", "b", "b"])
    >>> r["a"]["n"], r["a"]["n_positive"], r["a"]["false_positive_rate"], r["b"]["false_negative_rate"]
    (3, 1, 0.5, 0.0)
    >>> r["b"]["false_positive_rate"], round(r["a"]["mean_score"], 4)
    (0.0, 0.5333)
    """
    s = np.asarray(prob, dtype=np.float64)
    y = np.asarray(truth).astype(bool)
    flag = s >= threshold
    g = np.asarray([str(x) for x in groups])
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(g.tolist())):
        m = g == name
        neg, pos = m & ~y, m & y
        row: dict[str, Any] = {"n": int(m.sum()), "n_positive": int(pos.sum()), "mean_score": float(s[m].mean())}
        for what, among, err in (("false_positive", neg, flag), ("false_negative", pos, ~flag)):
            k, n = int((among & err).sum()), int(among.sum())
            lo, hi = wilson_interval(np.array([k]), np.array([max(n, 1)]))
            row[f"{what}_rate"] = k / n if n else None
            row[f"{what}_ci"] = [float(lo[0]), float(hi[0])] if n else None
            row[f"n_{what}"] = k
        out[name] = row
    return out


def _chi_square(table: np.ndarray) -> np.ndarray:
    """Pearson's chi-square of (..., G, 2) tables (rows with no items contribute nothing)."""
    rows = table.sum(axis=-1, keepdims=True)
    cols = table.sum(axis=-2, keepdims=True)
    expected = rows * cols / table.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        chi: np.ndarray = np.where(expected > 0, (table - expected) ** 2 / np.where(expected > 0, expected, 1), 0.0
                                   ).sum(axis=(-2, -1))
    return chi


def heterogeneity_test(errors: ArrayLike, groups: Sequence[Hashable], *, key: str = "heterogeneity",
                       n_permutations: int = N_PERMUTATIONS) -> dict[str, Any]:
    """Do the groups' error rates differ? ``errors``: 0/1 per item (e.g. flagged, among the true
    negatives: the false-positive rate). Pearson's chi-square of the groups x (error, no error)
    table with G-1 degrees of freedom when every expected count is at least 5; otherwise (small
    counts, where the chi-square reference is wrong) the exact conditional test by Monte Carlo:
    the same statistic over seeded permutations of the errors across items (p = (1 + #{>=}) /
    (1 + draws)). ``test`` says which was used. Groups with no items are left out.

    >>> r = heterogeneity_test([1] * 30 + [0] * 10 + [1] * 10 + [0] * 30, ["a"] * 40 + ["b"] * 40)
    >>> r["test"], r["statistic"], r["df"], r["p_value"] < 1e-4
    ('chi-square', 20.0, 1, True)
    """
    from scipy.stats import chi2

    e = np.asarray(errors).astype(np.int64)
    g = np.asarray([str(x) for x in groups])
    names = sorted(set(g.tolist()))
    codes = np.array([names.index(x) for x in g], dtype=np.int64)
    k = len(names)
    out: dict[str, Any] = {"n": int(len(e)), "n_groups": k, "n_errors": int(e.sum())}
    if k < 2 or e.sum() in (0, len(e)):
        return {**out, "test": None, "statistic": None, "df": None, "p_value": None,
                "reason": "fewer than two groups" if k < 2 else "every item has the same outcome: nothing to compare"}
    table = np.stack([np.bincount(codes, weights=e, minlength=k), np.bincount(codes, weights=1 - e, minlength=k)], 1)
    stat = float(_chi_square(table))
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    if (expected >= 5).all():
        return {**out, "test": "chi-square", "statistic": stat, "df": k - 1, "p_value": float(chi2.sf(stat, k - 1))}
    rng = keyed_rng(f"{key}|permutation")
    perm = np.argsort(rng.random((n_permutations, len(e))), axis=1)
    pe = e[perm]  # (draws, n): the errors reshuffled over the items, groups fixed
    flat = (codes[None, :] + (np.arange(n_permutations) * k)[:, None]).ravel()
    err = np.bincount(flat, weights=pe.ravel(), minlength=n_permutations * k).reshape(n_permutations, k)
    tabs = np.stack([err, table.sum(1)[None, :] - err], -1)
    draws = _chi_square(tabs)
    p = (1 + int((draws >= stat - 1e-9).sum())) / (1 + n_permutations)
    return {**out, "test": f"exact (Monte Carlo, {n_permutations:,} permutations; expected counts below 5)",
            "statistic": stat, "df": k - 1, "p_value": float(p)}


def group_prior_scores(dev_truth: ArrayLike, dev_groups: Sequence[Hashable], groups: Sequence[Hashable]) -> np.ndarray:
    """The group-only score of each item: the positive rate of its group among the dev items
    (the dev rate overall for a group the dev half does not have). A judge that does no better
    than this knows nothing about the text beyond who it is about.

    >>> group_prior_scores([1, 0, 0, 0], ["a", "a", "b", "b"], ["a", "b", "c"]).tolist()
    [0.5, 0.0, 0.25]
    """
    y = np.asarray(dev_truth, dtype=np.float64)
    dg = np.asarray([str(x) for x in dev_groups])
    rate = {name: float(y[dg == name].mean()) for name in set(dg.tolist())}
    overall = float(y.mean()) if len(y) else float("nan")
    return np.array([rate.get(str(x), overall) for x in groups], dtype=np.float64)


def paired_auroc_difference(scores: ArrayLike, other: ArrayLike, truth: ArrayLike, *, key: str = "paired",
                            n_boot: int = N_BOOT, strata: Sequence[Hashable] | None = None) -> dict[str, Any]:
    """AUROC(scores) - AUROC(other) on the same items, with a paired percentile bootstrap 95%
    interval (the same resampled items for both, drawn within each true class as :func:`binary_skill`
    draws). None values where one class is missing.

    With ``strata`` the AUROCs are taken within each stratum (positives ranked only against
    negatives of the same stratum) and averaged with weights n_positive x n_negative, the bootstrap
    drawing within each stratum and class; a stratum without both classes is left out. What one
    stratum's items share (which model wrote them) then cannot count as reading them.

    >>> r = paired_auroc_difference([0.9, 0.8, 0.2, 0.1], [0.5, 0.5, 0.5, 0.5], [1, 1, 0, 0], n_boot=20)
    >>> r["value"], r["auroc"], r["auroc_other"]
    (0.5, 1.0, 0.5)
    """
    s, o = np.asarray(scores, dtype=np.float64), np.asarray(other, dtype=np.float64)
    y = np.asarray(truth).astype(np.int64)
    out: dict[str, Any] = {"value": None, "ci": None, "auroc": None, "auroc_other": None, "n": int(len(y)),
                           "n_positive": int(y.sum()), "n_boot": n_boot,
                           "interval": "paired stratified item bootstrap, percentile, 95%"}
    if not (0 < y.sum() < len(y)):
        return out
    if strata is not None and len(set(map(str, strata))) > 1:
        st = np.asarray([str(x) for x in strata])
        parts = []
        for name in sorted(set(st.tolist())):
            m = st == name
            ym = y[m]
            if 0 < ym.sum() < len(ym):
                idx = _stratified_indices(ym, n_boot, keyed_rng(f"{key}|paired-auroc|{name}"))
                sm, om = s[m], o[m]
                parts.append((float(ym.sum() * (len(ym) - ym.sum())), auroc(sm, ym), auroc(om, ym),
                              _auroc_rows(sm[idx], ym[idx]) - _auroc_rows(om[idx], ym[idx])))
        w = np.array([q[0] for q in parts]) / sum(q[0] for q in parts)
        a, b = float(sum(wi * q[1] for wi, q in zip(w, parts))), float(sum(wi * q[2] for wi, q in zip(w, parts)))
        diff = sum(wi * q[3] for wi, q in zip(w, parts))
        return {**out, "value": a - b, "ci": list(percentile_interval(np.asarray(diff))), "auroc": a, "auroc_other": b,
                "strata": len(parts), "interval": "paired bootstrap within each stratum and class, percentile, 95%; "
                                                  "AUROC within strata, weighted by positive x negative pairs"}
    idx = _stratified_indices(y, n_boot, keyed_rng(f"{key}|paired-auroc"))
    a, b = auroc(s, y), auroc(o, y)
    diff = _auroc_rows(s[idx], y[idx]) - _auroc_rows(o[idx], y[idx])
    return {**out, "value": a - b, "ci": list(percentile_interval(diff)), "auroc": a, "auroc_other": b}


def group_skill(prob: ArrayLike, truth: ArrayLike, groups: Sequence[Hashable], dev_truth: ArrayLike,
                dev_groups: Sequence[Hashable], threshold: float = 0.5, *, key: str = "group",
                n_boot: int = N_BOOT, producers: Sequence[Hashable] | None = None,
                dev_producers: Sequence[Hashable] | None = None) -> dict[str, Any]:
    """A binary judge's errors per group and its skill against a score that knows only the group:
    ``per_group`` (:func:`group_errors`), ``per_group_test`` (:func:`heterogeneity_test` of the
    false-positive rates across groups, and of the false-negative rates) and ``vs_group_prior``
    (:func:`paired_auroc_difference` of the judge against :func:`group_prior_scores` from the dev
    half; ``beats`` is true only when the interval lies above 0). With ``producers`` (which model
    wrote each item, known without reading it) the prior knows the group and the producer: where
    one model's replies are far more often positive, a judge that only tells the models apart
    must not pass for one that reads the text."""
    s = np.asarray(prob, dtype=np.float64)
    y = np.asarray(truth).astype(bool)
    g = [str(x) for x in groups]
    flag = (s >= threshold).astype(np.int64)
    ga = np.asarray(g)
    tests = {"false_positive_rate": heterogeneity_test(flag[~y], ga[~y].tolist(), key=f"{key}|fpr"),
             "false_negative_rate": heterogeneity_test(1 - flag[y], ga[y].tolist(), key=f"{key}|fnr")}
    knows_producer = producers is not None and dev_producers is not None and len(set(map(str, producers))) > 1
    if knows_producer:
        assert producers is not None and dev_producers is not None
        cell = [f"{m}|{x}" for m, x in zip(map(str, producers), g)]
        prior = group_prior_scores(dev_truth, [f"{m}|{x}" for m, x in zip(map(str, dev_producers), dev_groups)], cell)
    else:
        prior = group_prior_scores(dev_truth, dev_groups, g)
    # several models' replies: ranked within each model's, so telling the models apart is no skill
    vs = paired_auroc_difference(s, prior, y, key=key, n_boot=n_boot,
                                 strata=list(map(str, producers)) if knows_producer and producers is not None else None)
    vs["beats"] = bool(vs["ci"] is not None and vs["ci"][0] > 0)
    vs["knows_producer"] = knows_producer
    vs["what"] = ("AUROC of the judge minus AUROC of a score that knows only the group" +
                  (" and which model wrote the item (the dev half's positive rate of the item's group among that "
                   "model's items), both AUROCs within each model's items" if knows_producer else
                   " (the dev half's positive rate of the item's group)"))
    fprs = [r["false_positive_rate"] for r in group_errors(s, y, g, threshold).values()
            if r["false_positive_rate"] is not None]
    return {"per_group": group_errors(s, y, g, threshold), "per_group_test": tests, "vs_group_prior": vs,
            "threshold": threshold,
            "false_positive_range": [min(fprs), max(fprs)] if fprs else None}


# -- a gap between two groups corrected for the judge's errors (issue #41) ------------------------

#: a group with fewer labelled positives than this borrows the pooled false-negative rate
MIN_POSITIVES_PER_GROUP = 5
#: below this 1 - FPR - FNR (Youden's J) the Rogan-Gladen correction multiplies a share by more
#: than 20: a judge (nearly) no better than chance, whose correction is unbounded in effect
MIN_YOUDEN_J = 0.05


def misclassification_corrected_gap(run_a: tuple[int, int], run_b: tuple[int, int], errors_a: Mapping[str, int],
                                    errors_b: Mapping[str, int], pooled: Mapping[str, int], *,
                                    key: str = "corrected", n_boot: int = N_BOOT, level: float = 0.95) -> dict[str, Any]:
    """The gap between two groups' shares flagged by a judge, beside what the judge's measured
    errors alone would make and the gap corrected for them.

    ``run_x`` = (replies flagged, replies) of group x in the run; ``errors_x`` = the judge's
    labelled counts for that group: ``fp``, ``negatives``, ``fn``, ``positives``; ``pooled`` the
    same over all groups (a group with fewer than :data:`MIN_POSITIVES_PER_GROUP` labelled
    positives uses the pooled false-negative rate: a rate from 0-4 positives says little).

    - ``raw``: flagged share a - b; ``judge_alone``: the gap the judge's errors make when both
      groups' true rates equal the pooled labelled rate pi: (pi (1 - FNR_a) + (1 - pi) FPR_a) -
      (same for b);
    - ``corrected``: per-group Rogan-Gladen, (q - FPR) / (1 - FPR - FNR), a - b (not clipped to
      [0, 1], which would bias the difference);
    - intervals: percentile bootstrap (``level``) over the labelled items (resampled within each
      group x class cell: binomial draws from its counts) and the run's replies (within each group),
      jointly; a draw where 1 - FPR - FNR < :data:`MIN_YOUDEN_J` (the judge no better than chance
      there, where the correction would multiply the share without bound) has no correction and is
      left out (``n_undefined``); with more than half the draws left out there is no interval
      (``corrected_ci`` None). Seeded simulations at the suites' labelled designs hold the
      interval's coverage (tests/test_group_errors.py).

    >>> r = misclassification_corrected_gap((40, 100), (10, 100), {"fp": 30, "negatives": 100, "fn": 0,
    ...     "positives": 0}, {"fp": 0, "negatives": 100, "fn": 0, "positives": 0},
    ...     {"fp": 30, "negatives": 200, "fn": 20, "positives": 100}, n_boot=200)
    >>> round(r["raw"], 2), round(r["corrected"], 4), round(r["judge_alone"], 4)
    (0.3, 0.075, 0.2)
    """
    rng = keyed_rng(f"{key}|rogan-gladen")

    def fnr_counts(e: Mapping[str, int]) -> tuple[int, int]:
        return (e["fn"], e["positives"]) if e["positives"] >= MIN_POSITIVES_PER_GROUP else (pooled["fn"],
                                                                                             pooled["positives"])

    def draw(k: int, n: int) -> np.ndarray:
        return rng.binomial(n, k / n, n_boot) / n if n else np.full(n_boot, np.nan)

    pi = pooled["positives"] / max(pooled["positives"] + pooled["negatives"], 1)
    point, draws = {}, {}
    for g, run, e in (("a", run_a, errors_a), ("b", run_b, errors_b)):
        fn, pos = fnr_counts(e)
        q, fpr, fnr = run[0] / run[1], e["fp"] / max(e["negatives"], 1), fn / max(pos, 1)
        point[g] = (q, fpr, fnr)
        draws[g] = (draw(*run), draw(e["fp"], e["negatives"]), draw(fn, pos))

    def rg(q: ArrayLike, fpr: ArrayLike, fnr: ArrayLike) -> np.ndarray:
        qa, fa, na = (np.asarray(x, dtype=np.float64) for x in (q, fpr, fnr))
        denom = 1 - fa - na
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = denom >= MIN_YOUDEN_J
            out: np.ndarray = np.where(ok, (qa - fa) / np.where(ok, denom, 1.0), np.nan)
        return out

    raw = point["a"][0] - point["b"][0]
    alone = ((pi * (1 - point["a"][2]) + (1 - pi) * point["a"][1]) - (pi * (1 - point["b"][2]) + (1 - pi) * point["b"][1]))
    corrected = float(rg(*point["a"]) - rg(*point["b"]))
    raw_draws = draws["a"][0] - draws["b"][0]
    cd = rg(*draws["a"]) - rg(*draws["b"])
    ok = np.isfinite(cd)
    return {"raw": float(raw), "raw_ci": list(percentile_interval(raw_draws, level)),
            "judge_alone": float(alone), "corrected": corrected if np.isfinite(corrected) else None,
            "corrected_ci": list(percentile_interval(cd[ok], level)) if ok.mean() >= 0.5 else None,
            "n_undefined": int((~ok).sum()), "n_boot": n_boot, "level": level, "pooled_positive_rate": float(pi),
            "false_positive_rates": [point["a"][1], point["b"][1]], "false_negative_rates": [point["a"][2], point["b"][2]],
            "method": "per-group Rogan-Gladen (q - FPR) / (1 - FPR - FNR); the pooled FNR for a group with fewer than "
                      f"{MIN_POSITIVES_PER_GROUP} labelled positives; percentile bootstrap over the labelled items "
                      "(within group x class) and the run's replies (within group)"}


# -- errors per group of a multi-class judge (issue #41: the style clusters) ----------------------

def group_modal_labels(dev_truth: Sequence[Hashable], dev_groups: Sequence[Hashable], groups: Sequence[Hashable],
                       categories: Sequence[Hashable]) -> list[Hashable]:
    """The group-only rule for classes: each item gets the commonest label of its group among the
    dev items (ties: the label commoner in the whole dev half, then the earlier in ``categories``;
    a group the dev half does not have gets the dev half's commonest label). The best a rule that
    knows only the group can do in plain accuracy.

    >>> group_modal_labels(["x", "y", "y", "x", "x"], ["a", "a", "a", "b", "b"], ["a", "b", "c"], ["x", "y"])
    ['y', 'x', 'x']
    """
    cats = list(categories)
    t = _codes(dev_truth, cats)
    dg = np.asarray([str(x) for x in dev_groups])
    overall = np.bincount(t, minlength=len(cats))

    def mode(counts: np.ndarray) -> Hashable:
        return cats[min(range(len(cats)), key=lambda i: (-counts[i], -overall[i], i))]

    best = {name: mode(np.bincount(t[dg == name], minlength=len(cats))) for name in set(dg.tolist())}
    fallback = mode(overall) if len(t) else cats[0]
    return [best.get(str(x), fallback) for x in groups]


def multiclass_group_skill(truth: Iterable[Hashable], pred: Iterable[Hashable], categories: Iterable[Hashable],
                           groups: Sequence[Hashable], dev_truth: Sequence[Hashable], dev_groups: Sequence[Hashable],
                           *, key: str = "group", n_boot: int = N_BOOT) -> dict[str, Any]:
    """A multi-class judge's errors per group and its skill against a rule that knows only the group
    (the fields of :func:`group_skill`, for classes):

    - ``per_group``: per group ``n``, ``n_correct``, ``accuracy`` with its 95% Wilson interval
      (``accuracy_ci``); the judge's commonest error, ``error_class`` (the class it gives most often
      to items labelled otherwise, over all groups), read one-vs-rest as :func:`group_errors` reads a
      flag: ``n_positive`` (labelled that class), ``false_positive_rate`` (given it, among those
      labelled otherwise), ``false_negative_rate`` (given another, among those labelled it), with
      intervals and counts, and ``mean_score`` (the share given it); and ``share_difference``: per
      class, the share the judge gives it minus the labelled share, in that group (what the judge
      adds to the class distribution a comparison of groups reads);
    - ``per_group_test``: :func:`heterogeneity_test` of the error rate (1 - accuracy) across groups
      (``accuracy``), and of the error class's false-positive rate;
    - ``vs_group_prior``: balanced accuracy of the judge minus that of :func:`group_modal_labels`
      fitted on the dev items (``value``, ``ci``), and the same for plain accuracy
      (``accuracy_difference``), on the same items, each with a paired stratified bootstrap 95%
      interval (the same resampled items for both rules, drawn within each true class as
      :func:`multiclass_skill` draws); ``beats`` only when BOTH intervals lie above 0.

    Why two measures, fair to both rules: balanced accuracy weighs each labelled class the same (a
    comparison of groups reads every class's share alike, the rare ones too) and is the card's
    headline, but the group's commonest class is not the best text-free rule for it, so alone it
    would favour a judge that spreads its answers over the rare classes; plain accuracy is the
    measure on which the group's commonest class IS the best any rule that knows only the group can
    do, but alone it asks nothing about the rare classes. A judge beats the group only when it wins
    on both: on the card's measure, and on the group rule's own.

    >>> r = multiclass_group_skill(["x", "y", "x", "y"], ["x", "y", "y", "y"], ["x", "y"], ["a", "a", "b", "b"],
    ...                            ["x", "x", "y"], ["a", "a", "b"], n_boot=10)
    >>> r["error_class"], r["per_group"]["b"]["accuracy"], r["per_group"]["b"]["false_positive_rate"]
    ('y', 0.5, 1.0)
    >>> r["vs_group_prior"]["balanced_accuracy"], r["vs_group_prior"]["balanced_accuracy_other"]
    (0.75, 0.5)
    """
    cats = list(categories)
    k = len(cats)
    t, p = _codes(truth, cats), _codes(pred, cats)
    g = [str(x) for x in groups]
    ga = np.asarray(g)
    correct = t == p
    wrong = np.bincount(p[~correct], minlength=k)
    err = int(np.argmax(wrong)) if wrong.sum() else None
    one_vs_rest = group_errors((p == err).astype(np.float64), t == err, g) if err is not None else {}
    per: dict[str, dict[str, Any]] = {}
    seen = [i for i in range(k) if ((t == i) | (p == i)).any()]
    for name in sorted(set(g)):
        m = ga == name
        n, c = int(m.sum()), int(correct[m].sum())
        lo, hi = wilson_interval(np.array([c]), np.array([n]))
        per[name] = {**one_vs_rest.get(name, {}), "n": n, "n_correct": c, "accuracy": c / n,
                     "accuracy_ci": [float(lo[0]), float(hi[0])],
                     "share_difference": {str(cats[i]): float(np.mean(p[m] == i) - np.mean(t[m] == i)) for i in seen}}
    tests = {"accuracy": heterogeneity_test((~correct).astype(np.int64), g, key=f"{key}|accuracy")}
    if err is not None:
        other = t != err
        tests["false_positive_rate"] = heterogeneity_test((p[other] == err).astype(np.int64), ga[other].tolist(),
                                                          key=f"{key}|fpr")
    prior_labels = group_modal_labels(dev_truth, dev_groups, g, cats)
    prior = _codes(prior_labels, cats)
    idx = _stratified_indices(t, n_boot, keyed_rng(f"{key}|paired-balanced-accuracy"))
    ba, ba_other = float(_balanced_accuracy(confusion(t, p, k))), float(_balanced_accuracy(confusion(t, prior, k)))
    diff = _balanced_accuracy(_confusions(t, p, k, idx)) - _balanced_accuracy(_confusions(t, prior, k, idx))
    acc_diff = correct[idx].mean(axis=1) - (prior == t)[idx].mean(axis=1)
    ci, acc_ci = list(percentile_interval(diff)), list(percentile_interval(acc_diff))
    vs = {"measure": "balanced accuracy", "value": ba - ba_other, "ci": ci, "beats": bool(ci[0] > 0 and acc_ci[0] > 0),
          "balanced_accuracy": ba, "balanced_accuracy_other": ba_other,
          "accuracy_difference": {"value": float(correct.mean() - (prior == t).mean()), "ci": acc_ci},
          "accuracy": float(correct.mean()), "accuracy_other": float((prior == t).mean()),
          "prior": {name: str(lab) for name, lab in sorted(dict(zip(g, prior_labels)).items())},
          "n": int(len(t)), "n_dev": int(len(dev_truth)), "n_boot": n_boot,
          "interval": "paired stratified item bootstrap, percentile, 95%",
          "what": "balanced accuracy (and plain accuracy) of the judge minus that of a rule that knows only the "
                  "group (the commonest label of the item's group on the dev half); beats: both intervals above 0"}
    accs = [r["accuracy"] for r in per.values()]
    return {"per_group": per, "per_group_test": tests, "vs_group_prior": vs,
            "error_class": str(cats[err]) if err is not None else None,
            "accuracy_range": [min(accs), max(accs)] if accs else None}
