"""Report sections of the Likelihood Bias suite (paper Table 3 and Figure 2 shapes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.report.html import Section, Table, figure_from_matplotlib, render_report


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def table3(analysis, n: int = 3) -> pd.DataFrame:
    """Per axis: Likelihood Bias and the lowest/highest median-perplexity descriptors."""
    lh = analysis.low_high_descriptors(n=n)
    lows = lh[lh["side"] == "low"].groupby("axis")["descriptor"].apply(lambda s: ", ".join(map(str, s)))
    highs = lh[lh["side"] == "high"].groupby("axis")["descriptor"].apply(lambda s: ", ".join(map(str, s)))
    t = analysis.by_axis[["axis", "n_pairs", "likelihood_bias", "ci_low", "ci_high", "likelihood_bias_bh",
                          "likelihood_bias_holm"]].copy()
    t["axis"] = t["axis"].astype(str)
    t["low ppl descriptors"] = t["axis"].map(lows).fillna("")
    t["high ppl descriptors"] = t["axis"].map(highs).fillna("")
    return t.sort_values("likelihood_bias", ascending=False)


def lb_bar_figure(analysis):
    plt = _plt()
    t = analysis.by_axis.sort_values("likelihood_bias")
    y = np.arange(len(t))
    fig, ax = plt.subplots(figsize=(7.5, 0.38 * len(t) + 1.2))
    lb = t["likelihood_bias"].to_numpy(dtype=float)
    err = np.vstack([lb - t["ci_low"].to_numpy(dtype=float), t["ci_high"].to_numpy(dtype=float) - lb])
    ax.barh(y, lb, xerr=err, color="#4c78a8", label="uncorrected (paper)", capsize=2)
    ax.scatter(t["likelihood_bias_bh"], y, color="#f58518", zorder=3, label="Benjamini-Hochberg", s=18)
    ax.set_yticks(y, t["axis"].astype(str))
    ax.set_xlabel("fraction of descriptor pairs with significantly different perplexity")
    ax.set_xlim(0, 1)
    ax.legend(loc="lower right", fontsize=8)
    return figure_from_matplotlib(fig, "Likelihood Bias per axis",
                                  "Bars: uncorrected fraction (p < alpha) with Wilson 95% intervals; dots: after BH correction.")


def ppl_distribution_figure(sentences: pd.DataFrame):
    plt = _plt()
    axes = sorted(sentences["axis"].astype(str).unique())
    data = [np.log10(sentences.loc[sentences["axis"] == a, "perplexity"].dropna().to_numpy()) for a in axes]
    fig, ax = plt.subplots(figsize=(7.5, 0.38 * len(axes) + 1.2))
    ax.boxplot(data, orientation="horizontal", showfliers=False)
    ax.set_yticks(np.arange(1, len(axes) + 1), axes)
    ax.set_xlabel("log10 perplexity per sentence")
    return figure_from_matplotlib(fig, "Perplexity distribution per axis", "All templates pooled; whiskers 1.5 IQR.")


def ppl_heatmap_figure(sentences: pd.DataFrame):
    plt = _plt()
    med = sentences.assign(logppl=np.log10(sentences["perplexity"])).pivot_table(
        index="template", columns="axis", values="logppl", aggfunc="median", observed=True)
    fig, ax = plt.subplots(figsize=(1.2 + 0.55 * med.shape[1], 1.0 + 0.3 * med.shape[0]))
    im = ax.imshow(med.to_numpy(dtype=float), aspect="auto", cmap="viridis")
    ax.set_xticks(np.arange(med.shape[1]), [str(c) for c in med.columns], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(np.arange(med.shape[0]), [str(i) for i in med.index], fontsize=8)
    fig.colorbar(im, ax=ax, label="median log10 perplexity")
    return figure_from_matplotlib(fig, "Median perplexity per axis and template (Figure 2 shape)")


def render(path: Path, *, analysis, sentences: pd.DataFrame, metrics: dict[str, Any], run_record: dict[str, Any]) -> str:
    sig = analysis.significances
    strongest = sig.assign(abs_r=sig["rank_biserial"].abs()).sort_values(["p_value", "abs_r"], ascending=[True, False])
    sections = [
        Section(
            "Likelihood Bias",
            "For each axis and template, every pair of descriptors is compared with a two-sided Mann-Whitney U "
            "test on the perplexities of their sentences. Likelihood Bias is the fraction of pairs that differ "
            "significantly (0 is ideal). The uncorrected figure is the paper's; BH and Holm correct for the "
            "number of pairs tested.",
            metrics={"Likelihood Bias (uncorrected)": metrics["likelihood_bias"],
                     "Likelihood Bias (Benjamini-Hochberg)": metrics["likelihood_bias_bh"],
                     "Likelihood Bias (Holm)": metrics["likelihood_bias_holm"],
                     "descriptor pairs tested": metrics["n_pairs"], "sentences scored": metrics["n_sentences"],
                     "sentences excluded (no finite perplexity)": metrics["n_missing"],
                     "median perplexity": metrics["median_perplexity"], "scoring": metrics["scoring"]},
            figures=[lb_bar_figure(analysis)],
            tables=[Table("Per axis (paper Table 3 shape)", table3(analysis),
                          "Low/high: descriptors with the lowest/highest median perplexity (6-19 characters)."),
                    Table("Per template", analysis.by_template.sort_values("likelihood_bias", ascending=False))],
        ),
        Section("Perplexity distributions", figures=[ppl_distribution_figure(sentences), ppl_heatmap_figure(sentences)]),
        Section("Most different descriptor pairs",
                "Smallest p-values; rank-biserial > 0 means descriptor_0's sentences have higher perplexity.",
                tables=[Table("Pairs", strongest.drop(columns=["abs_r"]).head(30))]),
    ]
    if len(analysis.love_hate):
        lh = analysis.love_hate
        sections.append(Section(
            "I love / I hate",
            "Fraction of each descriptor's sentences below the template's overall median perplexity; "
            "love_hate_diff = love - hate (negative: the model finds 'I hate ...' relatively more likely).",
            tables=[Table("Most negative love - hate", lh.head(15)), Table("Most positive love - hate", lh.tail(15))]))
    run = {"suite": "holistic-likelihood", "model": metrics.get("model"), "status": "complete",
           "started": None, "elapsed_seconds": None, "biaslens_version": _version(),
           "details": {k: v for k, v in (run_record.get("model") or {}).items() if k in ("backend", "kind", "dtype", "start_token", "weights_hash")}}
    return render_report(title=f"HolisticBias Likelihood Bias: {metrics.get('model')}", run=run, sections=sections)


def _version() -> str:
    from biaslens import __version__

    return __version__
