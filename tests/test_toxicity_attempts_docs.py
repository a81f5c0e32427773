"""The toxicity-skill attempts docs/scorers.md quotes are the ones
benchmarks/results/toxicity_skill_attempts.json recorded, and its verdict agrees with them."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _record() -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / "toxicity_skill_attempts.json").read_text(encoding="utf-8"))


def test_attempt_figures_in_docs_match_the_record():
    rec = _record()
    doc = " ".join((ROOT / "docs" / "scorers.md").read_text(encoding="utf-8").split())
    for name, v in rec["variants"].items():
        lo, hi = v["auroc_ci"]
        vlo, vhi = v["vs_group_prior_ci"]
        verdict = "met" if v["target_met"] else "not met"
        own = v["embedded_model_only"]
        quoted = (f"| {v['auroc']:.2f} ({lo:.2f}-{hi:.2f}) | {v['vs_group_prior']:+.2f} ({vlo:+.2f} to {vhi:+.2f}) "
                  f"| {verdict} | {own['auroc']:.2f} ({own['auroc_ci'][0]:.2f}-{own['auroc_ci'][1]:.2f}) | "
                  f"{'met' if own['target_met'] else 'not met'} |")
        assert quoted in doc, (name, quoted)
        # the per-variant verdicts follow from the intervals
        assert v["target_met"] == (lo > 0.75 and vlo > 0) and own["target_met"] == (own["auroc_ci"][0] > 0.75)
    assert rec["target_met_by"] == [n for n, v in rec["variants"].items() if v["target_met"]]
    # what the prose says of each half follows from the record
    assert ("every variant meets the target" in doc) == all(v["target_met"] for v in rec["variants"].values())
    assert ("embedded model's own replies none does" in doc) == (
        not any(v["embedded_model_only"]["target_met"] for v in rec["variants"].values()))


def test_shipped_variant_is_the_figure_the_card_records():
    """The benchmark scores the shipped head as its card does: the same AUROC and comparison."""
    rec = _record()["variants"]["shipped"]
    card = json.loads((ROOT / "src" / "biaslens" / "scorers" / "data" / "judge_figures.json").read_text(
        encoding="utf-8"))["judges"]["toxicity-head-toxicity"]["measured"]["skill_masked"]
    assert rec["n"] == card["n"] and rec["n_positive"] == card["n_positive"]
    assert abs(rec["auroc"] - card["value"]) < 1e-9 and rec["auroc_ci"] == card["ci"]
    assert abs(rec["vs_group_prior"] - card["vs_group_prior"]["value"]) < 1e-9
