"""The scorer-card section every generation-judging report carries (cards from
:mod:`biaslens.scorers.card`)."""

from __future__ import annotations

import pandas as pd

from biaslens.report.html import Figure, Section, Table, figure_from_matplotlib, subplots
from biaslens.scorers.card import card_note, skill_caveat, skill_text
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


def per_group_table(card: dict) -> pd.DataFrame:
    """Per group: replies, positives, false-positive and false-negative rates with 95% Wilson
    intervals (the counts behind them), mean score. A multi-class card (a style judge, with its
    ``error_class``): replies, accuracy with its 95% Wilson interval, the rate at which it gives its
    commonest wrong cluster to replies labelled otherwise, and the cluster whose share it shifts most."""
    rows = []
    err = card.get("error_class")
    for g, r in (card.get("per_group") or {}).items():
        row = {card.get("group_field") or "group": g, "replies": r["n"]}
        if "accuracy" in r:
            row["accuracy (95% Wilson)"] = _ci(r["accuracy"], r["accuracy_ci"]) + f" [{r['n_correct']}/{r['n']}]"
        if err is not None:
            row[f"'{err}' given to replies labelled otherwise (95% Wilson)"] = _ci(
                r.get("false_positive_rate"), r.get("false_positive_ci")) + (
                f" [{r['n_false_positive']}/{r['n'] - r['n_positive']}]" if r.get("false_positive_rate") is not None else "")
            share = r.get("share_difference") or {}
            top = max(share, key=lambda c: abs(share[c]), default=None)
            row["largest shift in a cluster's share (judge - labelled)"] = "–" if top is None else f"{top} {share[top]:+.2f}"
            rows.append(row)
            continue
        row |= {"labelled positive": r["n_positive"],
                "false-positive rate (95% Wilson)": _ci(r["false_positive_rate"], r["false_positive_ci"])
                + (f" [{r['n_false_positive']}/{r['n'] - r['n_positive']}]" if r["false_positive_rate"] is not None else ""),
                "false-negative rate (95% Wilson)": _ci(r["false_negative_rate"], r["false_negative_ci"])
                + (f" [{r['n_false_negative']}/{r['n_positive']}]" if r["false_negative_rate"] is not None else ""),
                "mean score": round(r["mean_score"], 3)}
        rows.append(row)
    return pd.DataFrame(rows)


def _group_rate(card: dict) -> tuple[str, str]:
    """The per-group rate the picture shows, and its axis label: a multi-class card's accuracy, else
    the false-positive rate at the threshold."""
    if card.get("error_class"):
        return "accuracy", "accuracy of the top cluster (95% Wilson)"
    return "false_positive_rate", f"false-positive rate at {card['skill'].get('threshold', 0.5):g} (95% Wilson)"


def per_group_figure(card: dict) -> Figure | None:
    """The false-positive rate of each group (a style card: the accuracy) with its 95% Wilson
    interval: where a judge flags one group's harmless replies more than another's, or sorts one
    group's replies worse, it makes a gap of its own."""
    rate, label = _group_rate(card)
    ci = rate.replace("_rate", "") + "_ci"
    per = {g: r for g, r in (card.get("per_group") or {}).items() if r.get(rate) is not None}
    if len(per) < 2:
        return None
    names = sorted(per, key=lambda g: per[g][rate])
    fig, ax = subplots(figsize=(6, 0.25 * len(names) + 1.2))
    y = range(len(names))
    value = [per[g][rate] for g in names]
    # rounding can put a Wilson bound a hair inside the rate at 0 or 1
    lo = [max(0.0, per[g][rate] - per[g][ci][0]) for g in names]
    hi = [max(0.0, per[g][ci][1] - per[g][rate]) for g in names]
    ax.errorbar(value, list(y), xerr=[lo, hi], fmt="o", color="#444", capsize=2)
    ax.set_yticks(list(y), names)
    ax.set_xlabel(label)
    ax.set_xlim(0, 1)
    return figure_from_matplotlib(fig, f"{card['role']} ({card['used']}): {label.split(' (')[0]} per "
                                  f"{card.get('group_field') or 'group'}", card.get("group_verdict") or "")


def scorer_card_section(cards: list[dict]) -> Section:
    """One column per classifier: kind, why it was used, skill on the labelled real-output test
    replies (headline vs baseline, plain vs majority accuracy, verdict), identity gap unmasked and
    masked; then per-class precision/recall for each."""
    rows, tables, figures = [], [], []
    for c in cards:
        skill = c.get("skill") or {"status": "not measured", "reason": "older run"}
        row = {"classifier": c["used"], "kind": c["kind"], "chosen because": c.get("why", "–"),
               "skill on labelled real output (test split)": skill_text(skill),
               "verdict": c.get("skill_verdict") or "–", "measured on": c.get("measured_on") or "–",
               "errors per group; vs a score that knows only the group": c.get("group_verdict") or "not measured"}
        if c.get("own_text_verdict"):
            row["on the method's own text"] = c["own_text_verdict"]
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
        if c.get("per_group"):
            rate = _group_rate(c)[0]
            test = (c.get("per_group_test") or {}).get(rate) or {}
            tables.append(Table(f"{c['role']} ({c['used']}): errors per {c.get('group_field') or 'group'} on the "
                                f"{skill['set']} real-output test split", per_group_table(c),
                                (c.get("group_verdict") or "") + (f" Test of equal {'accuracy' if rate == 'accuracy' else 'false-positive rates'}: "
                                f"{test['test']}, statistic {test['statistic']:.1f} on {test['df']} df, "
                                f"p = {test['p_value']:.3g}." if test.get("p_value") is not None else "")))
            fig = per_group_figure(c)
            if fig is not None:
                figures.append(fig)
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
                 "masked numbers do, on held-out sentences naming identities in other forms (plurals, nouns, "
                 "compounds, other spellings, two identities; masker version 2 was written after seeing them) and on "
                 "real replies with their identity swapped into other spellings and compounds (docs/scorers.md).")
    return Section("Scorer card", text, tables=[Table("Classifiers", wide), *tables], figures=figures)


def caveat_lead(cards: list[dict]) -> str:
    """The judges' no-skill caveat that opens a section's text, with its space ("" when every judge
    showed measured skill)."""
    caveat = skill_caveat(cards)
    return caveat + " " if caveat else ""


def scorer_validity(cards: list[dict]) -> dict[str, str]:
    """A section's overview facts about its scorers: '<role> scorer validity' -> its card's note."""
    return {f"{c['role']} scorer validity": card_note(c) for c in cards}


def scorer_notes(cards: list[dict]) -> str:
    """The scorers' card notes in one caption, for a table of their scores."""
    return "; ".join(card_note(c) for c in cards)
