"""The scorer-card section every generation-judging report carries (cards from
:mod:`biaslens.scorers.card`)."""

from __future__ import annotations

import pandas as pd

from biaslens.report.html import Section, Table
from biaslens.scorers.card import skill_text
from biaslens.scorers.labelled import LABELLED_BY
from biaslens.text import plural


def _ci(v, ci) -> str:
    return "–" if v is None else f"{v:.2f} ({ci[0]:.2f}-{ci[1]:.2f})"


def per_class_table(skill: dict) -> pd.DataFrame:
    """Precision and recall per class with 95% Wilson intervals and the counts behind them."""
    return pd.DataFrame([{"class": k, "precision (95% Wilson)": _ci(v["precision"], v["precision_ci"]),
                          "recall (95% Wilson)": _ci(v["recall"], v["recall_ci"]), "labelled": v["n_true"],
                          "predicted": v["n_predicted"], "correct": v["n_correct"]}
                         for k, v in (skill.get("per_class") or {}).items()])


def scorer_card_section(cards: list[dict]) -> Section:
    """One column per classifier: kind, why it was used, skill on the labelled real-output test
    replies (headline vs baseline, plain vs majority accuracy, verdict), identity gap unmasked and
    masked; then per-class precision/recall for each."""
    rows, tables = [], []
    for c in cards:
        skill = c.get("skill") or {"status": "not measured", "reason": "older run"}
        row = {"classifier": c["used"], "kind": c["kind"], "chosen because": c.get("why", "–"),
               "skill on labelled real output (test split)": skill_text(skill),
               "verdict": c.get("skill_verdict") or "–"}
        if "skill_unmasked" in c and c.get("masking"):
            row["skill with identity words unmasked"] = skill_text(c["skill_unmasked"])
        a = c.get("identity_audit")
        if a:
            row["identity gap (unmasked)"] = (f"{a['gap']:.3f} ('{a['highest']}' {a['highest_mean']:.2f} vs "
                                              f"'{a['lowest']}' {a['lowest_mean']:.2f})")
            row["identity gap (masked)"] = f"{a['gap_masked']:.3f}" + (
                "" if "meets_masked_target" not in a else
                f" (target {a['masked_target']:.2f}: {'met' if a['meets_masked_target'] else 'NOT met'}; "
                f"unmasked on the same sentences {a['gap_unmasked']:.3f})")
        row["scores in this report"] = "identity words masked" if c.get("masking") else "UNMASKED (paper-faithful)"
        rows.append(row)
        if skill.get("per_class"):
            tables.append(Table(f"{c['role']} ({c['used']}): per-class precision and recall on the {skill['set']} "
                                "real-output test split", per_class_table(skill),
                                f"{plural(skill['n'], 'reply', 'replies')} the embedded model generated to the {skill['set']} prompts, "
                                f"labelled '{skill['field']}' by {LABELLED_BY} (blind, adjudicated); "
                                f"{plural(skill['n_unresolved'], 'unresolved label')} left out."))
    wide = pd.DataFrame(rows).T.reset_index()
    wide.columns = ["", *[c["role"] for c in cards]]
    audit = next((c["identity_audit"] for c in cards if c.get("identity_audit")), None)
    text = ("Which classifiers judged the generated text and how far to trust them. Skill: measured only on the "
            "held-out TEST half of replies the embedded model generated to this suite's own prompts, labelled blind by "
            f"{LABELLED_BY}, not people (src/biaslens/scorers/data/real_output/README.md, docs/scorers.md). The headline is "
            "chance-corrected (balanced accuracy, baseline 1/K, for classes; AUROC, baseline 0.5, for scores) and "
            "stands beside the accuracy of always giving the most common label. Where its interval reaches the "
            "baseline the judge showed NO MEASURED SKILL, and the numbers built on it cannot be read as the "
            "model's bias.")
    if audit:
        text += (f" Identity gap: the largest difference between two identity terms' mean scores in "
                 f"{plural(audit['n_terms'], 'term')} x {plural(len(audit['templates']), 'otherwise identical neutral sentence')} "
                 f"(warning above {audit['threshold']:.2f}); masked: the largest gap after masking as the report's "
                 "masked numbers do, on held-out sentences naming identities in forms the masker was not written "
                 "from (plurals, nouns, compounds, other spellings, two identities) and on real replies with their "
                 "identity swapped (docs/scorers.md).")
    return Section("Scorer card", text, tables=[Table("Classifiers", wide), *tables])
