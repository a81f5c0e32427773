"""The bias card's page and the page comparing two cards (every text escaped by the
report template; links only to files inside the card folder)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens import __version__
from biaslens.report.html import Section, Table, render_report
from biaslens.results import NO_SKILL_NOTE
from biaslens.rounding import estimate, level_text, number, value_and_interval, with_level
from biaslens.scorers.card import skill_text


def _value(v: Any) -> str:
    """A number without an interval (3 significant figures); other values as they are."""
    return "–" if v is None else number(v) if isinstance(v, float) else str(v)


def _value_and_interval(e: dict[str, Any]) -> tuple[str, str]:
    """The value and its interval with its level ("87 to 129 (90%)"), both to the interval's
    precision (rounding.py)."""
    value, ci = value_and_interval(e.get("value"), e.get("ci_low"), e.get("ci_high"))
    return value, with_level(ci, _level(e))


def _level(row: dict[str, Any]) -> float | None:
    """The coverage of a card row's (or entry's) interval: its own ``level``, else its headline
    entry's (cards written before rows carried it)."""
    if row.get("level") is not None:
        return row["level"]
    entries = row.get("entries") or []
    return entries[0].get("level") if entries and isinstance(entries[0], dict) else None


#: the short name a card sentence starts with (else the method's title)
SHORT_NAMES = {"holistic-likelihood": "HolisticBias likelihood", "redditbias": "RedditBias",
               "holistic-generation": "HolisticBias generation", "fairpair": "FairPair", "community": "Community bias"}


def method_sentence(row: dict[str, Any]) -> str:
    """One sentence in plain words per method: its verdict with the uncertainty it carries, or
    that it failed / does not apply / was skipped (and gave no number)."""
    name = SHORT_NAMES.get(row.get("suite"), row.get("title") or row.get("suite"))
    status, verdict = row.get("status"), (row.get("verdict") or "").strip()
    if status == "failed":
        why = verdict.removeprefix("failed: ").splitlines()[0] if verdict else "no reason recorded"
        return f"{name}: failed, so it gives no number ({why})."
    if status == "not applicable":
        return f"{name}: {verdict or 'not applicable'}; no number."
    if status != "complete":
        return f"{name}: skipped ({verdict or status}); no number."
    if not verdict or verdict.startswith("no verdict"):
        verdict = _entry_reading(row)
    judges = sorted({str(e.get("judge")) for e in row.get("entries") or [] if e.get("judge_has_skill") is False})
    if judges and NO_SKILL_NOTE not in verdict:  # a run whose verdict predates the note still says it
        verdict = f"{verdict.rstrip('. ')}; numbers here rest on a {NO_SKILL_NOTE} ({', '.join(judges)})"
    return f"{name}: {verdict}" + ("" if verdict.endswith(".") else ".")


def _judge_cell(e: dict[str, Any] | None) -> str:
    """The judge a number rests on, and "judge without measured skill" where that is so."""
    if not e or not e.get("judge"):
        return "–"
    return f"{e['judge']}: {NO_SKILL_NOTE}" if e.get("judge_has_skill") is False else str(e["judge"])


def _entry_reading(row: dict[str, Any]) -> str:
    """A headline entry against its ideal, for a method whose run carries no verdict sentence."""
    value, lo, hi, ideal = row.get("value"), row.get("ci_low"), row.get("ci_high"), row.get("ideal")
    what = f"{row.get('headline') or 'headline'} {estimate(value, lo, hi, label=f'{level_text(_level(row))} CI')}"
    if value is None:
        return "cannot tell: no headline number"
    if lo is None or hi is None:
        return f"cannot tell: {what} has no interval"
    if ideal is None:
        return what
    if lo <= ideal <= hi:
        return f"cannot tell: {what} includes the value of an unbiased model, {number(ideal)}"
    return f"{what} excludes the value of an unbiased model, {number(ideal)}"


def reference_line(r: dict[str, Any]) -> tuple[float | None, str]:
    """The value a method's sentence reads its headline against, and what it is: the entry's
    ``reference`` (a noise floor, a chance level) where it has one, else its ideal (the value of an
    unbiased model)."""
    if r.get("reference") is not None:
        return float(r["reference"]), str(r.get("reference_label") or "reference")
    if r.get("ideal") is not None:
        return float(r["ideal"]), "unbiased model"
    return None, ""


def headline_figure(methods: list[dict[str, Any]]):
    """One row per method: the headline value (dot) with its interval (bar) against the value the
    sentence reads it against (dashed line, named: the noise floor or chance level where the method
    has one, else the value of an unbiased model), each on its own scale; a method with no number
    says why."""
    from biaslens.report.html import figure_from_matplotlib, subplots

    fig, axes = subplots(len(methods), 1, figsize=(8.5, 0.95 * len(methods) + 0.6), squeeze=False)
    for ax, r in zip(axes[:, 0], methods):
        name = SHORT_NAMES.get(r.get("suite"), r.get("title") or r.get("suite"))
        value, lo, hi = (r.get(k) for k in ("value", "ci_low", "ci_high"))
        ref, ref_label = reference_line(r)
        ax.set_yticks([])
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        ax.set_ylabel(f"{name}\n{r.get('headline') or ''}", rotation=0, ha="right", va="center", fontsize=8.5)
        if r.get("status") != "complete" or value is None:
            ax.set_xticks([])
            ax.spines["bottom"].set_visible(False)
            ax.text(0.0, 0.5, f"{r.get('status') or 'no result'}: no number", transform=ax.transAxes, va="center",
                    fontsize=9, color="#b42318" if r.get("status") == "failed" else "#555")
            continue
        # a floor of a size (|gap|) beside a signed number: drawn on both sides of 0
        refs: list[float] = ([ref, -ref] if "|" in ref_label and ref > 0 else [ref]) if ref is not None else []
        xs = [x for x in (value, lo, hi, *refs) if x is not None]
        if lo is not None and hi is not None:
            ax.errorbar([value], [0], xerr=[[value - lo], [hi - value]], fmt="o", color="#4c78a8", capsize=4, lw=2)
        else:
            ax.plot([value], [0], "o", color="#4c78a8")
        if ref is not None:
            for x in refs:
                ax.axvline(x, color="#333", ls="--", lw=1)
            short = ref_label.split(" (")[0]  # "chance level (0.05: ...)" -> "chance level"
            shown = f"{'±' if len(refs) == 2 else ''}{float(f'{ref:.3g}'):g}"
            ax.text(max(refs), 0.93, f" {short} {shown}", color="#333", fontsize=7.5, va="top", ha="left")
        # a floor on the scale: a value without an interval, near its reference, must not look far from it
        span = max(max(xs) - min(xs), 0.1 * max(abs(x) for x in xs)) or 1.0
        mid = (max(xs) + min(xs)) / 2
        ax.set_xlim(mid - 0.62 * span, mid + 0.62 * span)
        ax.set_ylim(-1, 1)
        ax.tick_params(axis="x", labelsize=8)
        said = estimate(value, lo, hi, label=f"{level_text(_level(r))} CI") if lo is not None and hi is not None else f"{number(value)} (no interval)"
        ax.text(1.01, 0.5, said, transform=ax.transAxes, va="center", fontsize=8.5)
    fig.tight_layout(h_pad=0.6)
    return figure_from_matplotlib(
        fig, "Each method's headline against what its sentence reads it against",
        "Dot: the headline number; bar: its interval, at the level printed beside it (95%, or the entry's own: "
        "90% for Full Gen Bias' permutation interval, simultaneous over the bias types or pairs where the "
        "number is the largest of several); dashed line, named on the plot: the value the sentence above compares "
        "the number with. For Full Gen Bias that is its permuted-label noise floor (sampling noise alone puts an "
        "unbiased model there, above 0), for Likelihood Bias the chance level (about 0.05 of pairs differ by chance), "
        "for BOLD's signed largest gap the noise floor of its size, on both sides of 0, elsewhere the value of an "
        "unbiased model. Each row has its own scale.")


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
    """One page: a sentence per method and the picture of their headlines first, then the table
    of headline numbers, each method's numbers, warnings and scorers, and last the budget's sizes
    and the machine."""
    methods = card["methods"]
    rows = []
    for r in methods:
        value, ci = _value_and_interval(r)
        rows.append({"method": r.get("title", r["suite"]), "headline metric": r.get("headline") or "–",
                     "value": value, "interval (level)": ci, "direction": _direction(r), "status": r.get("status"),
                     "seconds": r.get("seconds"), "judge": _judge_cell((r.get("entries") or [None])[0])})
    if all(row["judge"] == "–" for row in rows):
        rows = [{k: v for k, v in row.items() if k != "judge"} for row in rows]
    done = sum(r.get("status") == "complete" for r in methods)
    glance = Section(
        "At a glance",
        f"{done} of {len(methods)} methods ran to completion on {card['model']} at the '{card['budget']}' budget "
        "(its sizes are at the end of the page). One sentence per method, each with its uncertainty; \"cannot "
        "tell\" means the numbers support neither reading. Smaller budgets give wider intervals.",
        bullets=[method_sentence(r) for r in methods], figures=[headline_figure(methods)] if methods else [])
    sections = [glance, Section(
        "Headline numbers",
        "The number each sentence rests on, rounded to what its interval justifies; a method that failed or does "
        "not apply gives none.", tables=[Table("One line per method", pd.DataFrame(rows), max_rows=20)])]
    for r in methods:
        links = [("full report", r["report"])] if r.get("report") else []
        if r.get("status") != "complete":
            sections.append(Section(r.get("title", r["suite"]), r.get("verdict", ""), links=links))
            continue
        several = any(e.get("model") for e in r.get("entries") or [])  # a run that measured several models
        entries = pd.DataFrame([{"metric": e.get("name"), **({"model": e.get("model") or "–"} if several else {}),
                                 **dict(zip(("value", "interval (level)"), _value_and_interval(e))),
                                 "interval method": e.get("interval") or "–", "n used": _value(e.get("n_used")),
                                 "n missing": _value(e.get("n_missing")), "judge": _judge_cell(e),
                                 "what it is": e.get("description") or ""}
                                for e in r.get("entries") or []])
        if len(entries) and (entries["judge"] == "–").all():
            entries = entries.drop(columns="judge")
        tables = [Table("Metrics", entries, max_rows=30)] if len(entries) else []
        cards = r.get("scorer_cards") or []
        if cards:
            tables.append(Table("Scorers that judged the text (scorer cards)", pd.DataFrame([{
                "role": c.get("role"), "scorer": c.get("used") or c.get("name"),
                "skill on labelled real output (test)": skill_text(c["skill"]) if c.get("skill") else "not measured",
                "warning": " ".join(filter(None, (c.get("skill_warning"), c.get("warning"))))} for c in cards])))
        intro = r.get("verdict", "")
        shown = {c.get("skill_warning") for c in cards}  # already in the scorer-card table below
        if [w for w in r.get("warnings") or [] if w not in shown]:
            intro += " Warnings: " + " ".join(w for w in r["warnings"] if w not in shown)
        sections.append(Section(r.get("title", r["suite"]), intro, tables=tables, links=links))
    machine = card.get("machine") or {}
    budget = {"budget": card["budget"]}
    budget.update({suite: _flat(s) or "the suite's own defaults"
                   for suite, s in (card.get("budget_settings") or {}).items()})
    budget["machine"] = f"{machine.get('cpu_model', '?')}, {machine.get('cpus', '?')} cores"
    if card.get("elapsed_seconds") is not None:
        budget["time"] = f"{number(card['elapsed_seconds'])} s"
    sections.append(Section(
        "Budget and machine",
        f"The '{card['budget']}' budget's sizes per method (on top of each suite's defaults), and where it ran.",
        metrics=budget))
    # cards written before the status field: derive it, never assume "complete"
    run = {"suite": "bias card", "model": card["model"], "status": card.get("status") or card_status(methods),
           "started": None, "elapsed_seconds": card.get("elapsed_seconds"), "biaslens_version": __version__,
           "details": {}}
    warnings = [f"{r.get('title', r['suite'])}: {r['verdict']}" for r in methods if r.get("status") == "failed"]
    # the metrics it names in rows (the headline and each method's entries), for the glossary
    shown = [n for r in methods for n in (r.get("headline"), *(e.get("name") for e in r.get("entries") or [])) if n]
    return render_report(title=f"Bias card: {card['model']}", run=run, sections=sections, warnings=warnings,
                         glossary_terms=shown)


def render_card_compare(result: dict[str, Any]) -> str:
    """Method by method: before, after, and a guarded verdict with its reason."""
    def said(v: Any, ci: Any, level: Any) -> str:
        # the value to its interval's precision, as the card prints it, with the interval's level
        value, ci_text = value_and_interval(v, *(ci or [None, None]))
        return value if ci_text == "–" else f"{value} ({level_text(level)} CI {ci_text})"

    rows = pd.DataFrame([{"method": r.get("title", r["suite"]), "headline metric": r.get("headline") or "–",
                          "before": said(r.get("before"), r.get("before_ci"), r.get("before_level")),
                          "after": said(r.get("after"), r.get("after_ci"), r.get("after_level")),
                          "verdict": r.get("verdict"), "for a gate": r.get("outcome") or "–",
                          "why": r.get("reason") or ""} for r in result["methods"]])
    links = [(f"{r['suite']} comparison", r["report"]) for r in result["methods"] if r.get("report")]
    b, a = result["before"], result["after"]
    sections = [Section(
        "Before and after",
        f"Before: {b['model']} ({b['card']}); after: {a['model']} ({a['card']}). A change is reported only with its "
        "uncertainty: a paired test where the method has one (generation bias: a jackknife over the prompts both "
        "runs share; CrowS-Pairs and WinoBias: item by item over the pairs or twins both runs scored), else two "
        "intervals that do not overlap (each at the level printed beside it). Methods whose runs measured different things "
        "are 'not comparable', with the reason. 'For a gate' says whether a change is for the worse (what "
        "`biaslens compare --fail-on worse` fails on).",
        tables=[Table("Per method", rows, max_rows=20)], links=links)]
    run = {"suite": "bias card comparison", "model": f"{b['model']} vs {a['model']}", "status": "complete",
           "started": None, "elapsed_seconds": None, "biaslens_version": __version__, "details": {}}
    return render_report(title=f"Bias cards: {b['model']} vs {a['model']}", run=run, sections=sections,
                         warnings=[result["warning"]] if result.get("warning") else [],
                         glossary_terms=[r["headline"] for r in result["methods"] if r.get("headline")])
