"""Report of the BOLD suite: per-group sentiment (the paper's shares), toxicity and gender
polarity per domain, the gaps between groups with page-level intervals, the noise floor, the
scorer cards, what could not run offline, and its section of ``biaslens compare``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens import __version__
from biaslens.report.html import Section, Table, figure_from_matplotlib, intervals, render_report, subplots
from biaslens.report.scorer_card import caveat_lead, scorer_card_section, scorer_notes, scorer_validity
from biaslens.scorers.card import card_warnings
from biaslens.text import decoding_in_words, model_name, model_names


def group_table(g: pd.DataFrame) -> pd.DataFrame:
    """The per-group scores as shown (shares in %)."""
    out = g[["model", "domain", "group"]].copy()
    out["pages / prompts"] = [f"{a:,} / {b:,}" for a, b in zip(g["n_pages"], g["n_prompts"])]
    out["model"] = out["model"].map(model_name)
    if out["model"].nunique() == 1:  # one model: its name is the page's title, and the column pushed the table past 1280 px
        out = out.drop(columns="model")
    for col, name in (("sentiment_mean", "sentiment, mean"), ("positive_share", "positive, %"),
                      ("negative_share", "negative, %"), ("toxicity_mean", "toxicity, mean"),
                      ("toxic_share", "toxic, %"), ("male_share", "male-leaning, %"),
                      ("female_share", "female-leaning, %")):
        if col in g:
            out[name] = g[col].round(3) if col.endswith("mean") else (100 * g[col]).round(1)
    return out


def gap_table(gaps: pd.DataFrame, n: int = 40) -> pd.DataFrame:
    """The largest gaps (by |gap|) with each pair's interval at its Holm step level (excluding 0
    exactly when Holm rejects it), the simultaneous interval, Holm p and the pages they rest on."""
    top = gaps.loc[gaps["gap"].abs().sort_values(ascending=False, na_position="last").index[:n]]
    return pd.DataFrame({"model": top["model"].map(model_name), "score": top["score"], "domain": top["domain"],
                         "a - b": top["group_a"] + " - " + top["group_b"], "gap": top["gap"].round(4),
                         "gap CI at Holm's level": intervals(top["ci_low_holm"], top["ci_high_holm"]),
                         "simultaneous 95% CI": intervals(top["ci_low_simultaneous"], top["ci_high_simultaneous"]),
                         "p (Holm)": top["p_holm"], "pages a / b": [f"{int(a)} / {int(b)}" for a, b in
                                                                     zip(top["n_pages_a"], top["n_pages_b"])]})


def sentiment_figure(g: pd.DataFrame):
    """Mean VADER compound per group, one panel per domain (first model)."""
    first = g[g["model"] == g["model"].iloc[0]]
    domains = list(dict.fromkeys(first["domain"]))
    fig, axes = subplots(1, len(domains), figsize=(3.2 * len(domains) + 1, 4.2), squeeze=False)
    for ax, d in zip(axes[0], domains):
        sub = first[first["domain"] == d]
        y = np.arange(len(sub))
        v = sub["sentiment_mean"].to_numpy(dtype=float)
        ax.barh(y, v, color=np.where(v >= 0, "#4f81bd", "#c0504d"))
        ax.set_yticks(y, [str(x).replace("_", " ")[:22] for x in sub["group"]], fontsize=7)
        ax.axvline(0, color="#333", lw=0.8)
        ax.set_title(d.replace("_", " "), fontsize=9)
        ax.invert_yaxis()
    return figure_from_matplotlib(fig, "Mean sentiment per group (VADER compound)",
                                  "Per domain, the mean VADER compound of the continuations of each group's prompts.")


def render(analysis: dict[str, Any], metrics: dict[str, Any], *, run_record: dict[str, Any]) -> str:
    """The whole report.html of a BOLD run."""
    cards = metrics.get("scorer_cards") or []
    g, gaps = analysis["groups"], analysis["gaps"]
    gen = run_record.get("generation") or {}
    masked = metrics.get("toxicity_masking")
    floors = "; ".join(f"{model_name(m)} {s}: largest |gap| {f['observed']:.3g}, permuted mean {f['permuted_mean']:.3g}, "
                       f"p = {f['p_value']:.3g}" for m, fs in (metrics.get("noise_floors") or {}).items()
                       for s, f in fs.items() if f.get("n_permutations"))
    sections = [Section(
        "BOLD: how the model continues sentences about people (Dhamala et al. 2021)",
        caveat_lead(cards) +
        "Each prompt is the first words of a Wikipedia sentence about a person (or, for religious and political "
        "ideologies, about the ideology); the model continues it and each continuation (without the prompt) is "
        "scored: VADER compound sentiment (the paper's: >= 0.5 positive, <= -0.5 negative), toxicity "
        f"({'identity words, the group and the person masked' if masked else 'unmasked'}), and gender polarity by "
        "counting gendered words. Groups are compared within a domain; a person's page gives several prompts, so "
        "the page is the unit of the intervals and tests (cluster-robust, Bell-McCaffrey df), Holm over all pairs, "
        "and the largest gap carries an interval valid for having been picked out of all pairs. The noise floor "
        "is the largest gap when the pages' group labels are shuffled within each domain.",
        metrics={"models": model_names(metrics.get("models")), "prompts": metrics.get("n_prompts"),
                 "prompts in the paper": metrics.get("paper_prompt_count"), "pages": metrics.get("n_pages"),
                 "selection": (metrics.get("source") or {}).get("selection"),
                 "decoding": decoding_in_words(gen.get("params")),
                 **scorer_validity(cards),
                 "noise floor": floors or "not computed"},
        figures=[sentiment_figure(g)] if len(g) and "sentiment_mean" in g else [],
        tables=[Table("Per group", group_table(g), scorer_notes(cards), max_rows=200)])]
    sections.append(Section(
        "Gaps between groups of a domain", "The largest gaps of all pairs of groups within a domain, per score. Each "
        "pair's interval is at its Holm step level (Holm over the model's pairs of that score; level_holm in the gaps "
        "table), so it excludes 0 exactly when the Holm p is below 0.05; the simultaneous interval holds for all "
        "pairs at once.",
        tables=[Table("Largest gaps", gap_table(gaps))]))
    if cards:
        sections.append(scorer_card_section(cards))
    sections.append(Section(
        "What the paper also measured and this run could not",
        "Offline runs cannot compute these; their numbers are not estimated from anything else.",
        tables=[Table("Not computed", pd.DataFrame({"metric": list(metrics.get("not_computed") or {}),
                                                     "why": list((metrics.get("not_computed") or {}).values())}))]))
    for key, title in (("most_negative", "Most negative continuations"), ("most_toxic", "Most toxic continuations")):
        ex = analysis.get(key)
        if ex is not None and len(ex):
            sections.append(Section(title, tables=[Table(title, ex.assign(model=ex["model"].map(model_name)))]))
    model = run_record.get("model") or {}
    run = {"suite": "bold", "model": metrics.get("model"), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__,
           "details": {k: v for k, v in model.items() if k in ("backend", "kind", "dtype", "weights_hash")}}
    return render_report(title=f"BOLD: {metrics.get('model')}", run=run, sections=sections,
                         warnings=card_warnings(cards))


def compare_section(entries, changes: dict[str, dict[str, Any]]) -> tuple[list[Section], dict[str, Any]]:
    """``biaslens compare``: each model's mean sentiment and toxicity per group, its largest gaps
    with their simultaneous intervals and noise floors, and ``changes`` (each later model's
    headline against the first, decided in :mod:`biaslens.methods.bold.comparison`)."""
    rows, heads, largest = [], [], {}
    for e in entries:
        m = e.metrics["bold"]
        for r in m.get("groups") or []:
            rows.append({"model": e.label, "domain": r["domain"], "group": r["group"],
                         "sentiment, mean": r.get("sentiment_mean"), "toxicity, mean": r.get("toxicity_mean"),
                         "pages": r.get("n_pages")})
        for x in m.get("entries") or []:
            heads.append({"model": e.label, "metric": x["name"], "value": x["value"],
                          "simultaneous 95% CI": intervals([x["ci_low"]], [x["ci_high"]])[0],
                          "noise floor": x.get("reference"), "verdict": x.get("verdict")})
        for label, v in (m.get("largest_sentiment_gap") or {}).items():
            largest[e.label if len(m.get("largest_sentiment_gap")) == 1 else f"{e.label} ({label})"] = v
    wide = pd.DataFrame(rows).pivot_table(index=["domain", "group"], columns="model", values="sentiment, mean",
                                          sort=False).reset_index() if rows else pd.DataFrame()
    intro = ("Largest gaps between groups (simultaneous intervals, page-level) and each group's mean sentiment per "
             "model." + (" The headline gap of each model against the first (a change only where the two runs' "
                         "intervals do not overlap, and only for runs of the same pages, decoding and judge): "
                         + "; ".join(f"{k}: {v['verdict']}" + (f" ({v['reason']})" if v.get("reason") else "")
                                     for k, v in changes.items()) if changes else ""))
    return [Section("BOLD per model", intro,
                    tables=[Table("Largest gaps per model", pd.DataFrame(heads)),
                            Table("Mean sentiment per group and model", wide, max_rows=100)])], \
        {"largest_sentiment_gap": largest, "vs_first": changes}
