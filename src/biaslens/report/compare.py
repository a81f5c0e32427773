"""The page of ``biaslens compare``: sections, figures and the HTML file.

:mod:`biaslens.comparison` reads the runs and computes what they share and how they
differ (tables and ``metrics.json``); the functions here turn those tables into report
sections, draw the figures and write ``report.html``, atomically. A suite's own comparison
section is drawn by its report module (``report/<suite>.py``: ``compare_section``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.report.html import Section, Table, figure_from_matplotlib, render_report, subplots
from biaslens.report.run_folder import write_text


def downstream_section(df: pd.DataFrame) -> Section:
    """Dialog state tracking (Table 4) and response generation (Table 5): one row per model and task."""
    return Section("Downstream dialog tasks", "Scores on the user's dialog data (paper 3.2, Tables 4 and 5); "
                   "debiasing should leave them about unchanged.",
                   tables=[Table(task, g.dropna(axis=1, how="all")) for task, g in df.groupby("task", sort=False)])


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
         "The runs agree on dataset version, perplexity definition, decoding, prompt variants, scorer, and prompt "
         "or phrase selection and size (run.json)."),
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
