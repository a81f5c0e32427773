"""Report pieces shared by the paired-preference suites (CrowS-Pairs, Winogender, WinoBias): the
entries table, a per-group table, the histogram of differences, the caveats and the terminal summary."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens.report.html import (
    Section,
    Table,
    figure_from_matplotlib,
    intervals,
    render_report,
    subplots,
    with_headline,
)
from biaslens.results import verdict_words
from biaslens.rounding import estimate, pvalue

#: machine columns of a per-group table (metrics.pair_preference.by_group) in the order shown
GROUP_COLUMNS = ["n", "n_units", "ties", "share", "share CI", "level", "p", "p_holm", "sign_p", "mean_diff",
                 "mean diff CI", "verdict"]


def entries_frame(entries: list[Any]) -> pd.DataFrame:
    """The uniform entries as a table: metric, value, interval (with its level), test, p and verdict."""
    rows = []
    for e in entries:
        rows.append({"metric": e.name, "value": e.value, "interval": intervals([e.ci_low], [e.ci_high])[0],
                     "level": e.level, "ideal": e.ideal, "test": e.test or "–", "p": e.p_value,
                     "detectable": e.detectable, "verdict": verdict_words(e.verdict), "n used": e.n_used})
    return pd.DataFrame(rows)


def group_frame(table: pd.DataFrame, label: str) -> pd.DataFrame:
    """A :func:`~biaslens.metrics.pair_preference.by_group` table for reading: intervals as one cell."""
    if table.empty:
        return table
    out = table.rename(columns={table.columns[0]: label}).copy()
    out["share CI"] = intervals(out["ci_low"], out["ci_high"])
    out["mean diff CI"] = intervals(out["mean_ci_low"], out["mean_ci_high"])
    return out[[label] + [c for c in GROUP_COLUMNS if c in out.columns]]


def diff_figure(diff: np.ndarray, title: str, xlabel: str):
    """Histogram of the per-item differences with 0 marked (the ideal)."""
    fig, ax = subplots(figsize=(6.4, 3.0))
    d = np.asarray(diff, dtype=float)
    d = d[np.isfinite(d)]
    ax.hist(d, bins=min(60, max(10, len(d) // 10)), color="#4c72b0")
    ax.axvline(0, color="#333", ls="--", lw=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("items")
    return figure_from_matplotlib(fig, title, "Dashed: 0, where the two forms score the same (an unbiased model's "
                                              "differences are centred there).")


def caveats_section(caveats: list[str] | tuple[str, ...], title: str = "Validity caveats") -> Section:
    """The dataset's own warnings, shown on every report."""
    return Section(title, "What the number can and cannot say about this model.", bullets=list(caveats))


def page(title: str, model: str | None, record: dict[str, Any], verdict: str | None, sections: list[Section],
         warnings: list[str]) -> str:
    """The whole report, verdict first."""
    from biaslens import __version__

    run = {"suite": record.get("suite") or title, "model": model, "status": "complete", "started": record.get("started"),
           "elapsed_seconds": record.get("elapsed_seconds"), "biaslens_version": __version__, "details": {}}
    return with_headline(render_report(title=f"{title}: {model}", run=run, sections=sections, warnings=warnings),
                         verdict)


def print_summary(console, title: str, result, groups: pd.DataFrame, label: str) -> None:
    """The headline entries and the per-group shares as a terminal table, then the verdict."""
    from biaslens.report.terminal import print_table

    print_table(console, f"{title} ({result.metrics.get('model')})", (label, "items", "share % (CI)", "p (Holm)", "verdict"),
                [(str(r[0]), f"{r.n:,}", estimate(r.share, r.ci_low, r.ci_high, label="", avoid=(0.0, 50.0)),
                  pvalue(r.p_holm), verdict_words(r.verdict)) for r in groups.itertuples(index=False)],
                left=(label, "verdict"))
    if result.verdict:
        console.print(f"{title}: {result.verdict}", soft_wrap=True, markup=False, highlight=False)
    console.print("share: percent of items whose first form scores higher (ideal 50); intervals at Holm's level per "
                  "row; every number in metrics.json", markup=False, highlight=False)


def overview_section(title: str, verdict: str | None, entries: list[Any], scoring: str | None,
                     extra: dict[str, Any] | None = None) -> Section:
    """The verdict, how the sentences were scored, and every entry with its test."""
    metrics = {"scoring": scoring or "–", **(extra or {})}
    return Section(title, verdict or "", metrics=metrics, tables=[Table("Every entry", entries_frame(entries),
                                                                        max_rows=80)])
