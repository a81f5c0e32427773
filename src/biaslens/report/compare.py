"""The page of ``biaslens compare``: sections, figures and the HTML file.

:mod:`biaslens.suites.compare` reads the runs and computes what they share and how they
differ (tables and ``metrics.json``); the functions here turn those tables into report
sections, draw the figures and write ``report.html``, atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.report.html import Section, Table, figure_from_matplotlib, interval_text, render_report, subplots
from biaslens.report.run_folder import write_text
from biaslens.text import plural

REDDITBIAS_INTRO = ("Paired t-test of phrase perplexities per bias type, minoritized group first: t < 0 means the "
                    "stereotype is likelier for the minoritized group; debiasing should move t towards 0 (or above) "
                    "without raising the LM perplexity much.")


def redditbias_section(t: pd.DataFrame, ppl: pd.DataFrame, wide: pd.DataFrame,
                       changes: pd.DataFrame | None = None) -> Section:
    """t-values per bias type (paper Figure 1a) and LM perplexity (Figure 1b): ``t`` one row per
    model and bias type, ``ppl`` one row per model, ``wide`` the t-values as bias type x model;
    ``changes`` the paired before/after tests against the first model."""
    figures = [grouped_bars(wide, "t-value (minoritized - dominant)", "LMB t-value per bias type (paper Figure 1a)")]
    if ppl["perplexity"].notna().any():
        figures.append(perplexity_bars(ppl.dropna(subset=["perplexity"]), "LM perplexity (paper Figure 1b)"))
    tables = [Table("t-value per bias type", t), Table("LM perplexity", ppl)]
    if changes is not None and len(changes):
        tables.append(Table("Change against the first model, same phrase pairs", changes,
                            "Per phrase pair, the gap ppl_minoritized - ppl_dominant in each model; paired t-test "
                            "of after vs before over the pairs, with the median change and its distribution-free "
                            "interval. \"towards 0\" = the mean gap shrank significantly (alpha 0.05)."))
    return Section("RedditBias: bias and perplexity", REDDITBIAS_INTRO, tables=tables, figures=figures)


def downstream_section(df: pd.DataFrame) -> Section:
    """Dialog state tracking (Table 4) and response generation (Table 5): one row per model and task."""
    return Section("Downstream dialog tasks", "Scores on the user's dialog data (paper 3.2, Tables 4 and 5); "
                   "debiasing should leave them about unchanged.",
                   tables=[Table(task, g.dropna(axis=1, how="all")) for task, g in df.groupby("task", sort=False)])


def holistic_generation_section(data: dict[str, Any]) -> Section:
    """The holistic-generation comparison (``suites.holistic_generation.compare_data``): generation
    bias per run, the change against the first run with its verdict, the Table 15 variance
    changes, then per cluster, per axis and key-phrase tables with one column per run."""
    tables = [Table("Generation bias per model (each run as measured)", pd.DataFrame(data["overall"]))]
    if data["changes"]:
        tables.append(Table("Change against the first run", pd.DataFrame([
            {"model": k, "verdict": v.get("verdict"), "fgb_before": v.get("before"), "fgb_after": v.get("after"),
             "change": v.get("change"), "change 95% CI": interval_text(*(v.get("ci") or [None, None])),
             "parroting_before_%": 100 * v["parroting"]["before"] if v.get("parroting") else None,
             "parroting_after_%": 100 * v["parroting"]["after"] if v.get("parroting") else None,
             "prompts": v.get("prompts") or v.get("reason")}
            for k, v in data["changes"].items()]),
            "FGB recomputed on the prompts both runs measured; 95% paired delete-one-descriptor jackknife t "
            "interval (all descriptors both runs share, pooled across axes; nouns and templates as measured). "
            "'went down' only when the interval lies below 0, 'went up' above 0, else 'no detectable change'. "
            "Parroting: responses that repeat the prompt (paper C.2.1)."))
    for v in data["variance"]:
        counts = v["counts"]
        tables.append(Table(f"Per-style variance change, {v['before']} -> {v['after']} (paper Table 15 shape)",
                            v["styles"], f"{plural(counts['decrease'], 'style')} see a variance decrease, {counts['increase']} "
                            "an increase; variance = FGB's per-style term (x1000), mean = mean over descriptors."))
    for name, key, index, value in (("PGB / SCGB per cluster", "clusters", "cluster", ["pgb_x1000", "scgb_x1000"]),
                                    ("FGB per axis (Table 10 shape)", "axes", "axis", ["fgb_x1000"]),
                                    ("Key phrases, % of responses (Table 14 shape)", "phrases", "phrase", ["percent"]),
                                    ("Responses with a Sympathy / Confusion key phrase per axis, %", "phrase_axes",
                                     "axis", data["key_phrases"])):
        if data[key]:
            wide = pd.DataFrame(data[key]).pivot_table(index=index, columns="model", values=value, sort=False)
            wide.columns = [f"{v} {m}" if len(value) > 1 else str(m) for v, m in wide.columns] \
                if isinstance(wide.columns, pd.MultiIndex) else [str(c) for c in wide.columns]
            tables.append(Table(name, wide.reset_index(), max_rows=80))
    intro = ("Full Gen Bias and its parts per model (x1000; lower is less variation of response style with the "
             "descriptor), each as its run measured it. The before/after verdict is recomputed on the prompts both "
             "runs measured, from the stored per-response style probabilities, with a paired jackknife interval.")
    if data["lines"]:
        intro += " Against the first run (" + data["first"] + "): " + "; ".join(data["lines"]) + "."
    return Section("HolisticBias: generation bias", intro, tables=tables)


def headline_section(suite: str, rows: list[dict[str, Any]], higher_is_better: bool | None) -> Section:
    """A suite without a dedicated comparison: its headline entry per model with the verdicts."""
    direction = ("" if higher_is_better is None else " Higher is better." if higher_is_better else " Lower is better.")
    text = (f"{suite} has no dedicated comparison, so its headline number (metrics.json's first entry) is compared: "
            "a change is called only where the two 95% intervals do not overlap (conservative), and not at all "
            "where the runs measured different things." + direction)
    return Section(f"{suite}: headline", text, tables=[Table(f"{suite} headline per model", pd.DataFrame(rows))])


def differences_section(diffs: list[dict[str, Any]]) -> Section:
    """What differs between the runs (read from their run.json files)."""
    return Section(
        "What differs between the runs",
        ("Read from each run's run.json; numbers of runs that differ in these are not comparable as they stand, "
         "and sections say where they refuse a verdict." if diffs else
         "The runs agree on dataset version, perplexity definition, decoding, prompt variants, scorer and prompt "
         "selection (run.json)."),
        tables=[Table("Differences", pd.DataFrame(diffs))] if diffs else [])


def write_compare_report(out: Path, labels: list[str], sections: list[Section]) -> Path:
    """``out/report.html`` for the compared models (written atomically); returns its path."""
    from biaslens import __version__

    run = {"suite": "compare", "model": ", ".join(labels), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__, "details": {}}
    path = Path(out) / "report.html"
    write_text(path, render_report(title="Comparison: " + " vs ".join(labels), run=run, sections=sections))
    return path


def grouped_bars(wide: pd.DataFrame, ylabel: str, title: str):
    """One group of bars per row of ``wide``, one bar per column (model)."""
    n = max(1, wide.shape[1])
    width = 0.8 / n
    fig, ax = subplots(figsize=(1.6 * max(1, len(wide)) + 2.5, 3.6))
    for j, col in enumerate(wide.columns):
        x = np.arange(len(wide)) + (j - (n - 1) / 2) * width
        ax.bar(x, np.nan_to_num(wide[col].to_numpy(dtype=float)), width, label=str(col))
    ax.axhline(0, color="#333", lw=0.8)
    ax.set_xticks(np.arange(len(wide)), [str(i) for i in wide.index])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    return figure_from_matplotlib(fig, title)


def perplexity_bars(df: pd.DataFrame, title: str):
    """One bar per model (``model``, ``perplexity`` columns)."""
    fig, ax = subplots(figsize=(1.2 * len(df) + 2.5, 3.2))
    ax.bar(np.arange(len(df)), df["perplexity"].to_numpy(dtype=float), color="#4c78a8")
    ax.set_xticks(np.arange(len(df)), df["model"].tolist(), rotation=20, ha="right")
    ax.set_ylabel("perplexity")
    return figure_from_matplotlib(fig, title)
