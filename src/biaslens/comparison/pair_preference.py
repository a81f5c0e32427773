"""CrowS-Pairs, Winogender and WinoBias in ``biaslens compare``: every entry per model, and each
model's change against the first on the items both scored, paired.

The three suites keep one row per item in their main table with ``item`` (its key), ``unit``
(the template or schema it shares with other items) and ``prefers`` (the first form scored
higher, under the suite's tie rule). Two runs of the same data are compared item by item: the
change in the share is the mean of ``prefers(model) - prefers(first model)`` with a t-interval
over units, so a change is called when that paired interval excludes 0 (far more power than
comparing the two runs' own intervals). WinoBias's runs cluster their intervals two ways by the two
occupations each twin names; its change is clustered the same way (``occupations``), so a change is
claimed for occupations like these, as the runs' gaps are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from biaslens.comparison.change import PAIRED_HEADLINE_KEY
from biaslens.comparison.entries import Entry, differences_reason, finite_or_none, run_differences
from biaslens.metrics.pair_preference import mean_difference
from biaslens.report.html import Section, Table, interval_text
from biaslens.results import verdict_words
from biaslens.rounding import estimate, p_text, with_level
from biaslens.suites.base import SuiteComparison


def _items(e: Entry, suite: str, table: str) -> pd.DataFrame | None:
    path = e.runs.get(suite)
    path = path / f"{table}.parquet" if path is not None else None
    if path is None or not path.is_file():
        return None
    df = pd.read_parquet(path)
    return df if {"item", "unit", "prefers"} <= set(df.columns) else None


def share_value(items: pd.DataFrame) -> pd.Series:
    """An item's part of the share preferring the first form, in points: 100 or 0."""
    return 100 * items["prefers"].astype(float)


#: a run's item table -> the two occupations each item names, or None (the runs' items carry none)
Occupations = Callable[[pd.DataFrame], tuple[ArrayLike, ArrayLike] | None]


def paired_change(before: pd.DataFrame, after: pd.DataFrame,
                  value: Callable[[pd.DataFrame], pd.Series] = share_value,
                  occupations: Occupations | None = None) -> dict[str, Any]:
    """The change in the mean of ``value`` per item (by default the share preferring the first
    form, percentage points) on the items both runs scored, with its t-interval over units and the
    test of 0.

    ``occupations`` (WinoBias: :func:`biaslens.methods.winobias.metrics.twin_occupations`): where it
    gives the occupations each item of ``before`` names, the interval and test are clustered two
    ways by them (:func:`biaslens.metrics.pair_preference.mean_difference`, as the runs' own
    intervals are), with occupations - 1 degrees of freedom; else (or where it gives None, a run
    stored without them) over units. ``unit`` in the result says which."""
    left = before[["item", "unit"]].assign(v=value(before))
    occ = occupations(before) if occupations is not None else None
    if occ is not None:
        left = left.assign(occ_a=np.asarray(occ[0], dtype=object), occ_b=np.asarray(occ[1], dtype=object))
    both = left.merge(after[["item"]].assign(v=value(after)), on="item", suffixes=("_a", "_b"))
    if len(both) < 2:
        return {"verdict": "cannot tell", "reason": "fewer than two items scored by both runs", "n_items": len(both)}
    diff = both["v_b"] - both["v_a"]
    m = mean_difference(diff.to_numpy(), both["unit"].to_numpy(),
                        occupations=None if occ is None else (both["occ_a"].to_numpy(), both["occ_b"].to_numpy()))
    units = (f"{m['n_units']:,} occupations (clustered two ways by the two each item names)" if occ is not None
             else f"{m['n_units']:,} units")
    if m["p"] is None or not np.isfinite(m["p"]):
        word = "no change" if m["mean"] == 0 else "cannot tell"
    else:
        word = ("went up" if m["mean"] > 0 else "went down") if m["p"] < 0.05 else "no detectable change"
    return {"verdict": word, "change": m["mean"], "ci_low": m["ci_low"], "ci_high": m["ci_high"], "p": m["p"],
            "n_items": len(both), "n_units": m["n_units"], "unit": "occupations" if occ is not None else "units",
            "reason": f"paired over {len(both):,} items in {units}, {p_text(m['p'])}"}


def pair_preference_comparison(suite: str, title: str, what: str, table: str = "pairs",
                               headline_value: Callable[[pd.DataFrame], pd.Series] | None = None,
                               occupations: Occupations | None = None) -> SuiteComparison:
    """The ``Suite.compare`` of a paired-preference suite: ``what`` names the share ("sent_more scores higher").
    ``headline_value``: each item's part of the headline where the headline is a mean over items
    (CrowS-Pairs' metric score: :func:`share_value`; WinoBias' pro-anti gap: 100 sign(d)): the
    headline's change is then paired item by item, and ``compare``, card comparison and the gate
    decide by it rather than by two intervals. ``occupations``: the changes clustered two ways by
    the occupations each item names (:func:`paired_change`), as the suite's own intervals are."""

    def section(entries: list[Entry]) -> tuple[list[Section], dict[str, Any]]:
        have = [e for e in entries if suite in e.metrics]
        if not have:
            return [], {}
        rows = []
        for e in have:
            for h in e.metrics[suite].get("entries") or []:
                rows.append({"model": e.label, "metric": h.get("name"), "value": finite_or_none(h.get("value")),
                             "interval (level)": with_level(interval_text(h.get("ci_low"), h.get("ci_high")), h.get("level")),
                             "p": h.get("p_value"),
                             "verdict": verdict_words(h.get("verdict")), "n used": h.get("n_used")})
        heads = {e.label: (e.metrics[suite].get("entries") or [{}])[0] for e in have}
        out: dict[str, Any] = {"headline": {k: finite_or_none(h.get("value")) for k, h in heads.items()},
                               "headline_name": next(iter(heads.values())).get("name"), "change": {}}
        change_rows = []
        diffs = run_differences(have, suite)
        base = _items(have[0], suite, table)
        for e in have[1:]:
            other = None
            if diffs:
                ch = {"verdict": "not comparable", "reason": differences_reason(diffs)}
            else:
                other = _items(e, suite, table)
                ch = (paired_change(base, other, occupations=occupations) if base is not None and other is not None else
                      {"verdict": "cannot tell", "reason": f"{table}.parquet missing in a run folder"})
            out["change"][e.label] = ch
            if headline_value is not None:
                head = ch if diffs or base is None or other is None else paired_change(base, other, headline_value, occupations)
                out.setdefault(PAIRED_HEADLINE_KEY, {})[e.label] = (
                    head | {"ci": [head["ci_low"], head["ci_high"]]} if head.get("change") is not None else head)
            change_rows.append({"model": e.label, "against": have[0].label, "change, points": ch.get("change"),
                                "95% CI": interval_text(ch.get("ci_low"), ch.get("ci_high")), "verdict": ch["verdict"],
                                "why": ch.get("reason", "")})
        tables = [Table(f"{title}: every entry per model", pd.DataFrame(rows))]
        if change_rows:
            tables.append(Table(f"{title}: change in the share where {what}, against {have[0].label}",
                                pd.DataFrame(change_rows)))
        over = ("clustered two ways by the two occupations each item names (as each run's intervals are)"
                if occupations is not None else "over the templates the items share")
        intro = (f"Each model's entries (the first is the headline); then each model against the first on the same "
                 f"items: the change in the share where {what}, paired item by item, with a t-interval {over}.")
        for label, head in (out.get(PAIRED_HEADLINE_KEY) or {}).items():
            if head.get("change") is not None:
                intro += (f" The headline {out['headline_name']} of {label} against {have[0].label}, paired the same "
                          f"way: {estimate(head['change'], head['ci_low'], head['ci_high'], signed=True)} points, "
                          f"{head['verdict']}.")
        return [Section(f"{title} per model", intro, tables=tables)], out

    def lines(metrics: dict[str, Any]) -> list[str]:
        out = [f"{suite} {label}: {metrics.get('headline_name')} {v:.1f}" for label, v in
               (metrics.get("headline") or {}).items() if v is not None]
        for label, ch in (metrics.get("change") or {}).items():
            if ch.get("change") is not None:
                out.append(f"{suite} {label}: change {estimate(ch['change'], ch['ci_low'], ch['ci_high'], signed=True)}"
                           f" points, {ch['verdict']}")
            else:
                out.append(f"{suite} {label}: {ch['verdict']} ({ch.get('reason', '')})")
        return out

    return SuiteComparison(section, lines)
