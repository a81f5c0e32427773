"""The bias card's page and the page comparing two cards (every text escaped by the
report template; links only to files inside the card folder)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens import __version__
from biaslens.report.html import Section, Table, interval_text, render_report
from biaslens.scorers.card import skill_text


def _value(v: Any) -> str:
    return "–" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def _flat(settings: dict[str, Any], prefix: str = "") -> str:
    """{'fairpair': {'samples': 6}} -> 'samples=6' (a suite's own section name is dropped)."""
    parts = []
    for k, v in settings.items():
        if isinstance(v, dict):
            parts.append(_flat(v))
        else:
            parts.append(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")
    return " ".join(parts)


def _direction(row: dict[str, Any]) -> str:
    hib, ideal = row.get("higher_is_better"), row.get("ideal")
    if hib is None:
        return "–" if ideal is None else f"ideal {ideal:g}"
    return "higher is better" if hib else "lower is better" + ("" if ideal is None else f" (ideal {ideal:g})")


def card_status(rows: list[dict[str, Any]]) -> str:
    """"complete" when every method that applies completed, "failed" when none did, else "partial"."""
    ran = [r for r in rows if r.get("status") != "not applicable"]
    done = sum(r.get("status") == "complete" for r in ran)
    return "complete" if done == len(ran) else "failed" if done == 0 else "partial"


def render_card(card: dict[str, Any]) -> str:
    """One page: the verdict per method first, then each method's numbers, warnings and scorers."""
    methods = card["methods"]
    headline = pd.DataFrame([{
        "method": r.get("title", r["suite"]), "verdict": r.get("verdict"), "headline metric": r.get("headline") or "–",
        "value": _value(r.get("value")), "95% interval": interval_text(r.get("ci_low"), r.get("ci_high")), "direction": _direction(r),
        "status": r.get("status"), "seconds": r.get("seconds")} for r in methods])
    done = sum(r.get("status") == "complete" for r in methods)
    settings = "; ".join(f"{suite} {_flat(s)}" for suite, s in (card.get("budget_settings") or {}).items() if s)
    sections = [Section(
        "Verdicts",
        f"{done} of {len(methods)} methods ran to completion on {card['model']} at the '{card['budget']}' budget "
        f"({settings or 'each suite its own defaults'}). Each verdict carries its own uncertainty (interval, noise "
        "floor or test); a method that failed or does not apply says so and gives no number. Smaller budgets give "
        "wider intervals: read the interval, not only the value.",
        tables=[Table("One line per method", headline, max_rows=20)])]
    for r in methods:
        links = [("full report", r["report"])] if r.get("report") else []
        if r.get("status") != "complete":
            sections.append(Section(r.get("title", r["suite"]), r.get("verdict", ""), links=links))
            continue
        entries = pd.DataFrame([{"metric": e.get("name"), "value": _value(e.get("value")), "95% interval": interval_text(e.get("ci_low"), e.get("ci_high")),
                                 "interval method": e.get("interval") or "–", "n used": _value(e.get("n_used")),
                                 "n missing": _value(e.get("n_missing")), "what it is": e.get("description") or ""}
                                for e in r.get("entries") or []])
        tables = [Table("Metrics", entries, max_rows=30)] if len(entries) else []
        cards = r.get("scorer_cards") or []
        if cards:
            tables.append(Table("Scorers that judged the text (scorer cards)", pd.DataFrame([{
                "role": c.get("role"), "scorer": c.get("used") or c.get("name"),
                "skill on labelled real output (test)": skill_text(c["skill"]) if c.get("skill") else "not measured",
                "warning": " ".join(filter(None, (c.get("skill_warning"), c.get("warning"))))} for c in cards])))
        intro = r.get("verdict", "")
        if r.get("warnings"):
            intro += " Warnings: " + " ".join(r["warnings"])
        sections.append(Section(r.get("title", r["suite"]), intro, tables=tables, links=links))
    machine = card.get("machine") or {}
    # cards written before the status field: derive it, never assume "complete"
    run = {"suite": "bias card", "model": card["model"], "status": card.get("status") or card_status(methods),
           "started": None,
           "elapsed_seconds": card.get("elapsed_seconds"), "biaslens_version": __version__,
           "details": {"budget": card["budget"], "machine": f"{machine.get('cpu_model', '?')}, "
                                                            f"{machine.get('cpus', '?')} cores"}}
    warnings = [f"{r.get('title', r['suite'])}: {r['verdict']}" for r in methods if r.get("status") == "failed"]
    # the metrics it names in rows (the headline and each method's entries), for the glossary
    shown = [n for r in methods for n in (r.get("headline"), *(e.get("name") for e in r.get("entries") or [])) if n]
    return render_report(title=f"Bias card: {card['model']}", run=run, sections=sections, warnings=warnings,
                         glossary_terms=shown)


def render_card_compare(result: dict[str, Any]) -> str:
    """Method by method: before, after, and a guarded verdict with its reason."""
    rows = pd.DataFrame([{"method": r.get("title", r["suite"]), "headline metric": r.get("headline") or "–",
                          "before": _value(r.get("before")), "after": _value(r.get("after")),
                          "verdict": r.get("verdict"), "why": r.get("reason") or ""} for r in result["methods"]])
    links = [(f"{r['suite']} comparison", r["report"]) for r in result["methods"] if r.get("report")]
    b, a = result["before"], result["after"]
    sections = [Section(
        "Before and after",
        f"Before: {b['model']} ({b['card']}); after: {a['model']} ({a['card']}). A change is reported only with its "
        "uncertainty: a paired bootstrap where the method has one, else two 95% intervals that do not overlap. "
        "Methods whose runs measured different things are 'not comparable', with the reason.",
        tables=[Table("Per method", rows, max_rows=20)], links=links)]
    run = {"suite": "bias card comparison", "model": f"{b['model']} vs {a['model']}", "status": "complete",
           "started": None, "elapsed_seconds": None, "biaslens_version": __version__, "details": {}}
    return render_report(title=f"Bias cards: {b['model']} vs {a['model']}", run=run, sections=sections,
                         warnings=[result["warning"]] if result.get("warning") else [],
                         glossary_terms=[r["headline"] for r in result["methods"] if r.get("headline")])
