"""Report of the community suite: the paper's Tables 3 and 4 (demographics x models)
as tables and heatmaps, per-dimension bars with keyword-level CIs, gap tests (keyword-level, per
template, and their change from the base model), keyword and form tests, and the most
negative/toxic replies (Table 2 shape).

Replies and prompts are model output / user data: they reach the HTML only inside
report Tables (autoescaped) and as text drawn into PNG figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from biaslens import __version__
from biaslens.report.html import Section, Table, figure_from_matplotlib, intervals, render_report, subplots
from biaslens.report.scorer_card import caveat_lead, scorer_card_section, scorer_notes, scorer_validity
from biaslens.scorers.card import card_warnings
from biaslens.text import model_name, model_names, plural


def _label(s: object) -> str:
    """Text for a matplotlib label: '$' would start mathtext (and can fail to parse)."""
    return str(s).replace("$", r"\$")


def heatmap(t: pd.DataFrame, models: list[str], title: str, cmap: str, caption: str, center: float | None = None):
    cols = [m for m in models if m in t.columns]
    if not cols or t.empty:
        return None
    vals = t[cols].to_numpy(dtype=np.float64)
    fig, ax = subplots(figsize=(1.6 + 1.3 * len(cols), 0.9 + 0.36 * len(t)))
    if center is not None:
        lim = float(np.nanmax(np.abs(vals - center))) if np.isfinite(vals).any() else 1.0
        im = ax.imshow(vals, cmap=cmap, aspect="auto", vmin=center - lim, vmax=center + lim)
    else:
        im = ax.imshow(vals, cmap=cmap, aspect="auto")
    ax.set_xticks(range(len(cols)), [_label(model_name(c)) for c in cols], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(t)), [_label(d) for d in t["demographic"]], fontsize=8)
    for i in range(vals.shape[0]):
        for j in range(vals.shape[1]):
            if np.isfinite(vals[i, j]):
                # white text on dark cells, black on light ones (perceived luminance of the cell)
                r, g, b, _ = im.cmap(im.norm(vals[i, j]))
                color = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
                ax.text(j, i, f"{vals[i, j]:.3f}", ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(im, ax=ax, fraction=0.05)
    return figure_from_matplotlib(fig, title, caption)


def dimension_bars(cis: pd.DataFrame, score: str, models: list[str]):
    """One panel per dimension: the demographics' means with 95% keyword-level CIs, one bar per model."""
    d = cis[cis["score"] == score]
    dims = list(dict.fromkeys(d["dimension"]))
    if not dims:
        return None
    fig, axs = subplots(1, len(dims), figsize=(3.2 * len(dims), 3.2), squeeze=False)
    width = 0.8 / max(len(models), 1)
    for k, dim in enumerate(dims):
        ax = axs[0][k]
        dd = d[d["dimension"] == dim]
        demos = list(dict.fromkeys(dd["demographic"]))
        for j, m in enumerate(models):
            r = dd[dd["model"] == m].set_index("demographic").reindex(demos)
            x = np.arange(len(demos)) + (j - (len(models) - 1) / 2) * width
            mean = r["mean"].to_numpy(dtype=float)
            err = np.vstack([mean - r["ci_low"].to_numpy(dtype=float), r["ci_high"].to_numpy(dtype=float) - mean])
            ax.bar(x, mean, width, yerr=np.nan_to_num(err), capsize=2, label=_label(model_name(m)))
        ax.set_xticks(range(len(demos)), [_label(d) for d in demos], rotation=30, ha="right", fontsize=8)
        ax.set_title(_label(dim), fontsize=9)
        ax.axhline(0, color="#888", lw=0.6)
    axs[0][0].set_ylabel("S_mean" if score == "sentiment" else "T_mean")
    axs[0][-1].legend(fontsize=7)
    name = "Sentiment" if score == "sentiment" else "Toxicity"
    return figure_from_matplotlib(fig, f"{name} per dimension, 95% keyword-level CI",
                                  "Bars: mean of prompt means per demographic; whiskers: t interval with the "
                                  "keyword as the unit (CR2 variance, Bell-McCaffrey df; none for a demographic "
                                  "with one keyword).")


def _round(df: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    return df.round({c: digits for c in df.columns if df[c].dtype.kind == "f"})


def _compact(df: pd.DataFrame, spec: list[tuple[str, object]]) -> pd.DataFrame:
    """A page-width table: ``spec`` lists (header, column name or function of the rounded frame).
    Headers have spaces so they wrap; the demographic pair, intervals and counts are one column each."""
    t = _round(df.reset_index(drop=True))
    if "model" in t:
        t["model"] = [model_name(str(m)) for m in t["model"]]
    return pd.DataFrame({name: (col(t) if callable(col) else t[col]) for name, col in spec})


def _pair(t: pd.DataFrame) -> list[str]:
    return [f"{a} - {b}" for a, b in zip(t["demographic_a"], t["demographic_b"], strict=True)]


def _ci(lo: str, hi: str):
    return lambda t: intervals(t[lo], t[hi])


def _slash(a: str, b: str):
    return lambda t: [f"{x} / {y}" for x, y in zip(t[a], t[b], strict=True)]


def gap_table(gaps: pd.DataFrame) -> pd.DataFrame:
    """The gap tests: keyword-level interval and p, Holm p, the simultaneous interval, what each
    side rests on (keywords, prompts, prompts without a score)."""
    return _compact(gaps, [("model", "model"), ("dimension", "dimension"), ("a - b", _pair), ("gap", "gap"),
                           ("95% CI", _ci("ci_low", "ci_high")), ("p", "p_value"), ("p (Holm)", "p_holm"),
                           ("simultaneous 95% CI", _ci("ci_low_simultaneous", "ci_high_simultaneous")),
                           ("keywords a / b", _slash("n_keywords_a", "n_keywords_b")),
                           ("prompts a / b", _slash("n_prompts_a", "n_prompts_b")),
                           ("prompts missing", "n_prompts_missing")])


def gap_beside_table(gaps: pd.DataFrame) -> pd.DataFrame:
    """Beside the gap tests: prompts as independent units (Welch), and the gap with template offsets
    removed."""
    return _compact(gaps, [("model", "model"), ("dimension", "dimension"), ("a - b", _pair), ("gap", "gap"),
                           ("prompt-level 95% CI", _ci("ci_low_prompt", "ci_high_prompt")),
                           ("prompt-level p (Holm)", "p_holm_prompt"),
                           ("gap, templates balanced", "gap_template_adjusted"),
                           ("its 95% CI", _ci("ci_low_template_adjusted", "ci_high_template_adjusted")),
                           ("its p (Holm)", "p_holm_template_adjusted")])


def template_gap_table(tg: pd.DataFrame) -> pd.DataFrame:
    return _compact(tg, [("model", "model"), ("dimension", "dimension"), ("a - b", _pair), ("template", "template"),
                         ("gap", "gap"), ("95% CI", _ci("ci_low", "ci_high")), ("p", "p_value"),
                         ("p (Holm)", "p_holm"), ("prompts a / b", _slash("n_prompts_a", "n_prompts_b"))])


def change_table(ch: pd.DataFrame) -> pd.DataFrame:
    return _compact(ch, [("model", "model"), ("dimension", "dimension"), ("a - b", _pair),
                         ("gap, base", "gap_base"), ("gap, model", "gap_model"), ("change", "change"),
                         ("95% CI", _ci("ci_low", "ci_high")), ("p (Holm)", "p_holm"),
                         ("prompt-level p", "p_value_prompt"), ("keywords a / b", _slash("n_keywords_a", "n_keywords_b"))])


def keyword_table(kt: pd.DataFrame) -> pd.DataFrame:
    return _compact(kt, [("model", "model"), ("demographic", "demographic"), ("keyword", "keyword"), ("form", "form"),
                         ("mean", "mean"), ("95% CI", _ci("ci_low", "ci_high")),
                         ("CI over", lambda t: ["replies" if v.startswith("replies") else "prompts"
                                                for v in t["interval_over"]]),
                         ("prompts", "n_prompts"), ("vs rest of demographic", "diff_vs_rest"),
                         ("its 95% CI", _ci("diff_ci_low", "diff_ci_high")), ("p", "p_value"),
                         ("p (Holm)", "p_holm")])


def form_table(ft: pd.DataFrame) -> pd.DataFrame:
    return _compact(ft, [("model", "model"), ("form", "form"), ("mean", "mean"), ("95% CI", _ci("ci_low", "ci_high")),
                         ("keywords", "n_keywords"), ("prompts", "n_prompts"), ("vs other forms", "diff_vs_rest"),
                         ("its 95% CI", _ci("diff_ci_low", "diff_ci_high")), ("p", "p_value"),
                         ("p (Holm)", "p_holm")])


def _per_score(title: str, rows: pd.DataFrame, table: Callable[[pd.DataFrame], pd.DataFrame], caption: str = "",
               max_rows: int = 60) -> list[Table]:
    """One table per score, sentiment then toxicity: ``table`` of that score's rows, titled ``title``
    with ``{name}`` (or ``{Name}``, capitalised) the score's name."""
    return [Table(title.format(name=name, Name=name.capitalize()), table(rows[rows["score"] == name]), caption,
                  max_rows) for name in ("sentiment", "toxicity")]


def render(*, analysis: dict[str, Any], metrics: dict[str, Any], run_record: dict[str, Any]) -> str:
    models = analysis["models"]
    s_tab, t_tab = analysis["sentiment_table"], analysis["toxicity_table"]
    tox = metrics.get("toxicity_classifier")
    cards = metrics.get("scorer_cards") or []
    masked = metrics.get("toxicity_masking", False)
    how = "identity words masked" if masked else "unmasked"
    other = analysis.get("toxicity_table_other")
    other_how = "unmasked, paper-faithful" if masked else "identity words masked"
    overview = Section(
        "Community bias",
        "Each model answers the same demographic prompts; each reply gets a VADER compound sentiment "
        "(>= 0.05 positive, <= -0.05 negative) and a toxicity probability. S_mean and T_mean are the means over a "
        "demographic's prompts of each prompt's mean reply score (paper eq. 3-4). Following the paper, compare "
        "demographics within one model rather than absolute values across models: communities differ in "
        "overall tone.",
        metrics={"models": model_names(models), "prompts": metrics["n_prompts"],
                 "prompts in the paper": metrics["paper_prompt_count"], "replies scored": metrics["n_generations"],
                 "toxicity classifier": tox,
                 **scorer_validity(cards),
                 "gap test": metrics["gap_test"], "gap CI": metrics["gap_ci"]},
    )
    sections = [overview]
    f3 = heatmap(s_tab, models, "S_mean: demographics x models (Table 3 shape)", "RdYlGn",
                 "Mean VADER compound per demographic and model; colour centred on 0.", center=0.0)
    f4 = heatmap(t_tab, models, f"T_mean: demographics x models (Table 4 shape, {tox}, {how})", "Reds",
                 "Mean toxicity probability per demographic and model.")
    sections.append(Section("Mean sentiment and toxicity per demographic",
                            figures=[f for f in (f3, f4) if f is not None],
                            tables=[Table("S_mean (Table 3 shape)", _round(s_tab)),
                                    Table(f"T_mean (Table 4 shape, {tox}, {how})", _round(t_tab),
                                          scorer_notes(cards)),
                                    *([Table(f"T_mean, {other_how} (beside the headline)", _round(other),
                                             "Same replies and classifier; only the identity words differ. The "
                                             "difference between the two tables is the classifier's reaction to "
                                             "the identity words.")] if other is not None else [])]))
    gaps = analysis["gaps"]
    other_gaps = analysis.get("toxicity_gaps_other")
    sections.append(Section(
        "Gaps within each dimension",
        caveat_lead(cards) + "gap = mean(a) - mean(b) (S_mean / T_mean differences, as the paper). The keyword is the unit of "
        "inference: the replies to one prompt, and the prompts of one keyword, are not independent evidence about "
        "a demographic. CI and p: t with a cluster-robust (CR2) variance over keywords and Bell-McCaffrey degrees "
        "of freedom; p Holm-adjusted over all pairs of a model and score. The simultaneous CI (each pair at level "
        "1 - 0.05/m) stays valid for a gap picked as the largest. A demographic with 3 keywords gives about 2 "
        "degrees of freedom: wide intervals are what 3 keywords can tell. Beside them: the prompt-level Welch "
        "figures (valid only if keywords do not differ) and the gap after removing each template's offset "
        "(demographics have different template mixes).",
        figures=[f for f in (dimension_bars(analysis["mean_cis"], "sentiment", models),
                             dimension_bars(analysis["mean_cis"], "toxicity", models)) if f is not None],
        tables=[Table("Sentiment gaps", gap_table(gaps[gaps["score"] == "sentiment"]), max_rows=200),
                Table(f"Toxicity gaps ({how})", gap_table(gaps[gaps["score"] == "toxicity"]),
                      scorer_notes(cards), max_rows=200),
                *_per_score("{Name} gaps: prompt-level and with templates balanced (beside)", gaps, gap_beside_table,
                            max_rows=200),
                *([Table(f"Toxicity gaps, {other_how}", gap_table(other_gaps), max_rows=200)]
                  if other_gaps is not None else [])]))
    tg = analysis.get("template_gaps")
    if tg is not None and len(tg):
        sections.append(Section(
            "Gaps per template",
            "The gap within each template (a template's prompts of one demographic are distinct keywords, so "
            "Welch's test over them is keyword-level); Holm over all of a model's template gaps per score. A gap "
            "that appears only in the overall table can be a template mix.",
            tables=_per_score("{Name} gaps per template", tg, template_gap_table, max_rows=600)))
    changes = analysis.get("gap_changes")
    if changes is not None and len(changes):
        base = f"base model: {model_name(str(changes['base'].iloc[0]))}"
        sections.append(Section(
            "Did a gap change from the base model?",
            "Paired over the prompts both models answered: per prompt the score difference model - base, "
            "change = its mean over a's prompts - over b's, keyword-level t (the keyword stays a level); "
            "Holm over each model's pairs per score. Side-by-side intervals that overlap do not say that.",
            tables=_per_score("{Name} gap changes", changes, change_table, base, max_rows=400)))
    kt, ft = analysis.get("keyword_tests"), analysis.get("form_tests")
    sections.append(Section(
        "Keywords and grammatical forms",
        "Per keyword (the paper notes that noun and adjective labels of a group differ): its mean with a t interval "
        "over its prompts (over its replies when it has one prompt) and Welch's test against the rest of its "
        "demographic. Per form: the mean with a keyword-level interval and the keyword-level test against all "
        "other forms. Holm over each model's keywords / forms per score.",
        tables=[*(_per_score("Per grammatical form: {name}", ft, form_table) if ft is not None else []),
                *(_per_score("Per keyword: {name}", kt, keyword_table, max_rows=400) if kt is not None else []),
                Table("Per grammatical form (all scores)", _round(analysis["by_form"])),
                Table("Per keyword (all scores)", _round(analysis["by_keyword"]), max_rows=400)]))
    sections.append(Section(
        "Most negative and most toxic replies (Table 2 shape)",
        "Rare by construction: they show what a model can say, not what it typically says.",
        tables=[Table("Most negative replies", _round(analysis["most_negative"]), max_rows=100),
                Table("Most toxic replies", _round(analysis["most_toxic"]), max_rows=100)]))
    details = {}
    for m, rec in (run_record.get("models") or {}).items():
        sep = rec.get("separator")
        prompting = f"prompts end with {sep}" if sep else "plain prompts (base model)"
        style = "chat template" if rec.get("chat") else "no chat template"
        details[f"model {model_name(m)}"] = f"{prompting}, {style}, {plural(rec.get('n_generations') or 0, 'reply', 'replies')}, {rec.get('seconds')} s"
    for m, rec in (run_record.get("lengths") or {}).items():
        details[f"lengths {model_name(m)}"] = (f"median {rec['median_words']:.0f} words, {rec['shorter_than_min_words']} "
                                           f"below the minimum, {rec['trimmed_to_max_words']} trimmed")
    run = {"suite": "community", "model": metrics.get("model"), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__, "details": details}
    if cards:
        sections.insert(1, scorer_card_section(cards))
    return render_report(title="Community bias: " + model_names(models), run=run, sections=sections,
                         warnings=card_warnings(cards))
