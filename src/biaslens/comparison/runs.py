"""``biaslens compare``: finished runs of several models (original vs debiased), no model call.

Each *entry* is one model: a run folder, a debiased model folder (its ``eval/`` and
``downstream-*/`` run folders are used), or several run folders joined with commas
(:func:`biaslens.comparison.entries.load_entry`). A suite with its own comparison declares
it (``Suite.compare`` in :mod:`biaslens.suites`: a section builder and its terminal lines);
every other suite is compared by its uniform headline entry
(:func:`biaslens.comparison.change.headline_section`). The downstream dialog tasks
(``biaslens downstream``, not a suite) have their section here.

What the runs did differently (dataset, perplexity definition, decoding, scorer, prompt
selection; read from each run's ``run.json``) is listed first (:func:`run_differences`);
a section may refuse a verdict on runs that measured different things.

This module reads and computes; :mod:`biaslens.report.compare` and the suites' report
modules draw the figures and write the page (``metrics.json`` and ``report.html`` are
written atomically).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.comparison.change import headline_section
from biaslens.comparison.entries import (
    CompareOptions,
    Entry,
    default_compare_out,
    finite_or_none,
    load_entry,
    run_differences,
)
from biaslens.errors import ConfigError
from biaslens.report import compare as report
from biaslens.report.html import Section
from biaslens.report.run_folder import write_json


def downstream_section(entries: list[Entry]) -> tuple[list[Section], dict[str, Any]]:
    """Dialog state tracking (Table 4) and response generation (Table 5) scores."""
    rows = []
    for e in entries:
        for task, m in (e.metrics.get("downstream") or {}).items():
            scores = m.get("scores") or {}
            rows.append({"model": e.label, "task": task, **{k: finite_or_none(v) for k, v in scores.items()}})
    if not rows:
        return [], {}
    df = pd.DataFrame(rows)
    sections = [report.downstream_section(df)]
    metrics = {task: {r["model"]: {k: v for k, v in r.items() if k not in ("model", "task") and v == v}
                      for r in g.to_dict("records")} for task, g in df.groupby("task", sort=False)}
    return sections, metrics


def section_builders(entries: list[Entry]) -> dict[str, Callable[..., tuple[list[Section], dict[str, Any]]]]:
    """suite -> comparison section builder ``(entries, options) -> (sections, metrics)``: the
    ``Suite.compare`` of each registered suite the entries ran (in registry order), then the
    downstream tasks. A suite without one is compared by its headline."""
    from biaslens.suites import SUITES, suite_class

    ran = {s for e in entries for s in e.runs}
    out: dict[str, Callable[..., tuple[list[Section], dict[str, Any]]]] = {}
    for name in SUITES:
        if name in ran and (spec := suite_class(name).compare) is not None:
            out[name] = spec.section
    out["downstream"] = downstream_section
    return out


def summary_lines(metrics: dict[str, Any]) -> list[str]:
    """The terminal lines of the suites' own comparisons (``Suite.compare.lines``), registry order."""
    from biaslens.suites import SUITES, suite_class

    lines = []
    for name in SUITES:
        if metrics.get(name) and (spec := suite_class(name).compare) is not None and spec.lines is not None:
            lines += spec.lines(metrics[name])
    return lines


def headline_changes(entries: list[Entry], metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """suite -> model -> the change of the suite's headline against the first model
    (:func:`biaslens.comparison.change.method_change`, with the suite's paired verdict where its
    section made one): what the terminal lines, ``--json`` and the regression gate read."""
    from biaslens.comparison.change import method_change, paired_headline_change

    first, out = entries[0], {}
    for suite in first.runs:
        if suite.startswith("downstream"):
            continue
        for e in entries[1:]:
            if suite in e.runs:
                paired = paired_headline_change(metrics.get(suite), e.label)
                out.setdefault(suite, {})[e.label] = method_change(suite, first, e, paired=paired)
    return out


def _build(build: Callable, entries: list[Entry], options: CompareOptions):
    import inspect

    try:
        takes_options = len(inspect.signature(build).parameters) > 1
    except (TypeError, ValueError):
        takes_options = False
    return build(entries, options) if takes_options else build(entries)


# --------------------------------------------------------------------------- main


def compare_runs(args: list[str | Path], out: str | Path | None = None, labels: list[str] | None = None, *,
                 intersection: bool = False, min_models: int = 1) -> dict[str, Any]:
    """Write ``out/report.html`` and ``out/metrics.json`` comparing the given models.

    Args:
        args: one per model: a run folder, a debiased model folder, or run folders joined by commas;
            the first is the original model by convention.
        out: output folder (default :func:`default_compare_out`).
        intersection: compare runs that measured different prompts on the prompts they share
            (said in the report) instead of refusing.
        labels: display names, one per argument (default: method and bias type of a debiased
            model, else the model name).
        min_models: refuse fewer models than this (the CLI asks for two).
    """
    if len(args) < 1:
        raise ConfigError("compare: give at least one run or model folder")
    if labels and len(labels) != len(args):
        raise ConfigError(f"compare: {len(labels)} labels for {len(args)} runs; give one per run or none")
    entries = [load_entry(a, (labels or [None] * len(args))[i]) for i, a in enumerate(args)]
    if len(entries) < min_models:
        raise ConfigError(f"compare needs at least {min_models} runs (one per model, original first), got "
                          f"{len(entries)}: {', '.join(map(str, args))}")
    seen: dict[str, int] = {}
    for e in entries:  # labels are table columns: keep them unique
        if e.label in seen:
            seen[e.label] += 1
            e.label = f"{e.label} #{seen[e.label]}"
        else:
            seen[e.label] = 1
    sections: list[Section] = []
    metrics: dict[str, Any] = {"suite": "compare", "entries": [
        {"label": e.label, "runs": {k: str(v) for k, v in e.runs.items()},
         "debias": {k: e.debias.get(k) for k in ("method", "bias_type", "lm_weight", "debias_weight", "base_model")}
         if e.debias else None} for e in entries]}
    options = CompareOptions(intersection=intersection)
    builders = section_builders(entries)
    for suite, build in builders.items():
        secs, m = _build(build, entries, options)
        sections += secs
        if m:
            metrics[suite] = m
    others = sorted({s for e in entries for s in e.runs if s not in builders and not s.startswith("downstream")})
    for suite in others:  # every other suite: by its uniform headline
        secs, m = headline_section(entries, suite)
        sections += secs
        if m:
            metrics.setdefault("headlines", {})[suite] = m
    if not sections:
        raise ConfigError("compare: none of the runs has metrics a comparison section knows "
                          f"({', '.join(builders)})")
    metrics["changes"] = headline_changes(entries, metrics)
    diffs = run_differences(entries)
    metrics["differences"] = diffs
    sections.insert(0, report.differences_section(diffs))
    out = Path(out) if out is not None else default_compare_out(args)
    out.mkdir(parents=True, exist_ok=True)
    metrics["out"] = str(out)
    write_json(out / "metrics.json", metrics)
    report.write_compare_report(out, [e.label for e in entries], sections)
    return metrics
