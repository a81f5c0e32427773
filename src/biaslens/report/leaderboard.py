"""The leaderboard page (:mod:`biaslens.card_leaderboard`): the models by method with their
intervals, the plot, and per method the order, the distinguishable pairs, what was not
comparable and the scorer cards' warnings (every text escaped by the report template)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens import __version__
from biaslens.report.html import (
    Section,
    Table,
    figure_from_matplotlib,
    render_report,
    subplots,
    with_headline,
)
from biaslens.rounding import level_text, number, value_and_interval, with_level

PROCEDURE = ("Which differences are distinguishable: per method, Bonferroni-simultaneous 95% intervals of every "
             "pairwise difference of the ranked quantity (the headline, or its distance from the ideal where no "
             "direction is better) among the comparable models (m pairs, each at level 1 - 0.05/m), compared paired on "
             "the items both cards scored where they keep them, else with each model's standard error read off the half "
             "of its own interval that faces the other model, at that interval's level, and the ratio "
             "referred to Student's t with the degrees of freedom of the units the intervals rest on (descriptors, "
             "keywords, template pairs; the smaller of the two). The chance of calling any pair different when no two models differ is at most about 5% per method (valid for independent "
             "estimates, conservative for estimates made on the same items). A pair whose intervals overlap can "
             "still differ, and overlapping bars in the plot are not a test: read the 'distinguishable from' column.")


def _short(text: str, n: int = 32) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _cell(c: dict[str, Any]) -> str:
    """One model x method cell of the overview."""
    if c["status"] != "complete":
        return c["status"] if c["status"] != "not run" else "–"
    if c["value"] is None:
        return "no headline value"
    value, ci = value_and_interval(c["value"], c["ci_low"], c["ci_high"])  # as the card prints it
    # the level only where it is not 95% (Full Gen Bias' 90%): ten method columns must fit 1280 px
    level = level_text(c.get("level"))
    num = value + (f" [{ci.replace(' to ', ', ')}]" + ("" if level == "95%" else f" {level}") if ci != "–"
                   else " (no interval)")
    return f"#{c['rank']} {num}" if c["comparable"] == "yes" else f"{num} {c['comparable']}"


def _names(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def overview_table(result: dict[str, Any], boards: list[dict[str, Any]]) -> Table:
    rows = []
    one_budget = len({m["budget"] for m in result["models"]}) == 1  # then the intro names it, and a column would not fit
    for k, m in enumerate(result["models"]):
        row = {"model": m["label"]} if one_budget else {"model": m["label"], "budget": m["budget"]}
        for b in boards:
            # "holistic offensiveness": a header may break between the words (ten method columns fit 1280 px)
            row[b["suite"].replace("-", " ")] = _cell(b["cells"][k])
        rows.append(row)
    return Table("Headline per method: #rank value [95% interval, or the level given]", pd.DataFrame(rows),
                 "Rank within each method among the comparable models (see each method's order rule below); a "
                 "lower rank is not a distinguishable difference unless the method's section says so.",
                 max_rows=len(rows))


def plot(result: dict[str, Any], boards: list[dict[str, Any]]):
    """Each method's headline with its interval (at the level the tables print), models on the vertical axis (the cards' order,
    the first on top); hollow grey: not comparable with the method's ranked models."""
    labels = [_short(m["label"]) for m in result["models"]]
    k, n = len(labels), max(1, len(boards))
    # at most 5 methods a row: ten panels in one row would be too small to read at the page's width
    cols = min(n, 5)
    nrows = -(-n // cols)
    fig, axes = subplots(nrows, cols, figsize=(2.6 * cols + 1.6, nrows * (0.26 * k + 1.4)), sharey=True,
                         squeeze=False)
    flat = list(axes.ravel())
    y = np.arange(k)
    for ax, b in zip(flat, boards):
        for i, c in enumerate(b["cells"]):
            if c["value"] is None or c["status"] != "complete":
                continue
            ok = c["comparable"] == "yes"
            color = "#4c78a8" if ok else "#999999"
            if c["ci_low"] is not None and c["ci_high"] is not None:
                # drawn as a segment: an interval may miss its own value (a percentile bootstrap can)
                ax.plot([c["ci_low"], c["ci_high"]], [i, i], "-|", color=color, lw=1.4, ms=5)
            ax.plot(c["value"], i, "o", color=color, mfc=color if ok else "white", ms=5)
            if c["noise_floor"] is not None:
                ax.plot(c["noise_floor"], i, "x", color="#e45756", ms=5)
        ideal = next((c["ideal"] for c in b["cells"] if c["ideal"] is not None), None)
        if ideal is not None:
            ax.axvline(ideal, color="#333", lw=0.8, ls="--")
        ax.set_title(f"{b['suite']}\n{_short(str(b['headline'] or ''), 30)}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", color="#eee")
    for ax in flat[len(boards):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_yticks(y, labels)
    axes[0][0].set_ylim(k - 0.5, -0.5)
    fig.tight_layout()
    return figure_from_matplotlib(
        fig, "Headline per method with its interval",
        "Each bar at its entry's own level (printed in the tables: 95%, 90% for Full Gen Bias' permutation "
        "interval). Blue: the models ranked for that method; hollow grey: not comparable (its run measured something else); "
        "red x: the method's permuted-label noise floor; dashed line: the ideal value. Overlapping bars are not a "
        "test: the method sections say which differences are distinguishable.")


def method_section(b: dict[str, Any]) -> Section:
    ranked = sorted((c for c in b["cells"] if c["rank"] is not None), key=lambda c: c["rank"])
    has_floor = any(c["noise_floor"] is not None for c in ranked)
    order = pd.DataFrame([{
        "rank": c["rank"], "model": c["model"],
        **dict(zip(("value", "interval (level)"), (lambda v, ci: (v, with_level(ci, c.get("level"))))(
            *value_and_interval(c["value"], c["ci_low"], c["ci_high"])))),
        **({"noise floor": number(c["noise_floor"])} if has_floor else {}),
        "distinguishable from (simultaneous 95%)": _names(c["distinguishable_from"]) or "none",
        "verdict": c["verdict"] or ""} for c in ranked])
    tables = [Table(f"Order: {b['order']}", order, max_rows=len(order))] if len(order) else []
    pairs = b["pairs"]
    if len(pairs) and pairs["distinguishable"].any():
        d = pairs[pairs["distinguishable"]]
        tables.append(Table("Distinguishable pairs", pd.DataFrame({
            "model": d["model_a"], "vs": d["model_b"],
            **dict(zip(("difference", "simultaneous 95% interval"), zip(*[
                value_and_interval(v, a, z, signed=True) for v, a, z in zip(d["diff"], d["ci_low"], d["ci_high"])]))),
            "adjusted p (Bonferroni)": d["p_adj"]}), f"{len(d)} of {b['m']} pairs; every pair is in pairs.csv.",
            max_rows=60))
    off = [c for c in b["cells"] if c["comparable"] != "yes"]
    if off:
        tables.append(Table("Not ranked", pd.DataFrame([{"model": c["model"], "why": c["comparable"]} for c in off]),
                            max_rows=len(off)))
    warns: dict[str, list[str]] = {}
    for c in b["cells"]:
        for w in dict.fromkeys(c["scorer_warnings"] + c["warnings"]):
            warns.setdefault(w, []).append(c["model"])
    if warns:
        n = sum(c["status"] == "complete" for c in b["cells"])
        tables.append(Table("Warnings (scorer cards and the method)", pd.DataFrame([
            {"models": f"all {n}" if len(ms) == n else _names(ms), "warning": w} for w, ms in warns.items()]),
            max_rows=30))
    intro = b["summary"] + "."
    if b["no_interval"]:
        intro += (f" {_names(b['no_interval'])}: no interval, an interval that does not contain "
                  "its value, or no sample size on the headline, so no difference with them can be called (cannot tell).")
    return Section(b["title"], intro, tables=tables)


def render_leaderboard(result: dict[str, Any], boards: list[dict[str, Any]]) -> str:
    n = len(result["models"])
    budgets = ", ".join(result["budgets"])
    sections = [
        Section("Leaderboard", f"{n} bias cards (budget {budgets}), one row per model and one column per method. "
                + PROCEDURE, tables=[overview_table(result, boards)], figures=[plot(result, boards)]),
        *[method_section(b) for b in boards]]
    run = {"suite": "leaderboard", "model": f"{n} models", "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__, "details": {}}
    warnings = []
    if len(result["budgets"]) > 1:
        warnings.append(f"the cards used different budgets ({budgets}): methods whose sizes differ are not comparable "
                        "across them and are not ranked together")
    page = render_report(title=f"Bias leaderboard: {n} models", run=run, sections=sections, warnings=warnings)
    return with_headline(page, verdict_lines(boards))


def verdict_lines(boards: list[dict[str, Any]]) -> list[str]:
    """One line per distinct finding: methods whose sentences say the same after their name share
    a line ("bbq, bold, winobias: no two of 2 models are distinguishable ..."), not ten repeats."""
    by_text: dict[str, list[str]] = {}
    for b in boards:
        suite, _, rest = str(b["summary"]).partition(": ")
        if not rest:
            suite, rest = "", str(b["summary"])
        by_text.setdefault(rest, []).append(suite)
    return [f"{', '.join(s for s in suites if s)}: {rest}" if any(suites) else rest for rest, suites in by_text.items()]
