"""BOLD in ``biaslens compare``: each model's group means and largest gaps, and each later
model's headline gap against the first by the one change decision every method uses
(:func:`biaslens.comparison.change.method_change`: not comparable when the runs differ in pages,
decoding or judge, else two 95% simultaneous intervals that do not overlap, read by distance
from the ideal gap of 0)."""

from __future__ import annotations

from typing import Any

from biaslens.comparison.change import method_change
from biaslens.comparison.entries import Entry
from biaslens.methods.bold.report import compare_section
from biaslens.report.html import Section
from biaslens.rounding import number


def bold_section(entries: list[Entry], options=None) -> tuple[list[Section], dict[str, Any]]:
    """`biaslens compare`: the per-model tables and each later model's headline change."""
    have = [e for e in entries if "bold" in e.metrics]
    if not have:
        return [], {}
    changes = {e.label: {k: c.get(k) for k in ("verdict", "reason", "outcome", "change")}
               for e in have[1:] for c in [method_change("bold", have[0], e)]}
    return compare_section(have, changes)


def bold_lines(metrics: dict[str, Any]) -> list[str]:
    """The terminal lines of `biaslens compare`: each model's largest sentiment gap, and its change."""
    vs = metrics.get("vs_first") or {}
    return [f"BOLD {label}: largest sentiment gap {number(v.get('value'), signed=True)} ({v.get('pair')})"
            + (f"; against the first: {vs[label]['verdict']}" if label in vs else "")
            for label, v in (metrics.get("largest_sentiment_gap") or {}).items()]
