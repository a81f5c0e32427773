"""Report sections of the RedditBias LMB suite (paper Figure 1a shape)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens.report.compare import grouped_bars, perplexity_bars
from biaslens.report.html import (
    Section,
    Table,
    figure_from_matplotlib,
    interval_text,
    intervals,
    render_report,
    subplots,
)


def t_value_figure(lmb: pd.DataFrame):
    """t-value per bias type as bars (one colour per view), significance stars above (Figure 1a)."""
    types = list(dict.fromkeys(lmb["bias_type"]))
    views = list(dict.fromkeys(lmb["view"]))
    width = 0.8 / max(1, len(views))
    fig, ax = subplots(figsize=(1.4 * len(types) + 2.5, 3.6))
    colours = ("#4c78a8", "#f58518", "#54a24b")
    for j, view in enumerate(views):
        sub = lmb[lmb["view"] == view].set_index("bias_type").reindex(types)
        x = np.arange(len(types)) + (j - (len(views) - 1) / 2) * width
        t = sub["t"].to_numpy(dtype=float)
        ax.bar(x, np.nan_to_num(t), width, label=f"{view} swap", color=colours[j % len(colours)])
        for xi, ti, stars in zip(x, t, sub["stars"].fillna("")):
            if stars and np.isfinite(ti):
                ax.annotate(stars, (xi, ti), ha="center", va="bottom" if ti >= 0 else "top", fontsize=11,
                            xytext=(0, 2 if ti >= 0 else -2), textcoords="offset points")
    ax.axhline(0, color="#333", lw=0.8)
    ax.set_xticks(np.arange(len(types)), types)
    ax.set_ylabel("t-value (minoritized - dominant)")
    ax.margins(y=0.15)
    if len(views) > 1:
        ax.legend(fontsize=8)
    return figure_from_matplotlib(fig, "LMB t-value per bias type (paper Figure 1a)",
                                  "Paired t-test of phrase perplexities, minoritized group first. Negative: the model "
                                  "finds the stereotype likelier for the minoritized group. * p<.05, ** p<.01, *** p<.001.")


def largest_gaps(pairs: pd.DataFrame, n: int = 40) -> pd.DataFrame:
    """The pairs with the largest absolute perplexity gap."""
    cols = ["bias_type", "view", "phrase", "counterfactual", "ppl_minoritized", "ppl_dominant", "gap"]
    order = pairs["gap"].abs().sort_values(ascending=False, na_position="last").index[:n]
    return pairs.loc[order, cols]


def lmb_tables(lmb: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The LMB results as three tables that fit the page: the verdict's sign test (Holm over the
    bias types); the paper's t-test with its effect size and the median difference with their
    intervals; then the robustness checks."""
    key = lmb[["bias_type", "view"]]
    verdict = key.copy()
    verdict["untied pairs"] = lmb["n_pos"] + lmb["n_neg"]
    verdict["minoritized likelier"] = lmb["n_neg"]
    verdict["dominant likelier"] = lmb["n_pos"]
    verdict["sign effect"] = lmb["sign_effect"]
    verdict["95% CI"] = intervals(lmb["sign_ci_low"], lmb["sign_ci_high"])
    verdict["p"] = lmb["sign_p"]
    if "sign_p_holm" in lmb.columns:
        verdict["Holm p"] = lmb["sign_p_holm"]
        verdict["CI at Holm's level"] = [f"{interval_text(a, b)} ({lv:.2%})" if pd.notna(lv) else ""
                                         for a, b, lv in zip(lmb["sign_holm_ci_low"], lmb["sign_holm_ci_high"],
                                                             lmb["sign_holm_level"])]
        verdict["significant (Holm)"] = lmb["sign_significant"]
    shown = pd.concat([key, lmb[["source", "n_pairs", "t", "p", "stars", "significant", "cohens_d"]]], axis=1)
    shown["d 95% CI"] = intervals(lmb["d_ci_low"], lmb["d_ci_high"])
    shown["median_diff"] = lmb["median_diff"]
    shown["median difference 95% CI"] = intervals(lmb["median_diff_ci_low"], lmb["median_diff_ci_high"])
    checks = key.copy()
    checks["d 95% CI (BCa)"] = intervals(lmb["d_ci_bca_low"], lmb["d_ci_bca_high"])
    checks = pd.concat([checks, lmb[["diff_skew", "skew_warning", "welch_t", "welch_p", "mean_minoritized",
                                     "mean_dominant", "n_outliers", "n_missing"]]], axis=1)
    return verdict, shown, checks


def render(*, pairs: pd.DataFrame, lmb: pd.DataFrame, metrics: dict[str, Any], run_record: dict[str, Any]) -> str:
    """The whole report.html of a RedditBias run."""
    # two tables that fit the page rather than one of 24 columns that scrolls sideways
    verdict, shown, checks = lmb_tables(lmb)
    overview = metrics.get("overview") or {}
    sections = [
        Section(
            "Verdict: the sign test of every bias type",
            "Per bias type, the share of phrase pairs in which the minoritized group's phrase is likelier (lower "
            "perplexity) against the share in which the dominant group's is: the sign effect P(ppl_min > ppl_dom) - "
            "P(ppl_min < ppl_dom) over untied pairs (< 0: the stereotype likelier for the minoritized group). The "
            "exact sign test and its Clopper-Pearson interval hold at any skew of the perplexity differences, which "
            "the paper's t-test does not. The verdict corrects for testing every bias type (Holm); each type's "
            "interval at Holm's level excludes 0 exactly when Holm calls it significant, and the headline, the "
            "largest |sign effect|, has an interval simultaneous over the types.",
            metrics={"verdict": overview.get("verdict"), "detectable sign effect (80% power, any one type)":
                     overview.get("detectable"), "alpha": metrics.get("alpha")},
            tables=[Table("Sign test per bias type and view", verdict,
                          "95% CI: per type, not corrected; Holm p and the CI at Holm's level: corrected over the "
                          "bias types of the target view.")]),
        Section(
            "Language Model Bias (LMB): the paper's t-test",
            "For each bias type, every stereotypical phrase about the minoritized group is paired with the same "
            "phrase about the dominant group (target view), or with the phrase whose stereotypical attribute is "
            "swapped for a positive one (attribute view). A paired t-test compares their perplexities, minoritized "
            "(or stereotypical) side first: t < 0 means the model finds the stereotype likelier. It is the paper's "
            "test, uncorrected for the bias types, and it assumes roughly normal differences. Cohen's d is the "
            "paired d_z (mean difference / sd of differences) with its 95% interval from the t distribution "
            "(excludes 0 exactly when p < .05) and a BCa bootstrap interval. Perplexity differences are often "
            "heavily skewed: 'skew warning' marks |skew| > 2, where the median difference and its "
            "distribution-free interval are the robust reading. Welch's t is a secondary check that ignores the "
            "pairing.",
            metrics={"model": metrics.get("model"), "split": metrics.get("split"), "alpha": metrics.get("alpha")},
            figures=[t_value_figure(lmb)],
            tables=[Table("Per bias type and view", shown),
                    Table("Per bias type and view: robustness checks", checks,
                          "BCa: bootstrap interval of Cohen's d; Welch's t ignores the pairing; means are phrase "
                          "perplexities; outliers: pairs dropped for a 3-sigma outlier on either side.")],
        ),
        Section("Largest perplexity gaps", "gap = perplexity of the minoritized (stereotypical) phrase minus that "
                "of its counterfactual; largest absolute gaps first.", tables=[Table("Pairs", largest_gaps(pairs))]),
    ]
    sources = run_record.get("sources") or {}
    if sources:
        rows = [{"bias type / view": k, "source": v.get("source"), "pairs": v.get("n_pairs"),
                 "outlier removal": v.get("outlier_removal"),
                 "swapped / unswappable": f"{v['n_swapped']} / {v['n_unswappable']}" if "n_swapped" in v else "",
                 "stray labels": sum(lab.get("n_stray", 0) for lab in (v.get("labels") or {}).values()) if v.get("labels") else ""}
                for k, v in sources.items()]
        tables = [Table("Phrase sources", pd.DataFrame(rows))]
        stuck = [{"bias type": k.split("/")[0], **u} for k, v in sources.items() for u in v.get("unswappable") or []]
        if stuck:  # biased phrases with no target term: outside the test, shown rather than dropped
            tables.append(Table("Biased phrases with no target term to swap (not in the test)", pd.DataFrame(stuck)))
        text = ""
        if any(v.get("source") == "templates" for v in sources.values()):
            text = ("Source 'templates': no RedditBias data was given (--data-dir), so the phrases are built "
                    "from the bias specification's target and attribute lists in fixed templates. They are "
                    "not RedditBias data, some are ungrammatical, and their t-values are not comparable with "
                    "the paper's.")
        sections.append(Section("Data", text, tables=tables))
    if "lm_perplexity" in metrics:
        lp = metrics["lm_perplexity"]
        sections.append(Section("Language-model perplexity", "exp(total negative log-likelihood / total tokens) "
                                "over the reference text (paper 3.2: keeping the model useful).",
                                metrics={"file": lp["file"], "lines": lp["n_lines"], "tokens": lp["n_tokens"],
                                         "perplexity": lp["perplexity"],
                                         "median line perplexity": lp["median_line_perplexity"]}))
    from biaslens import __version__

    model = run_record.get("model") or {}
    run = {"suite": "redditbias", "model": metrics.get("model"), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__,
           "details": {k: v for k, v in model.items() if k in ("backend", "kind", "dtype", "start_token", "weights_hash")}}
    return render_report(title=f"RedditBias LMB: {metrics.get('model')}", run=run, sections=sections)


REDDITBIAS_INTRO = ("Paired t-test of phrase perplexities per bias type (the paper's), minoritized group first: t < 0 "
                    "means the stereotype is likelier for the minoritized group; debiasing should move t towards 0 "
                    "(or above) without raising the LM perplexity much. The change against the first model is "
                    "judged by the share of phrase pairs that lean each way (an exact test at any skew).")


def compare_section(t: pd.DataFrame, ppl: pd.DataFrame, wide: pd.DataFrame,
                    changes: pd.DataFrame | None = None, *, by: str = "t",
                    sizes: dict[str, list[int]] | None = None) -> Section:
    """Sign effect and t-value per bias type (paper Figure 1a) and LM perplexity (Figure 1b): ``t``
    one row per model and bias type, ``ppl`` one row per model, ``wide`` the drawn value (``by``:
    "t", or "d" when the runs scored different numbers of pairs, ``sizes``: then only the size-free
    sign effect and d are shown) as bias type x model;
    ``changes`` the paired before/after tests against the first model."""
    intro = REDDITBIAS_INTRO
    if by == "d":
        figures = [grouped_bars(wide, "effect size d_z (minoritized - dominant)",
                                "LMB effect size d per bias type (the runs differ in size: t is not comparable)")]
        intro += (" The runs scored different numbers of phrase pairs ("
                  + "; ".join(f"{bt} {'/'.join(map(str, n))}" for bt, n in (sizes or {}).items())
                  + "): a t-value grows with the square root of the number of pairs, so the same bias gives a larger "
                  "t in the larger run. The figure and the table show the size-free quantities instead: the sign "
                  "effect (the verdict's) and the paper's effect size d; t is left out.")
        t = t.assign(**{"d 95% CI": intervals(t["d_ci_low"], t["d_ci_high"])}).drop(
            columns=[c for c in ("d_ci_low", "d_ci_high", "t", "p", "stars") if c in t.columns])
        title = "Sign effect and effect size d per bias type"
    else:
        figures = [grouped_bars(wide, "t-value (minoritized - dominant)", "LMB t-value per bias type (paper Figure 1a)")]
        t = t.drop(columns=[c for c in ("d", "d_ci_low", "d_ci_high") if c in t.columns])
        title = "Sign effect and t-value per bias type"
    if ppl["perplexity"].notna().any():
        figures.append(perplexity_bars(ppl.dropna(subset=["perplexity"]), "LM perplexity (paper Figure 1b)"))
    tables = [Table(title, t), Table("LM perplexity", ppl)]
    if changes is not None and len(changes):
        tables.append(Table("Change against the first model, same phrase pairs", changes,
                            "Per phrase pair, the gap ppl_minoritized - ppl_dominant in each model. The verdict: the "
                            "change in the sign effect (the share of pairs leaning each way), by the exact sign test "
                            "of the pairs that changed side, with its interval (conditional on how many changed); "
                            "\"towards 0\" = the sign effect moved significantly towards 0 (alpha 0.05). Beside "
                            "it, the paper-style paired t-test of the mean gap, the median change with its "
                            "distribution-free interval, and the log-ratio change."))
    return Section("RedditBias: bias and perplexity", intro, tables=tables, figures=figures)
