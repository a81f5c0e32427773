"""Train the offline toxicity/offensiveness head (issue #33): logistic regression on frozen
all-MiniLM-L6-v2 embeddings plus a few text scores (biaslens.scorers.toxicity_head), fitted on
public labelled data and the DEV halves of the two real-output sets. Test items are never read.

    python scripts/train_toxicity_head.py --davidson DAVIDSON_REPO --toxigen TOXIGEN_REPO \\
        [--out src/biaslens/scorers/data/toxicity_head.npz] [--embedding-cache DIR]

The public data (not shipped with biaslens; the data card toxicity_head.md beside the head
names the licences):

- DAVIDSON_REPO: a checkout of github.com/t-davidson/hate-speech-and-offensive-language (MIT
  licence) at commit cb50f7e9eb855a99abc51423bf40df0e26d6fe30; read: data/labeled_data.csv
  (24,783 tweets; class 0 hate speech, 1 offensive, 2 neither).
- TOXIGEN_REPO: a checkout of github.com/microsoft/TOXIGEN (code MIT, data CDLA-Permissive-2.0)
  at commit 01517e814639e0334c920a3c502036c8158aac87; read: demonstrations/**/*.txt and
  prompts/*.txt, the human-written statements about 13 groups, hateful or neutral by file name
  (hate_* / neutral_*); the prompt files are lists of such statements, split at their "- " items.

The script checks the SHA-256 of what it reads against the versions above and stops on a
mismatch (--allow-other-data to go on: the record then says so).

Method (fixed before the test halves were scored):

1. Every text is masked as the runs mask it (identity words -> "left-handed"): public texts with
   the whole lexicon, dev replies exactly as the scorer card masks them.
2. Two sub-heads, one per public set, class-weighted logistic regression (C = 0.1, not tuned) on
   the masked texts' embeddings; the head reads each one's largest score over a reply's
   sentences.
3. The head: class-weighted logistic regression on the dev halves of both sets (holistic
   "offensive", community "toxic"), inputs and L2 strength chosen by 5-fold cross-validation on
   dev (folds fixed: within each set and label, items dealt round-robin in file order); score:
   the mean over the two sets of the out-of-fold AUROC; ties go to fewer inputs, then smaller C.
4. Threshold: the one maximising F1 of the pooled out-of-fold predictions (both sets); the
   shipped score is shifted so that it is 0.5.
5. The chosen setting is refitted on all dev items and saved with its record (CV table,
   out-of-fold figures at the threshold, data sources and their hashes).

Deterministic: fixed folds, L-BFGS from zeros, no random draws.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np

from biaslens.metrics.classification import auroc
from biaslens.scorers.card import mask_rows
from biaslens.scorers.labelled import UNRESOLVED, load_labelled
from biaslens.scorers.masking import mask_all
from biaslens.scorers.styles import default_encoder
from biaslens.scorers.toxicity_head import FEATURES, HEAD_FILE, fit_binary, head_features, raw_features

sys.path.insert(0, str(Path(__file__).parent))
from train_style_head import folds  # noqa: E402  (the same fixed round-robin folds, per stratum)

SOURCES = {
    "davidson": {"repository": "github.com/t-davidson/hate-speech-and-offensive-language",
                 "commit": "cb50f7e9eb855a99abc51423bf40df0e26d6fe30", "licence": "MIT",
                 "files": "data/labeled_data.csv",
                 "sha256": "fcb8bc7c68120ae4af04a5b9acd58585513ede11e1548ebf36a5c2040b6f6281",
                 "labels": "class 0 (hate speech) or 1 (offensive language) -> 1, class 2 (neither) -> 0; "
                           "majority of 3+ crowd workers (Davidson et al. 2017)"},
    "toxigen": {"repository": "github.com/microsoft/TOXIGEN",
                "commit": "01517e814639e0334c920a3c502036c8158aac87",
                "licence": "code MIT; data Community Data License Agreement - Permissive 2.0 (results such as "
                           "trained models unrestricted)",
                "files": "demonstrations/**/*.txt, prompts/*.txt (61 files, concatenated in sorted path order)",
                "sha256": "77f2c615968edcb7fc9a58c506830d583343f611fda104d38f029e663922d52d",
                "labels": "hate_* files -> 1, neutral_* files -> 0 (statements written or collected by the "
                          "ToxiGen authors as demonstrations; Hartvigsen et al. 2022)"},
}
PUBLIC_NAMES = {"toxigen": "ToxiGen's statements", "davidson": "Davidson et al.'s tweets"}
FEATURE_SETS = (("embedding",), ("embedding", "profanity", "vader_min"),
                ("embedding", "profanity", "vader_min", "toxigen_max"), FEATURES,
                ("profanity", "vader_min", "toxigen_max", "davidson_max"))
C_GRID = (0.03, 0.1, 0.3, 1.0)
SUBHEAD_C = 0.1
FOLDS = 5
TASKS = (("holistic", "offensive"), ("community", "toxic"))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_davidson(repo: Path) -> tuple[list[str], np.ndarray, str]:
    """Tweets (retweet markers, @-handles and links removed, HTML ampersands decoded) and labels."""
    import pandas as pd

    path = repo / "data" / "labeled_data.csv"
    data = path.read_bytes()
    frame = pd.read_csv(path)
    text = (frame["tweet"].astype(str).str.replace(r"(RT\s+)?@\w+:?", "", regex=True)
            .str.replace(r"https?://\S+", "", regex=True).str.replace("&amp;", "&").str.strip())
    return text.tolist(), (frame["class"].to_numpy() < 2).astype(np.int64), _sha(data)


def read_toxigen(repo: Path) -> tuple[list[str], np.ndarray, str]:
    """Distinct statements of the hate_*/neutral_* files, hateful ones first."""
    files = sorted([*repo.glob("demonstrations/**/*.txt"), *repo.glob("prompts/*.txt")],
                   key=lambda p: str(p.relative_to(repo)))
    blob = b"".join(p.read_bytes() for p in files)
    groups: dict[bool, set[str]] = {True: set(), False: set()}
    for p in files:
        for item in re.split(r"\\n|\n", p.read_text(encoding="utf-8")):
            item = item.strip()
            item = item[1:].strip() if item.startswith("-") else item
            if item:
                groups[p.name.startswith("hate")].add(item)
    texts = sorted(groups[True]) + sorted(groups[False] - groups[True])
    return texts, np.array([1] * len(groups[True]) + [0] * (len(texts) - len(groups[True]))), _sha(blob)


def best_f1_threshold(logit: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The cut between two neighbouring out-of-fold logits that maximises F1 (the higher on ties)."""
    order = np.unique(logit)
    cuts = np.concatenate([(order[:-1] + order[1:]) / 2, [order[-1] + 1e-9]])
    best = (-1.0, 0.0)
    for t in cuts:
        pred = logit >= t
        tp = int((pred & (y == 1)).sum())
        f1 = 2 * tp / (int(pred.sum()) + int(y.sum())) if pred.any() else 0.0
        if f1 >= best[0]:
            best = (f1, float(t))
    return best[1], best[0]


def _cached_features(name: str, texts: list[str], encoder, subheads, cache: Path | None) -> dict[str, np.ndarray]:
    """raw_features, kept in ``cache`` keyed by the texts and the sub-heads (re-runs take seconds)."""
    h = hashlib.sha256(json.dumps(texts).encode())
    for w, b in subheads.values():
        h.update(w.tobytes() + np.float64(b).tobytes())
    path = cache / f"{name}-{h.hexdigest()[:16]}.npz" if cache else None
    if path is not None and path.is_file():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    raw = raw_features(texts, encoder, subheads)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **raw)
    return raw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--davidson", type=Path, required=True, help="checkout of t-davidson/hate-speech-and-offensive-language")
    ap.add_argument("--toxigen", type=Path, required=True, help="checkout of microsoft/TOXIGEN")
    ap.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "src" / "biaslens" / "scorers" / "data" /
                    HEAD_FILE)
    ap.add_argument("--embedding-cache", type=Path, default=None, help="folder to keep computed inputs in")
    ap.add_argument("--allow-other-data", action="store_true", help="go on when a file's SHA-256 differs")
    args = ap.parse_args(argv)
    enc = default_encoder()

    public = {"davidson": read_davidson(args.davidson), "toxigen": read_toxigen(args.toxigen)}
    other = [n for n, (_, _, sha) in public.items() if sha != SOURCES[n]["sha256"]]
    if other and not args.allow_other_data:
        sys.exit(f"the data read for {', '.join(other)} differ from the versions this script names (SHA-256); "
                 "check out the named commits, or pass --allow-other-data")
    subheads: dict[str, tuple[np.ndarray, float]] = {}
    for name in ("toxigen", "davidson"):
        texts, y, _ = public[name]
        raw = _cached_features(f"public-{name}", mask_all(texts, [()] * len(texts)), enc, {}, args.embedding_cache)
        subheads[name] = fit_binary(raw["embedding"], y, SUBHEAD_C)
        print(f"sub-head {name}: {len(y)} texts, {int(y.sum())} positive", flush=True)

    rows = {task: [r for r in load_labelled(task, split="dev") if r[field] != UNRESOLVED] for task, field in TASKS}
    raws = [_cached_features(f"dev-{task}", mask_rows(rows[task]), enc, subheads, args.embedding_cache)
            for task, _ in TASKS]
    raw = {k: np.concatenate([r[k] for r in raws]) for k in raws[0]}
    y = np.concatenate([[int(r[field]) for r in rows[task]] for task, field in TASKS])
    task_of = np.concatenate([[i] * len(rows[task]) for i, (task, _) in enumerate(TASKS)])
    fold = folds(task_of * 2 + y)

    def out_of_fold(features: tuple[str, ...], c: float) -> np.ndarray:
        oof = np.zeros(len(y))
        scalars = [f for f in features if f != "embedding"]
        for f in range(FOLDS):
            tr = fold != f
            cols = np.column_stack([raw[s] for s in scalars]) if scalars else np.zeros((len(y), 0))
            mean, std = cols[tr].mean(axis=0), cols[tr].std(axis=0) + 1e-12
            x = head_features(raw, features, mean, std)
            w, b = fit_binary(x[tr], y[tr], c)
            oof[~tr] = x[~tr] @ w + b
        return oof

    table = []
    for features in FEATURE_SETS:
        for c in C_GRID:
            oof = out_of_fold(features, c)
            per = {task: auroc(oof[task_of == i], y[task_of == i]) for i, (task, _) in enumerate(TASKS)}
            table.append({"features": list(features), "C": c, "cv_auroc": per,
                          "cv_auroc_mean": float(np.mean(list(per.values())))})
            print(json.dumps(table[-1]), flush=True)
    best = max(table, key=lambda r: (round(r["cv_auroc_mean"], 6), -len(r["features"]), -r["C"]))
    features, c = tuple(best["features"]), best["C"]
    oof = out_of_fold(features, c)
    threshold, f1 = best_f1_threshold(oof, y)
    at_threshold = {}
    for i, (task, _) in enumerate(TASKS):
        pred, truth = oof[task_of == i] >= threshold, y[task_of == i] == 1
        tp = int((pred & truth).sum())
        at_threshold[task] = {"n": int(len(truth)), "n_positive": int(truth.sum()), "n_flagged": int(pred.sum()),
                              "recall": tp / int(truth.sum()), "precision": tp / int(pred.sum()) if pred.any() else None}
    scalars = [f for f in features if f != "embedding"]
    cols = np.column_stack([raw[s] for s in scalars]) if scalars else np.zeros((len(y), 0))
    mean, std = cols.mean(axis=0), cols.std(axis=0) + 1e-12
    w, b = fit_binary(head_features(raw, features, mean, std), y, c)
    used = {n: s for n, s in subheads.items() if f"{n}_max" in features}  # only what the head reads ships
    counts = {task: {"n": len(rows[task]), "n_positive": int(sum(r[field] for r in rows[task]))} for task, field in TASKS}
    record = {
        "features": list(features), "C": c, "class_weighted": True, "encoder": enc.name,
        "threshold_logit": threshold, "threshold_rule": "maximum F1 of the pooled out-of-fold dev predictions",
        "cv_f1_at_threshold": f1, "cv_at_threshold": at_threshold, "cv": table, "cv_folds": FOLDS, "chosen": best,
        "subhead_C": SUBHEAD_C, "subheads_shipped": sorted(used), "dev_items": counts,
        "public_data": {n: {**SOURCES[n], "n": int(len(public[n][1])), "n_positive": int(public[n][1].sum()),
                            "sha256_read": public[n][2], "matches_named_version": public[n][2] == SOURCES[n]["sha256"]}
                        for n in SOURCES},
        "trained_on": (f"the dev halves of the holistic ({counts['holistic']['n']} replies) and community "
                       f"({counts['community']['n']} replies) real-output sets"
                       + "".join(f", with a sub-head on {PUBLIC_NAMES[n]}" for n in sorted(used))),
    }
    np.savez(args.out, weights=w.astype(np.float64), bias=np.float64(b), mean=mean, std=std,
             **{f"sub_{n}_w": sw for n, (sw, _) in used.items()},
             **{f"sub_{n}_b": np.float64(sb) for n, (_, sb) in used.items()},
             record=np.array(json.dumps(record, sort_keys=True)))
    print(f"chosen: {best}; threshold logit {threshold:.4f} (out-of-fold F1 {f1:.3f}); {at_threshold}; saved {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
