"""Attempts to raise the toxicity head's skill on the community TEST half.

    python benchmarks/toxicity_skill_attempts.py \\
        [--out benchmarks/results/toxicity_skill_attempts.json]

Every variant is scored exactly as the scorer card scores the shipped head
(:func:`biaslens.scorers.card.measure_skill`: the community test half without unresolved labels,
replies masked as the runs mask them, AUROC with its stratified bootstrap interval, and
``vs_group_prior``: AUROC minus that of a score knowing only the reply's demographic, paired
bootstrap). Target of the issue: AUROC lower bound above 0.75 and ``vs_group_prior`` interval above 0.

Variants (an experiment: the shipped head and the figures file are not changed):

- ``shipped``: the shipped head as it is (trained on the first batch's dev halves only);
- ``retrained_enlarged_dev``: the same inputs, L2 strength and class weighting (the shipped
  record's choice, not re-selected), refitted with the training script's functions on the holistic
  dev half plus the ENLARGED community dev half; the shipped ToxiGen sub-head is reused;
- ``retrained_community_dev_only``: as above, on the enlarged community dev half alone (in-domain).

AUROC and ``vs_group_prior`` do not depend on the decision threshold; the refitted heads keep the
shipped threshold logit, so their at-threshold figures (balanced accuracy, per-group error rates)
are not tuned and are recorded only for completeness. Labels were made by language-model annotators.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


class MemoEncoder:
    """The sentence encoder with every text's embedding kept, so each text is encoded once."""

    def __init__(self, encoder):
        self.encoder, self.name, self.memo = encoder, encoder.name, {}

    def encode(self, texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if new:
            for t, e in zip(new, np.asarray(self.encoder.encode(new), dtype=np.float64), strict=True):
                self.memo[t] = e
        return np.array([self.memo[t] for t in texts])


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _summary(skill: dict) -> dict:
    vs = skill.get("vs_group_prior") or {}
    own = (skill.get("by_source") or {}).get("embedded") or {}
    return {"auroc": skill["value"], "auroc_ci": skill["ci"], "n": skill["n"], "n_positive": skill["n_positive"],
            "vs_group_prior": vs.get("value"), "vs_group_prior_ci": vs.get("ci"),
            "balanced_accuracy_at_threshold": skill.get("balanced_accuracy"),
            "target_met": bool(skill["ci"] is not None and skill["ci"][0] > 0.75 and vs.get("ci") is not None
                               and vs["ci"][0] > 0),
            # the fine-tunes' blunt replies are easier: the figure on the embedded model's own replies
            "embedded_model_only": {"auroc": own.get("value"), "auroc_ci": own.get("ci"), "n": own.get("n"),
                                    "n_positive": own.get("n_positive"),
                                    "target_met": bool(own.get("ci") and own["ci"][0] > 0.75)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "toxicity_skill_attempts.json")
    args = ap.parse_args(argv)

    from biaslens.scorers.card import mask_rows, measure_skill, real_output_test
    from biaslens.scorers.styles import default_encoder
    from biaslens.scorers.toxicity_head import ToxicityHead, fit_binary, head_features, raw_features

    t0 = time.perf_counter()
    enc = MemoEncoder(default_encoder())
    head = ToxicityHead(encoder=enc)
    c = float(head.record["C"])

    def train_rows(task: str, field: str) -> tuple[list[str], np.ndarray]:
        role = "offensiveness" if task == "holistic" else "toxicity"
        rows, _, _ = real_output_test(role, split="dev")
        rows = rows or []
        return mask_rows(rows), np.array([int(r[field]) for r in rows])

    def refit(tasks: tuple[tuple[str, str], ...]):
        texts, ys = zip(*(train_rows(t, f) for t, f in tasks), strict=True)
        raw = raw_features([t for ts in texts for t in ts], enc, head.subheads)
        y = np.concatenate(ys)
        scalars = [f for f in head.features if f != "embedding"]
        cols = np.column_stack([raw[s] for s in scalars])
        mean, std = cols.mean(axis=0), cols.std(axis=0) + 1e-12  # as the training script standardises
        w, b = fit_binary(head_features(raw, head.features, mean, std), y, c)

        def probability(masked: list[str]) -> np.ndarray:
            x = head_features(raw_features(masked, enc, head.subheads), head.features, mean, std)
            return 1.0 / (1.0 + np.exp(-(x @ w + b - head.threshold_logit)))
        return probability, {"n_train": int(len(y)), "n_train_positive": int(y.sum())}

    variants: dict[str, dict] = {}
    shipped = measure_skill("toxicity", lambda rows: head.probability(mask_rows(rows)))
    variants["shipped"] = {"what": f"the shipped head as it is: {head.kind}", **_summary(shipped)}
    print(f"shipped: {variants['shipped']}", file=sys.stderr, flush=True)
    for name, tasks, what in (
            ("retrained_enlarged_dev", (("holistic", "offensive"), ("community", "toxic")),
             "the shipped head's inputs, C and class weighting refitted on the holistic dev half plus the enlarged "
             "community dev half (both labelled batches; unresolved labels left out)"),
            ("retrained_community_dev_only", (("community", "toxic"),),
             "the shipped head's inputs, C and class weighting refitted on the enlarged community dev half alone")):
        predict, counts = refit(tasks)
        skill = measure_skill("toxicity", lambda rows, p=predict: p(mask_rows(rows)))
        variants[name] = {"what": what, **counts, **_summary(skill)}
        print(f"{name}: {variants[name]}", file=sys.stderr, flush=True)

    met = [n for n, v in variants.items() if v["target_met"]]
    record = {
        "what": "AUROC and skill against the group-only score (vs_group_prior) of toxicity-head variants on the "
                "community labelled TEST half (all three batches: the embedded model's replies and two community fine-tunes'; "
                "labelled by language-model annotators), replies masked "
                "as the runs mask them; computed with biaslens.scorers.card.measure_skill",
        "written_by": "benchmarks/toxicity_skill_attempts.py",
        "measured_on": time.strftime("%Y-%m-%d"),
        "cpu": f"{_cpu()}, {__import__('os').cpu_count()} cores",
        "target": "AUROC 95% interval lower bound above 0.75 and vs_group_prior 95% interval above 0",
        "target_met_by": met,
        "seconds": round(time.perf_counter() - t0, 1),
        "variants": variants,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}; target met by: {met or 'none'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
