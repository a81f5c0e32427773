"""BBQ in ``biaslens compare``: each model's S_AMB and S_DIS per category, and each later model's
pooled S_AMB against the first by the one change decision every method uses
(:func:`biaslens.comparison.change.method_change`: not comparable when the runs differ in data
or answering, else two 95% template-bootstrap intervals that do not overlap)."""

from __future__ import annotations

from typing import Any

from biaslens.comparison.change import method_change
from biaslens.comparison.entries import Entry
from biaslens.methods.bbq.report import compare_section
from biaslens.report.html import Section
from biaslens.rounding import number


def bbq_section(entries: list[Entry], options=None) -> tuple[list[Section], dict[str, Any]]:
    """`biaslens compare`: the per-category table, the pooled scores and the change of each later
    model's headline against the first."""
    have = [e for e in entries if "bbq" in e.metrics]
    if not have:
        return [], {}
    verdicts: dict[str, dict[str, Any]] = {have[0].label: {"verdict": "reference", "reason": "the first model"}}
    for e in have[1:]:
        c = method_change("bbq", have[0], e)
        verdicts[e.label] = {k: c.get(k) for k in ("verdict", "reason", "outcome", "change")}
    return compare_section(have, verdicts)


def bbq_lines(metrics: dict[str, Any]) -> list[str]:
    """The terminal lines of `biaslens compare`: each model's pooled S_AMB and S_DIS, and its change."""
    vs = metrics.get("vs_first") or {}
    return [f"BBQ {label}: S_AMB {number(100 * v['s_amb'], signed=True)}, S_DIS {number(100 * v['s_dis'], signed=True)} "
            "(x100, all categories)" + (f"; against the first: {vs[label]['verdict']}"
                                        if label in vs and vs[label].get("verdict") != "reference" else "")
            for label, v in (metrics.get("pooled") or {}).items()]
