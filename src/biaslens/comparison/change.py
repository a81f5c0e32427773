"""Did a method's headline change between two runs, and was it for the worse?

One decision per method, used by every surface that compares two models: ``biaslens compare``
of two runs (each later model against the first), of two bias cards (method by method), and the
bias regression gate ``--fail-on worse`` (:func:`gate`).

A change is called only where the two runs measured the same thing
(:func:`~biaslens.comparison.entries.run_differences`: dataset, phrase or prompt selection,
decoding, scorer, perplexity definition, and the items scored wherever a suite keys its items:
a 400-pair sample is not all 1,508 CrowS-Pairs pairs) and only with its uncertainty: the suite's paired
before/after test where it has one (generation bias: a paired jackknife over the prompts both
runs share; CrowS-Pairs and WinoBias: item by item, :data:`PAIRED_HEADLINE_KEY`), else two 95%
intervals that do not overlap
(:func:`~biaslens.comparison.entries.interval_change_verdict`, conservative: about a 0.5% test
each). Whether a change is *worse* follows the headline's direction (``higher_is_better``), or,
for a signed measure whose ideal is a value (a gap whose ideal is 0), its distance from that
value: worse when every value of the after interval is farther from the ideal than every value
of the before interval.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from biaslens.comparison.entries import (
    Entry,
    differences_reason,
    finite_or_none,
    interval_change_verdict,
    run_differences,
)
from biaslens.report import compare as report
from biaslens.report.html import Section

#: what :func:`outcome` calls a change
OUTCOMES = ("worse", "better", "no detectable change", "cannot tell", "not comparable")


#: where a suite's comparison section records its paired change of the headline against the first run,
#: model label -> ``verdict``, ``change``, ``ci`` (generation bias: ``fgb_change_vs_first``, its older name)
PAIRED_HEADLINE_KEY = "headline_change_vs_first"


def paired_headline_change(section_metrics: dict[str, Any] | None, label: str) -> dict[str, Any] | None:
    """The paired change of a suite's headline for model ``label`` that its comparison section
    recorded, or None where the suite has no paired comparison of its headline."""
    m = section_metrics or {}
    changes = m.get(PAIRED_HEADLINE_KEY) or m.get("fgb_change_vs_first") or {}
    return changes.get(label)


def headline(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """The uniform headline entry (``entries[0]``) of a run's metrics.json, {} when it has none."""
    entries = (metrics or {}).get("entries") or []
    return entries[0] if entries and isinstance(entries[0], dict) else {}


def metric_name(entry: dict[str, Any], metrics: dict[str, Any] | None = None) -> str | None:
    """The headline's metric name without a model in it. Runs written before metric names stopped
    carrying the model (``largest_sentiment_gap.<model>``) are read the same way."""
    name = entry.get("name")
    if not isinstance(name, str):
        return None
    stem, _, last = name.rpartition(".")
    models = {str(m) for m in (metrics or {}).get("models") or [] if isinstance(m, str)}
    models |= {m.rsplit("/", 1)[-1] for m in models} | {str((metrics or {}).get("model") or "")}
    return stem if stem and last in models else name


def _distance_interval(lo: float, hi: float, ideal: float) -> tuple[float, float]:
    """|x - ideal| over the interval [lo, hi]."""
    a, b = abs(lo - ideal), abs(hi - ideal)
    return (0.0 if lo <= ideal <= hi else min(a, b)), max(a, b)


def outcome(change: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> str:
    """One of :data:`OUTCOMES` for a change verdict (``went up`` / ``went down`` / ``no detectable
    change`` / ``not comparable`` / anything else) of a headline whose direction ``before`` states."""
    verdict = change.get("verdict")
    if verdict == "not comparable":
        return "not comparable"
    if verdict == "no detectable change":
        return "no detectable change"
    if verdict not in ("went up", "went down"):
        return "cannot tell"
    hib = before.get("higher_is_better")
    if hib is not None:
        up_is_worse = not hib
        return "worse" if (verdict == "went up") == up_is_worse else "better"
    ideal = finite_or_none(before.get("ideal"))
    bounds = [finite_or_none(x.get(k)) for x in (before, after) for k in ("ci_low", "ci_high")]
    if ideal is None or None in bounds:
        return "cannot tell"  # it moved, but neither direction is better
    lo_b, hi_b, lo_a, hi_a = bounds  # type: ignore[misc]
    near_b, far_b = _distance_interval(lo_b, hi_b, ideal)
    near_a, far_a = _distance_interval(lo_a, hi_a, ideal)
    if near_a > far_b:
        return "worse"
    if far_a < near_b:
        return "better"
    return "no detectable change"  # it moved, but not distinguishably away from (or towards) the ideal


def method_change(suite: str, before: Entry, after: Entry, paired: dict[str, Any] | None = None) -> dict[str, Any]:
    """The change of ``suite``'s headline from ``before`` to ``after``: ``verdict`` (went up, went
    down, no detectable change, not comparable, no verdict), ``reason``, ``outcome`` (worse,
    better, ...), both values and intervals. ``paired``: the suite's own paired verdict
    (``verdict``, ``change``, ``ci``), used instead of the intervals' overlap."""
    from biaslens.rounding import interval, level_text

    mb, ma = before.metrics.get(suite) or {}, after.metrics.get(suite) or {}
    hb, ha = headline(mb), headline(ma)
    row: dict[str, Any] = {
        "suite": suite, "model": after.label, "headline": metric_name(hb, mb),
        "before": finite_or_none(hb.get("value")), "before_ci": [finite_or_none(hb.get("ci_low")), finite_or_none(hb.get("ci_high"))],
        "after": finite_or_none(ha.get("value")), "after_ci": [finite_or_none(ha.get("ci_low")), finite_or_none(ha.get("ci_high"))],
        "before_level": finite_or_none(hb.get("level")), "after_level": finite_or_none(ha.get("level")),
        "higher_is_better": hb.get("higher_is_better"), "ideal": finite_or_none(hb.get("ideal"))}
    if not hb or not ha:
        row.update(verdict="not comparable", reason="no headline entry in " + ("both runs" if not (hb or ha) else
                                                                                "one run"))
    elif metric_name(hb, mb) != metric_name(ha, ma):
        row.update(verdict="not comparable",
                   reason=f"different headline metrics ({metric_name(hb, mb)} vs {metric_name(ha, ma)})")
    elif diffs := run_differences([before, after], suite):
        row.update(verdict="not comparable", reason=differences_reason(diffs))
    elif paired and paired.get("verdict") in ("went up", "went down", "no detectable change"):
        ci = paired.get("ci")
        said = level_text(paired.get("level"))
        reason = (paired.get("reason") or "paired comparison over the items both runs share")
        row.update(verdict=paired["verdict"], change=paired.get("change"), change_ci=ci,
                   reason=(f"{reason}, {said} CI of the change {interval(ci[0], ci[1], signed=True)}" if ci
                           else paired.get("reason") or ""))
    elif paired and paired.get("verdict") == "not comparable":
        row.update(verdict="not comparable", reason=paired.get("reason") or "")
    elif paired and paired.get("verdict") == "cannot tell":
        row.update(verdict="no verdict", reason=paired.get("reason") or "the paired comparison cannot tell")
    else:
        row.update(interval_change_verdict(hb, ha))
    row["outcome"] = outcome(row, hb, ha)
    return row


def headline_section(entries: list[Entry], suite: str) -> tuple[list[Section], dict[str, Any]]:
    """The comparison of a suite without its own section: its uniform headline entry
    (``metrics.json`` ``entries[0]``) per model, each against the first model
    (:func:`method_change`: refused where the runs measured different
    things, else two 95% intervals that do not overlap)."""
    from biaslens.rounding import value_and_interval, with_level

    have = [e for e in entries if suite in e.runs]
    if not have:
        return [], {}
    heads = {e.label: headline(e.metrics.get(suite)) for e in have}
    first = have[0]
    rows, out = [], {"headline": metric_name(heads[first.label], first.metrics.get(suite)), "models": {}}
    for e in have:
        h = heads[e.label]
        value, ci = value_and_interval(h.get("value"), h.get("ci_low"), h.get("ci_high"))
        row = {"model": e.label, "metric": metric_name(h, e.metrics.get(suite)), "value": value,
               "interval (level)": with_level(ci, h.get("level")),
               "n used": h.get("n_used")}
        if e is first:
            verdict = {"verdict": "reference", "reason": "the first model"}
        else:
            change = method_change(suite, first, e)
            verdict = {k: change[k] for k in ("verdict", "reason", "outcome", "change") if k in change}
        row.update(**{"vs first": verdict["verdict"], "why": verdict.get("reason", "")})
        rows.append(row)
        out["models"][e.label] = {"value": finite_or_none(h.get("value")), "ci_low": finite_or_none(h.get("ci_low")),
                                  "ci_high": finite_or_none(h.get("ci_high")), **verdict}
    return [report.headline_section(suite, rows, heads[first.label].get("higher_is_better"))], out


# --------------------------------------------------------------------------- the gate


@dataclass
class GateResult:
    """What ``--fail-on worse`` decided: ``exit_code`` 1 when a method got distinguishably worse,
    2 when none did but a method could not be compared, else 0; ``lines``: one reason per method."""

    exit_code: int
    lines: list[str] = field(default_factory=list)
    methods: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def as_dict(self) -> dict[str, Any]:
        """The decision as JSON (``--json``'s ``gate`` field)."""
        keys = ("suite", "model", "headline", "outcome", "verdict", "reason", "before", "before_ci", "before_level",
                "after", "after_ci", "after_level")
        return {"fail_on": "worse", "exit_code": self.exit_code,
                "result": {0: "pass", 1: "worse", 2: "not comparable"}[self.exit_code],
                "methods": [{k: m.get(k) for k in keys} for m in self.methods]}


def _line(m: dict[str, Any]) -> str:
    from biaslens.rounding import estimate, level_text

    def said(v, ci, level):
        return estimate(v, *(ci or [None, None]), label=f"{level_text(level)} CI") if v is not None else "no value"

    what = f"{m['suite']} {m.get('headline') or 'headline'}"
    if m.get("model") not in (None, "after"):
        what += f" of {m['model']}"
    if m["outcome"] in ("worse", "better", "no detectable change") and m.get("before") is not None:
        numbers = (f"{said(m['before'], m.get('before_ci'), m.get('before_level'))} -> "
                   f"{said(m['after'], m.get('after_ci'), m.get('after_level'))}")
        return f"{m['outcome']}: {what} {numbers}" + (f"; {m['reason']}" if m.get("reason") else "")
    return f"{m['outcome']}: {what}" + (f" ({m['reason']})" if m.get("reason") else "")


def gate(methods: list[dict[str, Any]]) -> GateResult:
    """The regression gate over per-method changes (:func:`method_change` rows, or the rows of
    :func:`biaslens.bias_card.compare_cards`): exit 1 when any got worse, else 2 when any is not
    comparable, else 0. "cannot tell" (no interval on a headline, e.g. FairPair's F) passes, and
    its line says so."""
    worse = any(m.get("outcome") == "worse" for m in methods)
    off = any(m.get("outcome") == "not comparable" for m in methods)
    code = 1 if worse else 2 if off or not methods else 0
    lines = [_line(m) for m in methods] or ["not comparable: the two share no method"]
    return GateResult(code, lines, list(methods))


def print_gate(result: GateResult, stream=None) -> None:
    """One line per method on ``stream`` (standard error), then the decision."""
    stream = stream or sys.stderr
    for line in result.lines:
        stream.write(f"gate: {line}\n")
    decision = {0: "pass: no method got distinguishably worse",
                1: "FAIL: a method got distinguishably worse (exit 1)",
                2: "not comparable: a method could not be compared, so the gate cannot pass (exit 2)"}[result.exit_code]
    stream.write(f"gate: {decision}\n")
    stream.flush()

