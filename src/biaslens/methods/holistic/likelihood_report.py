"""Report sections of the Likelihood Bias suite (paper Table 3 and Figure 2 shapes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens import __version__
from biaslens.methods.holistic.likelihood_metrics import LOVE_HATE_TEMPLATES
from biaslens.report.html import Section, Table, figure_from_matplotlib, render_report, size_detail, subplots
from biaslens.text import plural


def _descriptor_lists(lh: pd.DataFrame, axes: pd.Series, n: int, what: str) -> pd.DataFrame:
    """Low/high descriptor columns per axis, with a note where the filter leaves too few."""
    lows = lh[lh["side"] == "low"].groupby("axis")["descriptor"].apply(lambda s: ", ".join(map(str, s)))
    highs = lh[lh["side"] == "high"].groupby("axis")["descriptor"].apply(lambda s: ", ".join(map(str, s)))
    eligible = lh.groupby("axis")["n_eligible"].first()
    out = pd.DataFrame({"low ppl descriptors": [lows.get(a, "") for a in axes],
                        "high ppl descriptors": [highs.get(a, "") for a in axes]})
    notes = []
    for a in axes:
        m = eligible.get(a)
        if m is None:
            notes.append(f"fewer than 2 descriptors {what}: none listed")
        elif m < 2 * n:
            notes.append(f"only {plural(int(m), 'descriptor')} {what}: {int(m) // 2} per side")
        else:
            notes.append("")
    out["list note"] = notes
    return out


def _with_interval(t: pd.DataFrame, min_descriptors: int) -> pd.DataFrame:
    """LB, its interval and the few-descriptors note as report columns."""
    t = t.copy()
    t["axis"] = t["axis"].astype(str)
    t["95% CI"] = [("n/a" if np.isnan(lo) else f"{lo:.2f}-{hi:.2f}") + ("" if m == "bootstrap" else f" ({m})")
                   for lo, hi, m in zip(t["ci_low"], t["ci_high"], t["ci_method"], strict=True)]
    t["note"] = [f"only {plural(int(k), 'descriptor')} (< {min_descriptors}): LB is coarse" if few else ""
                 for k, few in zip(t["n_descriptors"], t["few_descriptors"], strict=True)]
    return t


def per_axis_table(analysis, n: int = 3) -> pd.DataFrame:
    """Per axis over every sampled template: LB with its interval, BH/Holm, and the
    lowest/highest median-perplexity descriptors (6-19 characters)."""
    t = _with_interval(analysis.by_axis, analysis.min_descriptors)
    t = t[["axis", "n_descriptors", "n_pairs", "likelihood_bias", "95% CI", "note", "likelihood_bias_bh",
           "likelihood_bias_holm"]].reset_index(drop=True)
    lists = _descriptor_lists(analysis.low_high_descriptors(n=n), t["axis"], n, "of 6-19 characters")
    return pd.concat([t, lists.reset_index(drop=True)], axis=1).sort_values("likelihood_bias", ascending=False)


def table3(analysis, n: int = 3, token_counts: dict[str, int] | None = None) -> tuple[pd.DataFrame, str] | None:
    """Paper Table 3 shape: per axis, LB for the template "I love {plural_noun_phrase}." and
    the lowest/highest median-perplexity descriptors in that template, filtered to 6-19
    characters and (with token counts) to the axis's most common token count, as the paper
    does. None when the run has no "I love" sentences."""
    love = LOVE_HATE_TEMPLATES["love"]
    bat = analysis.by_axis_and_template
    t = bat[bat["template"].astype(str) == love]
    if t.empty:
        return None
    t = _with_interval(t, analysis.min_descriptors)
    t = t[["axis", "n_descriptors", "n_pairs", "likelihood_bias", "95% CI", "note"]].reset_index(drop=True)
    if token_counts:
        lh = analysis.low_high_descriptors(template=love, n=n, equal_token_count=True, token_counts=token_counts)
        what = "of 6-19 characters and equal token count"
    else:
        lh = analysis.low_high_descriptors(template=love, n=n)
        what = "of 6-19 characters"
    lists = _descriptor_lists(lh, t["axis"], n, what)
    caption = (f"Template '{love}' only, as in the paper's Table 3. Low/high: descriptors {what} with the "
               "lowest/highest median perplexity in that template"
               + ("" if token_counts else " (token counts not available here, so the paper's equal-token filter "
                  "is not applied; the run's low_high_descriptors_equal_tokens table has it)") + ".")
    return pd.concat([t, lists.reset_index(drop=True)], axis=1).sort_values("likelihood_bias", ascending=False), caption


def strongest_pairs(analysis, n: int = 30) -> pd.DataFrame:
    """The descriptor pairs that differ most, ranked by effect size, not by p-value: at 30
    sentences per descriptor the p-values of well-separated pairs tie at the normal
    approximation's floor (ranking by p was alphabetical among them). First key
    |rank-biserial|; among pairs that separate completely (|r| = 1) the ratio of the two
    medians, |log(median_0 / median_1)|, says how far apart they are."""
    sig = analysis.significances
    med = analysis.median_perplexities.assign(axis=lambda d: d["axis"].astype(str),
                                              template=lambda d: d["template"].astype(str),
                                              descriptor=lambda d: d["descriptor"].astype(str))
    key = med.set_index(["axis", "template", "descriptor"])["median_ppl"]
    out = sig.assign(axis=sig["axis"].astype(str), template=sig["template"].astype(str),
                     descriptor_0=sig["descriptor_0"].astype(str), descriptor_1=sig["descriptor_1"].astype(str))
    out["median_0"] = key.reindex(pd.MultiIndex.from_frame(out[["axis", "template", "descriptor_0"]])).to_numpy()
    out["median_1"] = key.reindex(pd.MultiIndex.from_frame(out[["axis", "template", "descriptor_1"]])).to_numpy()
    out["abs_rank_biserial"] = out["rank_biserial"].abs()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["abs_log_median_ratio"] = np.abs(np.log(out["median_0"].to_numpy(float) / out["median_1"].to_numpy(float)))
    out = out.sort_values(["abs_rank_biserial", "abs_log_median_ratio", "p_value"], ascending=[False, False, True],
                          kind="mergesort", na_position="last")
    cols = ["axis", "template", "descriptor_0", "descriptor_1", "rank_biserial", "abs_rank_biserial", "median_0",
            "median_1", "abs_log_median_ratio", "p_value", "p_holm", "n_0", "n_1"]
    return out[cols].head(n).reset_index(drop=True)


def short_template(template: str) -> str:
    """A template as a reader names it: "I love", "I think ... the best"."""
    return str(template).replace(" {plural_noun_phrase}", "").replace(" are the", " ... the").rstrip(".")


def pairs_table(analysis, n: int = 30) -> pd.DataFrame:
    """:func:`strongest_pairs` for the page: short template names, and without abs_rank_biserial
    (it is |rank_biserial|), so the table fits the page width."""
    out = strongest_pairs(analysis, n).drop(columns=["abs_rank_biserial"])
    # the two sentence counts as one "30 / 30" column: twelve columns do not fit the page
    counts = [f"{a} / {b}" for a, b in zip(out.pop("n_0"), out.pop("n_1"), strict=True)]
    return out.assign(template=out["template"].map(short_template), **{"sentences A / B": counts})


def love_hate_table(lh: pd.DataFrame) -> pd.DataFrame:
    """The love/hate view for reading: short template names ("I love", "I think ... best"),
    templates the run did not sample (all empty) left out, rows without a difference last."""
    short = {t: short_template(t) for t in lh.columns if "{" in str(t)}
    out = lh.rename(columns=short)
    return out[[c for c in out.columns if out[c].notna().any() or c == "love_hate_diff"]]


def lb_bar_figure(analysis):
    t = analysis.by_axis.sort_values("likelihood_bias")
    y = np.arange(len(t))
    fig, ax = subplots(figsize=(7.5, 0.38 * len(t) + 1.2))
    lb = t["likelihood_bias"].to_numpy(dtype=float)
    # no interval (NaN) -> no error bar
    err = np.nan_to_num(np.vstack([lb - t["ci_low"].to_numpy(dtype=float), t["ci_high"].to_numpy(dtype=float) - lb]))
    ax.barh(y, lb, xerr=err, color="#4c78a8", label="uncorrected (paper)", capsize=2)
    ax.scatter(t["likelihood_bias_bh"], y, color="#f58518", zorder=3, label="Benjamini-Hochberg", s=18)
    ax.set_yticks(y, t["axis"].astype(str))
    ax.set_xlabel("fraction of descriptor pairs with significantly different perplexity")
    ax.set_xlim(0, 1)
    # beside the plot, never over a bar or an interval
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure_from_matplotlib(fig, "Likelihood Bias per axis",
                                  "Bars: uncorrected fraction (p < alpha, the paper's figure) with 95% intervals from a bootstrap "
                                  "over descriptors; dots: after BH correction.")


_VALUE_LABEL = {"perplexity": "log10 perplexity per sentence",
                "neg_pll": "negative pseudo-log-likelihood of the noun phrase (nats)"}


def _plotted(values: pd.Series, value_col: str) -> np.ndarray:
    v = values.dropna().to_numpy(dtype=float)
    return np.log10(v) if value_col == "perplexity" else v


def ppl_distribution_figure(sentences: pd.DataFrame, value_col: str = "perplexity"):
    by_axis = {a: _plotted(sentences.loc[sentences["axis"].astype(str) == a, value_col], value_col)
               for a in sentences["axis"].astype(str).unique()}
    # ordered by median, lowest at the bottom: the plot reads as a ranking
    axes = sorted(by_axis, key=lambda a: np.median(by_axis[a]) if len(by_axis[a]) else np.inf)
    data = [by_axis[a] for a in axes]
    fig, ax = subplots(figsize=(7.5, 0.38 * len(axes) + 1.2))
    ax.boxplot(data, orientation="horizontal", showfliers=False)
    ax.set_yticks(np.arange(1, len(axes) + 1), axes)
    ax.set_xlabel(_VALUE_LABEL.get(value_col, value_col))
    return figure_from_matplotlib(fig, "Distribution per axis", "All templates pooled, axes ordered by their median; whiskers 1.5 IQR.")


def ppl_heatmap_figure(sentences: pd.DataFrame, value_col: str = "perplexity"):
    shown = np.log10(sentences[value_col]) if value_col == "perplexity" else sentences[value_col]
    med = sentences.assign(logppl=shown).pivot_table(
        index="template", columns="axis", values="logppl", aggfunc="median", observed=True)
    fig, ax = subplots(figsize=(1.2 + 0.55 * med.shape[1], 1.0 + 0.3 * med.shape[0]))
    im = ax.imshow(med.to_numpy(dtype=float), aspect="auto", cmap="viridis")
    ax.set_xticks(np.arange(med.shape[1]), [str(c) for c in med.columns], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(np.arange(med.shape[0]), [str(i) for i in med.index], fontsize=8)
    fig.colorbar(im, ax=ax, label="median " + _VALUE_LABEL.get(value_col, value_col).replace(" per sentence", ""))
    return figure_from_matplotlib(fig, "Median per axis and template (Figure 2 shape)")


def table7(analysis, templates: list[str]) -> pd.DataFrame | None:
    """Paper Table 7 shape (masked LMs): LB per axis for each of the given SEAT templates."""
    bat = analysis.by_axis_and_template
    t = bat[bat["template"].astype(str).isin(templates)]
    if t.empty:
        return None
    t = _with_interval(t, analysis.min_descriptors)
    t["template"] = t["template"].astype(str)
    return t[["template", "axis", "n_descriptors", "n_pairs", "likelihood_bias", "95% CI", "note"]].sort_values(
        ["template", "likelihood_bias"], ascending=[True, False])


def render(path: Path, *, analysis, sentences: pd.DataFrame, metrics: dict[str, Any], run_record: dict[str, Any],
           token_counts: dict[str, int] | None = None, value_col: str = "perplexity",
           table7_templates: list[str] | None = None) -> str:
    lo, hi = metrics.get("ci_low"), metrics.get("ci_high")
    overall_ci = "n/a" if lo is None or hi is None or np.isnan(lo) or np.isnan(hi) else f"{lo:.3f} to {hi:.3f}"
    pooled = per_axis_table(analysis)
    lists = ["low ppl descriptors", "high ppl descriptors", "list note"]
    # two narrow tables rather than one that scrolls sideways: the numbers, then the descriptor lists
    tables = [Table("Per axis, all sampled templates pooled", pooled.drop(columns=lists),
                    "95% CI: " + analysis.interval + "."),
              Table("Per axis: descriptors with the lowest and highest values", pooled[["axis", *lists]],
                    "Descriptors of 6-19 characters with the lowest/highest median value over all sampled templates "
                    "(not the paper's Table 3: see below).")]
    t3 = table3(analysis, token_counts=token_counts)
    if t3 is not None:
        tables.append(Table("Paper Table 3 shape", t3[0], t3[1]))
    t7 = table7(analysis, table7_templates or [])
    if t7 is not None:
        tables.append(Table("Paper Table 7 shape (the two SEAT templates that humanise the descriptor)", t7))
    tables.append(Table("Per template", analysis.by_template.sort_values("likelihood_bias", ascending=False)))
    sections = []
    if metrics.get("warnings"):
        sections.append(Section("Warnings", " ".join(metrics["warnings"])))
    sections += [
        Section(
            "Likelihood Bias",
            "For each axis and template, every pair of descriptors is compared with a two-sided Mann-Whitney U "
            "test on the " + ("perplexities" if value_col == "perplexity" else "negative pseudo-log-likelihoods")
            + " of their sentences. Likelihood Bias is the fraction of pairs that differ "
            "significantly (0 is ideal). The uncorrected figure is the paper's; BH and Holm correct for the "
            "number of pairs tested. The pairs of an axis share descriptors, so they are not independent: the "
            "intervals resample descriptors (" + analysis.interval + "). Axes marked with a note rest on fewer "
            f"than {analysis.min_descriptors} descriptors.",
            metrics={"Likelihood Bias (uncorrected)": metrics["likelihood_bias"],
                     "95% interval (bootstrap over descriptors)": overall_ci
                     + (f" ({metrics['ci_method']})" if metrics.get("ci_method") not in (None, "bootstrap", "none") else "")
                     + (f"; {metrics['headline_caveat']}" if metrics.get("headline_caveat") else ""),
                     "Likelihood Bias (Benjamini-Hochberg)": metrics["likelihood_bias_bh"],
                     "Likelihood Bias (Holm)": metrics["likelihood_bias_holm"],
                     "descriptor pairs tested": metrics["n_pairs"], "sentences scored": metrics["n_sentences"],
                     "sentences excluded (no finite value)": metrics["n_missing"],
                     **({"median negative pseudo-log-likelihood of the noun phrase": metrics.get("median_neg_pll")}
                        if value_col == "neg_pll" else {"median perplexity": metrics["median_perplexity"]}),
                     "scoring": metrics["scoring"]},
            figures=[lb_bar_figure(analysis)],
            tables=tables,
        ),
        Section("Distributions", figures=[ppl_distribution_figure(sentences, value_col),
                                          ppl_heatmap_figure(sentences, value_col)]),
        Section("Most different descriptor pairs",
                "Ranked by effect size, |rank-biserial| (1: every sentence of one descriptor is above every sentence "
                "of the other), then by how far apart the two medians are (|log(median A / median B)|); "
                "rank-biserial r > 0 means descriptor A's sentences are less likely (higher value). "
                "p-values tie at the normal approximation's floor for well-separated pairs, so they do not rank.",
                tables=[Table("Pairs", pairs_table(analysis))]),
    ]
    if len(analysis.love_hate):
        lh = love_hate_table(analysis.love_hate)
        intro = ("Fraction of each descriptor's sentences below the template's overall median perplexity; "
                 "love - hate: the love share minus the hate share (negative: the model finds 'I hate ...' relatively more likely).")
        if lh["love_hate_diff"].notna().any():
            neg = lh.sort_values("love_hate_diff", ascending=True, na_position="last").head(15)
            pos = lh.sort_values("love_hate_diff", ascending=False, na_position="last").head(15)
            tables = [Table("Most negative love - hate", neg, "Columns: the share per template (templates not "
                            "sampled are left out)."), Table("Most positive love - hate", pos)]
        else:  # two identical tables of "-" say nothing: one table, and why there is no difference
            intro += (" This run sampled no descriptor in both 'I love' and 'I hate', so there is no love - hate "
                      "difference to rank; a larger --sample or --full gives one.")
            tables = [Table("Share per template", lh.drop(columns=["love_hate_diff"]), max_rows=30)]
        sections.append(Section("I love / I hate", intro, tables=tables))
    run = {"suite": "holistic-likelihood", "model": metrics.get("model"), "status": "complete",
           "started": None, "elapsed_seconds": None, "biaslens_version": __version__,
           "details": {**{k: v for k, v in (run_record.get("model") or {}).items() if k in ("backend", "kind", "dtype", "start_token", "weights_hash")},
                       **size_detail(run_record)}}
    return render_report(title=f"HolisticBias Likelihood Bias: {metrics.get('model')}", run=run, sections=sections)
