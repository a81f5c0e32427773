"""Compare finished runs of several models (original vs debiased) without any model call.

Each *entry* is one model: a run folder, a debiased model folder (its ``eval/`` and
``downstream-*/`` run folders are used), or several run folders joined with commas. Each
suite contributes its own report section through :data:`SECTIONS` (``suite name ->
function(entries) -> (sections, metrics)``), so another suite (e.g. HolisticBias
generation) adds a comparison by registering one function. Every other suite is compared
by its uniform headline entry (:func:`headline_section`).

Built in:

- ``redditbias``: t-value per bias type and model (paper Figure 1a), LM perplexity on the
  reference text (Figure 1b).
- ``downstream``: dialog state tracking F1 and response-generation scores (Tables 4 and 5).

What the runs did differently (dataset, perplexity definition, decoding, scorer, prompt
selection; read from each run's ``run.json``) is listed first (:func:`run_differences`);
a section may refuse a verdict on runs that measured different things.

This module reads and computes; :mod:`biaslens.report.compare` draws the figures and writes
the page (``metrics.json`` and ``report.html`` are written atomically).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.config import ConfigError
from biaslens.report import compare as report
from biaslens.report.html import Section, interval_text
from biaslens.report.run_folder import write_json


@dataclass
class CompareOptions:
    """Choices the user makes for the whole comparison."""

    intersection: bool = False  # compare runs on the prompts they share instead of refusing


@dataclass
class Entry:
    """One compared model and the metrics of its runs, keyed by suite."""

    label: str
    runs: dict[str, Path] = field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    debias: dict[str, Any] | None = None  # debias.json of a debiased model folder


def _read_metrics(run: Path) -> dict[str, Any]:
    path = run / "metrics.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{run}: no readable metrics.json ({e}); is this a finished run folder?") from None
    if not isinstance(data, dict) or "suite" not in data:
        raise ConfigError(f"{path}: not a biaslens metrics.json (no 'suite' field)")
    return data


def _run_folders(path: Path) -> list[Path]:
    """The run folders an argument names: itself, or a model folder's eval/ and downstream-*/ runs."""
    if (path / "metrics.json").is_file():
        return [path]
    runs = [p for p in sorted(path.iterdir()) if p.is_dir() and (p / "metrics.json").is_file()] if path.is_dir() else []
    if not runs:
        raise ConfigError(
            f"{path}: neither a run folder (metrics.json) nor a model folder with evaluated runs; measure it first, "
            f"e.g. biaslens run redditbias --model {path} --out {path}/eval")
    return runs


def load_entry(arg: str | Path, label: str | None = None) -> Entry:
    """An entry from a run folder, a debiased model folder, or run folders joined with commas."""
    parts = [Path(p) for p in str(arg).split(",") if p.strip()]
    if not parts:
        raise ConfigError("compare: empty run or model argument")
    for p in parts:
        if not p.exists():
            raise ConfigError(f"{p}: no such run or model folder")
    entry = Entry(label=label or "")
    for part in parts:
        if (part / "debias.json").is_file():
            entry.debias = json.loads((part / "debias.json").read_text(encoding="utf-8"))
        for run in _run_folders(part):
            m = _read_metrics(run)
            suite = str(m["suite"]).split("-")[0] if str(m["suite"]).startswith("downstream") else str(m["suite"])
            if suite == "downstream":
                entry.metrics.setdefault("downstream", {})[m.get("task", run.name)] = m
                entry.runs[f"downstream/{m.get('task', run.name)}"] = run
            else:
                entry.metrics[suite] = m
                entry.runs[suite] = run
    if not entry.label:
        entry.label = _default_label(parts[0], entry)
    return entry


def _default_label(path: Path, entry: Entry) -> str:
    if entry.debias:
        return f"{entry.debias.get('method', '?').upper()} ({entry.debias.get('bias_type', '?')})"
    model = next((m.get("model") for m in entry.metrics.values() if isinstance(m, dict) and m.get("model")), None)
    return str(model or path.name)


# --------------------------------------------------------------------------- sections


def redditbias_section(entries: list[Entry]) -> tuple[list[Section], dict[str, Any]]:
    """t-values per bias type (Figure 1a) and LM perplexity (Figure 1b) for every entry."""
    have = [e for e in entries if "redditbias" in e.metrics]
    if not have:
        return [], {}
    # start-token and no-start-token perplexities differ for every phrase: t-values and LM
    # perplexities from the two definitions are not comparable
    definitions = {e.label: e.metrics["redditbias"]["perplexity_definition"] for e in have
                   if e.metrics["redditbias"].get("perplexity_definition")}  # older runs did not record it
    if len(set(definitions.values())) > 1:
        raise ConfigError("RedditBias runs use different perplexity definitions ("
                           + ", ".join(f"{k}: {v}" for k, v in definitions.items())
                           + "); re-run them all with or all without --no-start-token")
    rows, ppl_rows = [], []
    for e in have:
        m = e.metrics["redditbias"]
        for bt in m.get("bias_types", []):
            r = m.get(bt) or {}
            rows.append({"model": e.label, "bias_type": bt, "t": r.get("t"), "p": r.get("p"), "stars": r.get("stars", ""),
                         "n_pairs": r.get("n_pairs"), "source": r.get("source"), "split": m.get("split")})
        lp = m.get("lm_perplexity") or {}
        ppl_rows.append({"model": e.label, "perplexity": lp.get("perplexity"), "file": lp.get("file"),
                         "n_lines": lp.get("n_lines")})
    t = pd.DataFrame(rows)
    ppl = pd.DataFrame(ppl_rows)
    wide = t.pivot_table(index="bias_type", columns="model", values="t", sort=False) if len(t) else pd.DataFrame()
    metrics = {"t": {bt: {mod: _num(v) for mod, v in row.items()} for bt, row in wide.iterrows()},
               "p": {r["bias_type"]: {} for r in rows},
               "lm_perplexity": {r["model"]: _num(r["perplexity"]) for r in ppl_rows}}
    for r in rows:
        metrics["p"][r["bias_type"]][r["model"]] = _num(r["p"])
    change_rows, metrics["change"] = redditbias_changes(have)
    return [report.redditbias_section(t, ppl, wide, pd.DataFrame(change_rows))], metrics


def redditbias_changes(entries: list[Entry]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each model against the first on the phrase pairs both scored, per bias type and view:
    the paired before/after test of the change in the perplexity gap (:func:`lmb_change`).
    A run folder without ``pairs.parquet`` gets "cannot tell" with the reason."""
    from biaslens.metrics.lmb import lmb_change

    def pairs(e: Entry) -> pd.DataFrame | None:
        path = e.runs.get("redditbias")
        path = path / "pairs.parquet" if path is not None else None
        return pd.read_parquet(path) if path is not None and path.is_file() else None

    if len(entries) < 2:
        return [], {}
    base = pairs(entries[0])
    rows, out = [], {}
    for e in entries[1:]:
        other = pairs(e)
        for bt in entries[0].metrics["redditbias"].get("bias_types", []):
            for view in ("target", "attribute"):
                if base is None or other is None:
                    ch = {"verdict": "cannot tell", "reason": "pairs.parquet missing in a run folder"}
                else:
                    sel = [df[(df["bias_type"] == bt) & (df["view"] == view)] for df in (base, other)]
                    if sel[0].empty and sel[1].empty:
                        continue
                    ch = lmb_change(*sel)
                out.setdefault(bt, {}).setdefault(e.label, {})[view] = ch
                rows.append({"model": e.label, "against": entries[0].label, "bias_type": bt, "view": view,
                             "pairs": ch.get("n_pairs"), "mean gap before": ch.get("mean_gap_before"),
                             "mean gap after": ch.get("mean_gap_after"), "mean change": ch.get("mean_change"),
                             "95% CI": interval_text(*(ch.get("mean_change_ci") or [None, None])),
                             "t": ch.get("t"), "p": ch.get("p"), "median change": ch.get("median_change"),
                             "median 95% CI": interval_text(*(ch.get("median_change_ci") or [None, None])),
                             "sign test p": ch.get("sign_test_p"),
                             "log-ratio change": ch.get("log_ratio_change"),
                             "log-ratio 95% CI": interval_text(*(ch.get("log_ratio_change_ci") or [None, None])),
                             "log-ratio p": ch.get("log_ratio_p"),
                             "verdict": (f"{ch['verdict']}: {ch['reason']}" if "reason" in ch
                                         else f"{ch['verdict']} (by the {ch['verdict_basis']})")})
    return rows, out


def downstream_section(entries: list[Entry]) -> tuple[list[Section], dict[str, Any]]:
    """Dialog state tracking (Table 4) and response generation (Table 5) scores."""
    rows = []
    for e in entries:
        for task, m in (e.metrics.get("downstream") or {}).items():
            scores = m.get("scores") or {}
            rows.append({"model": e.label, "task": task, **{k: _num(v) for k, v in scores.items()}})
    if not rows:
        return [], {}
    df = pd.DataFrame(rows)
    sections = [report.downstream_section(df)]
    metrics = {task: {r["model"]: {k: v for k, v in r.items() if k not in ("model", "task") and v == v}
                      for r in g.to_dict("records")} for task, g in df.groupby("task", sort=False)}
    return sections, metrics


#: suite -> comparison section builder ``(entries) -> (sections, metrics)``; a builder that
#: takes a second parameter also gets the :class:`CompareOptions`
SECTIONS: dict[str, Callable[..., tuple[list[Section], dict[str, Any]]]] = {
    "redditbias": redditbias_section,
    "downstream": downstream_section,
    "holistic-generation": lambda entries, options: _holistic_generation_section(entries, options),
}


def interval_change_verdict(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Direction of a headline entry (``value``, ``ci_low``, ``ci_high``) with its uncertainty.

    Only intervals that do not overlap count as a change: for two independent 95% intervals
    this is conservative (a test at about the 0.5% level), so "no detectable change" is not
    "no change". Without an interval on both sides there is no verdict at all.
    """
    b, a = _num(before.get("value")), _num(after.get("value"))
    if b is None or a is None:
        return {"verdict": "no verdict", "reason": "a headline value is missing"}
    bounds = [_num(before.get("ci_low")), _num(before.get("ci_high")), _num(after.get("ci_low")), _num(after.get("ci_high"))]
    if None in bounds:
        return {"verdict": "no verdict", "change": a - b,
                "reason": "no interval on one side: a difference without uncertainty is not a verdict"}
    lo_b, hi_b, lo_a, hi_a = bounds
    word = "went down" if hi_a < lo_b else "went up" if lo_a > hi_b else "no detectable change"
    return {"verdict": word, "change": a - b,
            "reason": f"95% intervals {lo_b:.3g} to {hi_b:.3g} before, {lo_a:.3g} to {hi_a:.3g} after"
                      + ("" if word == "no detectable change" else " do not overlap")}


def headline_section(entries: list[Entry], suite: str) -> tuple[list[Section], dict[str, Any]]:
    """The comparison of a suite without its own section: its uniform headline entry
    (``metrics.json`` ``entries[0]``) per model, each against the first model with
    :func:`interval_change_verdict`; refused where the runs measured different things."""
    have = [e for e in entries if suite in e.runs]
    if not have:
        return [], {}
    heads = {e.label: ((e.metrics.get(suite) or {}).get("entries") or [{}])[0] for e in have}
    first = have[0]
    diffs = run_differences(have, suite)
    names = {h.get("name") for h in heads.values()}
    rows, out = [], {"headline": heads[first.label].get("name"), "models": {}}
    for e in have:
        h = heads[e.label]
        row = {"model": e.label, "metric": h.get("name"), "value": _num(h.get("value")),
               "95% CI": interval_text(h.get("ci_low"), h.get("ci_high")),
               "n used": h.get("n_used")}
        if e is first:
            verdict = {"verdict": "reference", "reason": "the first model"}
        elif len(names) > 1:
            verdict = {"verdict": "not comparable", "reason": "different headline metrics"}
        elif diffs:
            verdict = {"verdict": "not comparable",
                       "reason": "the runs differ in " + ", ".join(d["what"] for d in diffs)}
        else:
            verdict = interval_change_verdict(heads[first.label], h)
        row.update(**{"vs first": verdict["verdict"], "why": verdict.get("reason", "")})
        rows.append(row)
        out["models"][e.label] = {"value": row["value"], "ci_low": _num(h.get("ci_low")),
                                  "ci_high": _num(h.get("ci_high")), **verdict}
    return [report.headline_section(suite, rows, heads[first.label].get("higher_is_better"))], out


def _build(build: Callable, entries: list[Entry], options: CompareOptions):
    import inspect

    try:
        takes_options = len(inspect.signature(build).parameters) > 1
    except (TypeError, ValueError):
        takes_options = False
    return build(entries, options) if takes_options else build(entries)


def _holistic_generation_section(entries: list[Entry], options: CompareOptions) -> tuple[list[Section], dict[str, Any]]:
    from biaslens.suites.holistic_generation import compare_data  # lazy: the suite is heavy

    data = compare_data(entries, options)
    return ([report.holistic_generation_section(data)], data["metrics"]) if data else ([], {})


# --------------------------------------------------------------------------- what differs


def run_record(run: Path) -> dict[str, Any]:
    """A run folder's run.json ({} when absent or unreadable: nothing to check)."""
    try:
        data = json.loads((run / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_identity(record: dict[str, Any], suite: str | None = None) -> dict[str, Any]:
    """What a run measured, beyond which model: the things two runs must share for their
    numbers to be compared, as far as ``suite``'s numbers depend on them. None where the run
    has no such thing."""
    cfg = record.get("config") or {}
    model = record.get("model") or {}
    gen = record.get("generation") or {}
    cls = record.get("classifiers") or {}
    if suite == "holistic-generation":
        # no perplexity in its numbers; the start token only opens a prompt of a model without
        # a chat template (and is None when the run did not score the first token)
        identity = run_identity(record)
        identity.pop("perplexity definition (start token)")
        return {"prompt start token (models without a chat template)": {"start_token": model.get("start_token")}
                if model else None, **identity}
    return {
        "dataset version": {"dataset_dir": cfg.get("dataset_dir") or "built-in v1.0",
                            "extra_dataset_files": cfg.get("extra_dataset_files") or []} if cfg else None,
        "perplexity definition (start token)": {"start_token": model.get("start_token"),
                                                "score_first_token": (cfg.get("model") or {}).get("score_first_token")}
        if model else None,
        "decoding": {"params": gen.get("params"), "persona": gen.get("persona") or []} if gen.get("params") else None,
        "prompt variants": gen.get("variants"),
        "scorer": {"style": cls.get("style"), "clusters": cls.get("clusters"),
                   "offensiveness": cls.get("offensiveness")} if cls else None,
        "prompt selection": {k: cfg.get(k) for k in ("sample", "full", "axes", "templates", "seed")} if cfg else None,
    }


def run_differences(entries: list[Entry], suite: str | None = None) -> list[dict[str, Any]]:
    """Every identity field (:func:`run_identity`) whose value differs between the entries'
    runs of a suite (all suites when None): one row per (suite, field), one column per entry."""
    rows = []
    suites = [suite] if suite else sorted({k for e in entries for k in e.runs if not k.startswith("downstream")})
    for name in suites:
        have = [e for e in entries if name in e.runs]
        if len(have) < 2:
            continue
        ids = [run_identity(run_record(e.runs[name]), name) for e in have]
        for field_name in ids[0]:
            values = [json.dumps(i.get(field_name), sort_keys=True, default=str) for i in ids]
            if len(set(values)) > 1:
                rows.append({"suite": name, "what": field_name, **{e.label: v for e, v in zip(have, values)}})
    return rows


def default_compare_out(args: list[str | Path]) -> Path:
    """``<folder of the first run>/compare-<first>-vs-<second>...`` (``runs/before runs/after``
    -> ``runs/compare-before-vs-after``)."""
    firsts = [Path(str(a).split(",")[0].strip() or ".") for a in args]
    names = "-vs-".join(p.resolve().name or "run" for p in firsts)
    return firsts[0].resolve().parent / f"compare-{names}"


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


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
    sections, metrics = [], {"suite": "compare", "entries": [
        {"label": e.label, "runs": {k: str(v) for k, v in e.runs.items()},
         "debias": {k: e.debias.get(k) for k in ("method", "bias_type", "lm_weight", "debias_weight", "base_model")}
         if e.debias else None} for e in entries]}
    options = CompareOptions(intersection=intersection)
    for suite, build in SECTIONS.items():
        secs, m = _build(build, entries, options)
        sections += secs
        if m:
            metrics[suite] = m
    others = sorted({s for e in entries for s in e.runs if s not in SECTIONS and not s.startswith("downstream")})
    for suite in others:  # every other suite: by its uniform headline
        secs, m = headline_section(entries, suite)
        sections += secs
        if m:
            metrics.setdefault("headlines", {})[suite] = m
    if not sections:
        raise ConfigError("compare: none of the runs has metrics a comparison section knows "
                          f"({', '.join(SECTIONS)})")
    diffs = run_differences(entries)
    metrics["differences"] = diffs
    sections.insert(0, report.differences_section(diffs))
    out = Path(out) if out is not None else default_compare_out(args)
    out.mkdir(parents=True, exist_ok=True)
    metrics["out"] = str(out)
    write_json(out / "metrics.json", metrics)
    report.write_compare_report(out, [e.label for e in entries], sections)
    return metrics
