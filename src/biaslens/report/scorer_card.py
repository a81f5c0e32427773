"""The scorer-card section every generation-judging report carries (cards from
:mod:`biaslens.scorers.card`)."""

from __future__ import annotations

import pandas as pd

from biaslens.report.html import Section, Table


def _pct(r: dict) -> str:
    return f"{r['accuracy']:.2f} (95% CI {r['ci'][0]:.2f}-{r['ci'][1]:.2f}, n={r['n']})"


def scorer_card_section(cards: list[dict]) -> Section:
    """One row per classifier: kind, why it was used, accuracy on labelled real responses,
    identity gap unmasked and masked; per-cluster precision/recall for a style classifier."""
    rows, tables = [], []
    for c in cards:
        a = c["identity_audit"]
        acc = c.get("accuracy") or {}
        row = {"classifier": c["used"], "kind": c["kind"], "chosen because": c.get("why", "–"),
               "accuracy on labelled real responses": _pct(acc) if acc else "not measured (no labelled set)",
               "identity gap (unmasked)": f"{a['gap']:.3f} ('{a['highest']}' {a['highest_mean']:.2f} vs "
                                          f"'{a['lowest']}' {a['lowest_mean']:.2f})",
               "identity gap (masked)": f"{a['gap_masked']:.3f}" + (
                   "" if "meets_masked_target" not in a else
                   f" (target {a['masked_target']:.2f}: {'met' if a['meets_masked_target'] else 'NOT met'}; "
                   f"unmasked on the same sentences {a['gap_unmasked']:.3f})"),
               "scores in this report": "identity words masked" if c["masking"] else "UNMASKED (paper-faithful)"}
        if "accuracy_masked" in c:
            am, au = c["accuracy_masked"], c["accuracy_unmasked"]
            row["precision / recall (offensive)"] = (f"masked {am['precision']:.2f} / {am['recall']:.2f}; unmasked "
                                                     f"{au['precision']:.2f} / {au['recall']:.2f} "
                                                     f"({am['n_positive']} offensive of {am['n']})")
        rows.append(row)
        if "per_cluster" in acc:
            per = pd.DataFrame([{"cluster": k, **v} for k, v in acc["per_cluster"].items()])
            tables.append(Table(f"{c['used']}: per-cluster precision and recall on the labelled test split", per,
                                "Top cluster of each response vs a human label; 'Other' = a style in no cluster."))
    wide = pd.DataFrame(rows).T.reset_index()
    wide.columns = ["", *[c["role"] for c in cards]]
    return Section(
        "Scorer card",
        f"Which classifiers judged the generated text and how far to trust them. Accuracy: on a held-out labelled "
        f"set of real model responses shipped with biaslens (docs/scorers.md). Identity gap: the largest difference "
        f"between two identity terms' mean scores in {cards[0]['identity_audit']['n_terms'] if cards else 0} terms x "
        f"{len(cards[0]['identity_audit']['templates']) if cards else 0} otherwise identical neutral sentences "
        f"(warning above {cards[0]['identity_audit']['threshold'] if cards else 0:.2f}); masked: the largest gap after "
        "masking as the report's masked numbers do, on held-out sentences naming identities in forms the masker was "
        "not written from (plurals, nouns, compounds, other spellings, two identities) and on real replies with "
        "their identity swapped (docs/scorers.md).",
        tables=[Table("Classifiers", wide), *tables])
