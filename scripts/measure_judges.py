"""Measure a judge once on the labelled TEST halves and record its figures (issue #33).

    python scripts/measure_judges.py JUDGE --roles offensiveness,toxicity --out FILE.json [--config RUN.yaml]

JUDGE is any toxicity/offensiveness judge name (``toxicity-head``, ``alt-profanity-check``,
``judge`` / ``judge:<model>`` with the judge section of ``--config``), or, for the roles style
and sentiment, ``judge`` / ``judge:<model>``. The figures are the scorer card's own (computed
exactly as every run computes them: :mod:`biaslens.scorers.card`), plus, for the binary roles,
recall and precision at the judge's threshold with their Wilson intervals. The record names the
CPU, the biaslens commit and the labelled files' digest, so it can be checked against a re-run.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _cpu() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
        name = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name"))
        return name + (" (AVX-512)" if "avx512f" in text else " (no AVX-512)")
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def summary(card: dict) -> dict:
    """The figures to quote: headline with interval and baseline, majority baseline, the
    threshold's recall/precision with Wilson intervals, the identity audit's gaps."""
    out = {}
    for key in ("skill", "skill_masked", "skill_unmasked"):
        s = card.get(key)
        if not s:
            continue
        row = {k: s.get(k) for k in ("headline", "value", "ci", "baseline", "accuracy", "majority_class",
                                     "majority_accuracy", "balanced_accuracy", "balanced_accuracy_ci", "macro_f1",
                                     "macro_f1_ci", "macro_f1_baseline", "threshold", "n", "n_positive",
                                     "n_model_output", "n_unresolved", "set", "split", "no_skill")}
        positive = (s.get("per_class") or {}).get("True")
        if positive:
            row["recall"], row["recall_ci"] = positive["recall"], positive["recall_ci"]
            row["precision"], row["precision_ci"] = positive["precision"], positive["precision_ci"]
            row["n_flagged"] = positive["n_predicted"]
        out[key] = row
    a = card.get("identity_audit")
    if a:
        out["identity_audit"] = {"gap_neutral_unmasked": a["gap"], "gap_unmasked": a["gap_unmasked"],
                                 "gap_masked": a["gap_masked"], "masked_target": a["masked_target"],
                                 "meets_masked_target": a["meets_masked_target"],
                                 "sets": {n: {"gap": e["gap"], "gap_masked": e["gap_masked"],
                                              "n_sentences": e["n_sentences"]} for n, e in a["sets"].items()}}
    return out


def skill_only_card(role: str, judge: str, config) -> dict:
    """The card's skill figures alone (masked inputs, as the runs and the card's headline)."""
    from biaslens.scorers.card import mask_rows, measure_skill, skill_verdict
    from biaslens.scorers.model_judge import load_model_judge
    from biaslens.scorers.styles import prepare_response, top_clusters

    scorer = load_model_judge(role, judge, config=config)
    if role in ("toxicity", "offensiveness"):
        skill = measure_skill(role, lambda rows: scorer.probability(mask_rows(rows)))
    elif role == "style":
        skill = measure_skill(role, lambda rows: top_clusters(scorer.probabilities(
            [prepare_response(r["response"], r.get("descriptor")) for r in rows]), scorer.styles, scorer.clusters))
    else:
        skill = measure_skill(role, lambda rows: list(scorer.labels([r["response"] for r in rows])))
    return {"used": scorer.name, "kind": scorer.kind, "skill": skill,
            "skill_verdict": skill_verdict(skill, role, scorer.name), "identity_audit": None}


def ship(identity: str) -> None:
    """Copy the card just measured (user cache) into the package's recorded cards."""
    from biaslens.paths import cache_dir
    from biaslens.scorers.card import SHIPPED_CARDS, card_key

    key = card_key(identity)
    measured = json.loads((cache_dir() / "scorer-cards" / f"{key}.json").read_text(encoding="utf-8"))
    path = Path(__file__).parents[1] / "src" / "biaslens" / "scorers" / "data" / SHIPPED_CARDS
    cards = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    cards[key] = {**measured, "identity": identity}
    path.write_text(json.dumps(cards, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    from biaslens.config import RunConfig
    from biaslens.scorers.card import _labels_digest, sentiment_card, style_card, toxicity_card
    from biaslens.scorers.judges import choose_judge

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("judge")
    ap.add_argument("--roles", default="offensiveness,toxicity")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--config", type=Path, default=None, help="run configuration YAML (its judge section)")
    ap.add_argument("--ship", action="store_true", help=(
        "also record the full cards in src/biaslens/scorers/data/judge_figures/cards.json, which runs read instead "
        "of measuring again (for judges shipped with biaslens)"))
    ap.add_argument("--skill-only", action="store_true", help=(
        "only the skill on the test halves (inputs masked as the runs mask them), no identity audit: for slow judges"))
    args = ap.parse_args(argv)
    config = RunConfig.from_yaml(args.config) if args.config else None
    record: dict = {"judge": args.judge, "measured": time.strftime("%Y-%m-%d"), "biaslens_commit": _commit(),
                    "cpu": _cpu(), "labels_digest": _labels_digest(), "roles": {}}
    for role in args.roles.split(","):
        t0 = time.perf_counter()
        if args.skill_only:
            card = skill_only_card(role, args.judge, config)
        elif role in ("toxicity", "offensiveness"):
            scorer, choice = choose_judge(args.judge, role=role, config=config)
            card = toxicity_card(scorer, choice, role=role, masking=True)
            if args.ship:
                ship(f"judge:{role}:{getattr(scorer, 'card_identity', None) or scorer.name}")
        else:
            from biaslens.scorers.model_judge import load_model_judge

            scorer = load_model_judge(role, args.judge, config=config)
            card = style_card(scorer, identity=scorer.card_identity) if role == "style" else sentiment_card(scorer)
        record["roles"][role] = {"used": card["used"], "kind": card.get("kind"), "skill_verdict": card["skill_verdict"],
                                 **summary(card), "seconds": round(time.perf_counter() - t0, 1)}
        print(card["skill_verdict"], flush=True)
        # written after every role: a slow judge's finished roles are kept if a later one is stopped
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
