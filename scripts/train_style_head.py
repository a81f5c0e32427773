"""Train the style head (issue #24): multinomial logistic regression on frozen all-MiniLM-L6-v2
embeddings (+ the three rule flags) -> the paper's six style clusters + Other, fitted on the
DEV half of the holistic real-output set only.

    python scripts/train_style_head.py [--out src/biaslens/scorers/data/style_head.npz]

Model choice on dev only: 5-fold stratified cross-validation (fixed folds) over the L2 strength,
class weighting and whether the rule flags are features; the score is out-of-fold balanced
accuracy. The zero-shot classifier (no fitting) is scored on the same dev items for
comparison. The chosen setting is refitted on all dev items and saved with its record (the CV
table, the zero-shot dev figure, what it was trained on). Test items are never read.
Deterministic: fixed folds, L-BFGS from zeros.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from biaslens.metrics.classification import multiclass_skill
from biaslens.scorers.labelled import CLUSTER_LABELS, UNRESOLVED, load_labelled
from biaslens.scorers.styles import (
    HEAD_FILE,
    ZeroShotStyleClassifier,
    default_encoder,
    fit_softmax,
    head_features,
    prepare_response,
    top_clusters,
)

C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
FOLDS = 5


def folds(y: np.ndarray, k: int = FOLDS) -> np.ndarray:
    """Fold number of each item: within each class, items in file order dealt round-robin."""
    out = np.zeros(len(y), dtype=int)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        out[idx] = np.arange(len(idx)) % k
    return out


def balanced(y: np.ndarray, pred: np.ndarray) -> float:
    return multiclass_skill([CLUSTER_LABELS[i] for i in y], [CLUSTER_LABELS[i] for i in pred], CLUSTER_LABELS,
                            n_boot=1)["balanced_accuracy"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "src" / "biaslens" / "scorers" / "data" /
                    HEAD_FILE)
    args = ap.parse_args(argv)
    rows = [r for r in load_labelled("holistic", split="dev") if r["cluster"] != UNRESOLVED]
    texts = [prepare_response(r["response"], r.get("descriptor")) for r in rows]
    y = np.array([CLUSTER_LABELS.index(r["cluster"]) for r in rows])
    enc = default_encoder()
    emb = enc.encode(texts).astype(np.float64)
    zs = ZeroShotStyleClassifier(encoder=enc)
    zs_pred = top_clusters(zs.probabilities(texts), zs.styles, zs.clusters)
    zs_ba = balanced(y, np.array([CLUSTER_LABELS.index(p) for p in zs_pred]))
    print(f"zero-shot on dev (n={len(y)}): balanced accuracy {zs_ba:.3f}")
    fold = folds(y)
    table = []
    for flags in (False, True):
        x = head_features(emb, texts, flags)
        for weighted in (False, True):
            for c in C_GRID:
                oof = np.zeros(len(y), dtype=int)
                for f in range(FOLDS):
                    tr = fold != f
                    w, b = fit_softmax(x[tr], y[tr], len(CLUSTER_LABELS), c, weighted)
                    oof[~tr] = np.argmax(x[~tr] @ w + b, axis=1)
                ba = balanced(y, oof)
                table.append({"rule_flags": flags, "class_weighted": weighted, "C": c, "cv_balanced_accuracy": ba,
                              "cv_accuracy": float(np.mean(oof == y))})
                print(json.dumps(table[-1]))
    best = max(table, key=lambda r: (round(r["cv_balanced_accuracy"], 6), -r["C"]))
    x = head_features(emb, texts, best["rule_flags"])
    w, b = fit_softmax(x, y, len(CLUSTER_LABELS), best["C"], best["class_weighted"])
    record = {"classes": list(CLUSTER_LABELS), "encoder": enc.name, "rule_flags": best["rule_flags"],
              "C": best["C"], "class_weighted": best["class_weighted"], "trained_on":
              f"holistic real-output dev split, {len(y)} items with a resolved cluster label",
              "cv": table, "cv_folds": FOLDS, "chosen": best, "zero_shot_dev_balanced_accuracy": zs_ba,
              "better_than_zero_shot_on_dev": best["cv_balanced_accuracy"] > zs_ba}
    np.savez(args.out, weights=w.astype(np.float32), bias=b.astype(np.float32),
             record=np.array(json.dumps(record, sort_keys=True)))
    print(f"chosen: {best}; saved {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
