"""Report of the counterfactual suite: the verdict per axis, the gaps between groups with their
intervals, FairPair's B/V/F and LangFair's metrics beside them, the continuations of the largest
gaps side by side (HTML-escaped by the report framework), the variants and the skipped prompts."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens import __version__
from biaslens.report.html import Section, Table, intervals, render_report
from biaslens.report.scorer_card import caveat_lead, scorer_card_section, scorer_notes, scorer_validity
from biaslens.scorers.card import card_warnings
from biaslens.text import decoding_in_words, model_name, model_names


def gap_table(gaps: pd.DataFrame) -> pd.DataFrame:
    """Every pair's gap with its Holm-agreeing interval, Holm p, detectable size and verdict."""
    if gaps.empty:
        return gaps
    return pd.DataFrame({"model": gaps["model"].map(model_name), "axis": gaps["axis"], "score": gaps["score"],
                         "a - b": gaps["group_a"] + " - " + gaps["group_b"], "gap": gaps["gap"].round(4),
                         "level": gaps["level"].round(4), "CI": intervals(gaps["ci_low"], gaps["ci_high"]),
                         "p (Holm)": gaps["p_holm"], "detectable": gaps["detectable"].round(4),
                         "verdict": gaps["verdict"].str.replace("_", " "), "prompts": gaps["n_prompts"]})


def side_by_side(ex: dict[str, Any]) -> Table:
    """One largest gap's prompt: the two variants' continuations, sample by sample."""
    a, b = ex["a"], ex["b"]
    n = max(len(a["responses"]), len(b["responses"]))

    def col(side: dict, key: str) -> list:
        return [side[key][i] if i < len(side[key]) else "" for i in range(n)]

    df = pd.DataFrame({"sample": range(n), f"{a['group']}: continuation": col(a, "responses"),
                       f"{a['group']}: {ex['score']}": col(a, "scores"),
                       f"{b['group']}: continuation": col(b, "responses"), f"{b['group']}: {ex['score']}": col(b, "scores")})
    return Table(f"{model_name(ex['model'])}, {ex['axis']}, {ex['score']} gap {ex['gap']:+.3f}: prompt {ex['prompt_id']}",
                 df, f"{a['group']}: {a['prompt']} | {b['group']}: {b['prompt']}")


def render(analysis: dict[str, Any], metrics: dict[str, Any], *, run_record: dict[str, Any]) -> str:
    """The whole report.html of a counterfactual run (a dry run shows the variants only)."""
    cards = metrics.get("scorer_cards") or []
    gen = run_record.get("generation") or {}
    variants = analysis.get("variants")
    skipped = analysis.get("skipped")
    sections = []
    if not metrics.get("dry_run"):
        sections.append(Section(
            "Your prompts, counterfactually",
            caveat_lead(cards) +
            "Each prompt's identity mentions were varied across the groups of their axis (gendered words, pronouns "
            "and first names by FairPair's rule perturber; HolisticBias descriptors for the other axes"
            f"{_llm_note(metrics)}), the model continued every variant, and each continuation (without the prompt) was scored: VADER compound "
            "sentiment and toxicity (identity words masked where the run says so). A gap between two groups is the "
            "mean over prompts of the difference of the two variants' mean scores; every prompt is seen under every "
            "group, so the prompt is the unit of the interval (t over prompts), Holm corrects over the pairs of an "
            "axis, and each interval is at the level that agrees with Holm's decision. 'Cannot tell' means the run "
            "could not have detected a gap of the size worth seeing (its detectable size is printed).",
            metrics={"models": model_names(metrics.get("models")), "prompts": metrics.get("n_prompts"),
                     "variants": metrics.get("n_variants"), "prompts with no identity mention": metrics.get("n_skipped"),
                     "continuations": metrics.get("n_generations"),
                     "decoding": decoding_in_words(gen.get("params")),
                     **scorer_validity(cards)},
            tables=[Table("Gaps between groups", gap_table(analysis["gaps"]), scorer_notes(cards),
                          max_rows=200)]))
        fp, lf = analysis.get("fairpair"), analysis.get("langfair")
        if fp is not None and len(fp):
            sections.append(Section(
                "FairPair's B, V and F between variants",
                "FairPair (Dwivedi-Yu et al. 2024): B is the mean token Jaccard dissimilarity between the two "
                "variants' continuations, V_A and V_B the same within each variant's own samples, F = B^2 / (V_A V_B); "
                "a B above V means the group changes the continuations more than sampling does (FairPair's "
                "prompt-level paired t of B against V, one-sided p).",
                tables=[Table("FairPair per pair", fp.assign(model=fp["model"].map(model_name)).round(4), max_rows=200)]))
        if lf is not None and len(lf):
            sections.append(Section(
                "LangFair's counterfactual metrics",
                "As LangFair defines them (Bouchard 2024), over the i-th continuations of two variants: strict "
                "counterfactual sentiment parity (share of pairs whose binary sentiment, VADER compound > 0.5, "
                "differs), weak counterfactual sentiment parity (difference of the two positive shares), cosine "
                "similarity of the all-MiniLM-L6-v2 sentence embeddings, ROUGE-L F. Point values without "
                "uncertainty, as LangFair reports them; the gaps above carry the intervals.",
                tables=[Table("LangFair per pair", lf.assign(model=lf["model"].map(model_name)).round(4), max_rows=200)]))
        ex = analysis.get("examples") or []
        if ex:
            sections.append(Section(
                "The largest gaps, continuation by continuation",
                "For each of the largest gaps, the prompt where the two groups differed most: its two variants and "
                "their continuations side by side.", tables=[side_by_side(e) for e in ex]))
        if cards:
            sections.append(scorer_card_section(cards))
    if variants is not None and len(variants):
        sections.append(Section(
            "Variants", "Every variant sent to the model (also variants.csv in the run folder).",
            tables=[Table("Variants", variants[["prompt_id", "axis", "group", "prompt", "replaced"]], max_rows=300)]))
    if skipped is not None and len(skipped):
        sections.append(Section(
            "Prompts not varied", "Prompts with no identity mention, and axes a prompt names several groups of.",
            tables=[Table("Not varied", skipped, max_rows=300)]))
    model = run_record.get("model") or {}
    run = {"suite": "counterfactual", "model": metrics.get("model"), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__,
           "details": {k: v for k, v in model.items() if k in ("backend", "kind", "dtype", "weights_hash")}}
    return render_report(title=f"Counterfactual: {metrics.get('model') or 'variants (dry run)'}", run=run,
                         sections=sections, warnings=card_warnings(cards))


def _llm_note(metrics: dict) -> str:
    """How the variants were written when a language model wrote them (FairPair's LLM perturber)."""
    llm = metrics.get("llm_perturber") if metrics.get("perturber") == "llm" else None
    if not llm:
        return ""
    d = llm.get("dropped") or {}
    return (f"; the variants themselves written by the language model {model_name(str(llm.get('model')))} with "
            f"FairPair's instruction: {llm.get('kept')} of {llm.get('asked')} kept, {d.get('mention', 0)} dropped for "
            f"not naming the new group, {d.get('jaccard', 0)} for changing more than the mention")

