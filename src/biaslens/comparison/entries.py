"""What ``biaslens compare`` reads: one :class:`Entry` per compared model (its run folders and
their metrics.json), what the runs did differently (:func:`run_differences`, from each run's
run.json), and the comparison every suite gets without one of its own: the uniform headline
entry with :func:`interval_change_verdict`.

A suite's own comparison (``Suite.compare``) builds on these; :mod:`biaslens.comparison.runs`
puts the page together.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biaslens.errors import ConfigError


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
        if (p / "card.json").is_file():
            # a card holds one run per method at its budget's sizes: reading them as runs would
            # compare a smoke-size run with a full one as if they measured the same thing
            methods = sorted(q.name for q in p.iterdir() if (q / "metrics.json").is_file())
            raise ConfigError(
                f"compare: {p} is a bias card (card.json), not a run: compare two cards with `biaslens compare "
                f"CARD_BEFORE CARD_AFTER`, or one of its methods with a run of the same method at the same size, "
                f"e.g. {p / (methods[0] if methods else 'redditbias')}")
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


def interval_change_verdict(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Direction of a headline entry (``value``, ``ci_low``, ``ci_high``) with its uncertainty.

    Only intervals that do not overlap count as a change: for two independent 95% intervals
    this is conservative (a test at about the 0.5% level), so "no detectable change" is not
    "no change". Without an interval on both sides there is no verdict at all.
    """
    from biaslens.rounding import interval, level_text

    b, a = finite_or_none(before.get("value")), finite_or_none(after.get("value"))
    if b is None or a is None:
        return {"verdict": "no verdict", "reason": "a headline value is missing"}
    bounds = [finite_or_none(before.get("ci_low")), finite_or_none(before.get("ci_high")), finite_or_none(after.get("ci_low")), finite_or_none(after.get("ci_high"))]
    if None in bounds:
        return {"verdict": "no verdict", "change": a - b,
                "reason": "no interval on one side: a difference without uncertainty is not a verdict"}
    lo_b, hi_b, lo_a, hi_a = bounds
    word = "went down" if hi_a < lo_b else "went up" if lo_a > hi_b else "no detectable change"
    return {"verdict": word, "change": a - b,
            "reason": f"{level_text(before.get('level'))} interval {interval(lo_b, hi_b)} before, "
                      f"{level_text(after.get('level'))} interval {interval(lo_a, hi_a)} after"
                      + ("" if word == "no detectable change" else " do not overlap")}


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
    if suite == "redditbias":
        # its phrases, not HolisticBias' sentences: which pairs, and how many (a t-value grows with
        # the number of pairs, so two sizes are two different measurements)
        identity = run_identity(record)
        identity.pop("prompt selection")
        rb = cfg.get("redditbias") or {}
        data = rb.get("data_dir")
        return {**identity, "phrase selection": {
            "data": Path(str(data)).name if data else "templates from the bias specifications",
            "split": rb.get("split") if data else None, "bias_types": rb.get("bias_types"),
            "spec_files": [Path(str(f)).name for f in rb.get("spec_files") or []],
            "counterfactual_mode": rb.get("counterfactual_mode"), "outlier_removal": rb.get("outlier_removal"),
            "max_template_pairs": None if data else rb.get("max_template_pairs"),
            "seed": None if data else cfg.get("seed")} if rb else None}
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
        # what a suite says its numbers depend on (its items, their selection, how answers were made)
        "items measured": record.get("measured"),
    }


#: the :func:`run_differences` row of two runs that scored different items
ITEMS_DIFFER = "items scored"


@functools.lru_cache(maxsize=64)
def _item_keys(path: str, mtime_ns: int) -> frozenset[str] | None:
    import pyarrow.parquet as pq

    try:
        if "item" not in pq.read_schema(path).names:
            return None
        return frozenset(map(str, pq.read_table(path, columns=["item"]).column("item").to_pylist()))
    except (OSError, ValueError):
        return None


def item_keys(run: Path, suite: str) -> frozenset[str] | None:
    """The keys of the items a run scored: the ``item`` column of its suite's main table
    (``Suite.main_table``), None where the suite keeps no per-item key (or the table is missing)."""
    from biaslens.suites import SUITES, suite_class

    table = suite_class(suite).main_table if suite in SUITES else None
    path = Path(run) / f"{table}.parquet"
    if table is None or not path.is_file():
        return None
    return _item_keys(str(path), path.stat().st_mtime_ns)


def _item_difference(have: list[Entry], suite: str) -> dict[str, Any] | None:
    """The row of :func:`run_differences` for runs whose item sets differ (a 400-pair sample
    against all 1,508 CrowS-Pairs pairs; one WinoBias type against both): their numbers are
    different measurements, and a paired change over the items they share would hide that."""
    keys = [item_keys(e.runs[suite], suite) for e in have]
    if any(k is None for k in keys) or len(set(keys)) == 1:
        return None
    shared = frozenset.intersection(*keys)  # type: ignore[arg-type]
    counts = " against ".join(f"{len(k):,}" for k in keys)  # type: ignore[arg-type]
    return {"suite": suite, "what": ITEMS_DIFFER, "detail": f"{counts}, {len(shared):,} in both",
            **{e.label: f"{len(k):,} items" for e, k in zip(have, keys)}}  # type: ignore[arg-type]


def run_differences(entries: list[Entry], suite: str | None = None) -> list[dict[str, Any]]:
    """Every identity field (:func:`run_identity`) whose value differs between the entries'
    runs of a suite (all suites when None), and the items they scored where the suite keeps a key
    per item (:func:`item_keys`): one row per (suite, field), one column per entry."""
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
        if (items := _item_difference(have, name)) is not None:
            rows.append(items)
    return rows


def differences_reason(diffs: list[dict[str, Any]]) -> str:
    """Why runs with these :func:`run_differences` rows are not comparable, in words."""
    return "the runs differ in " + "; ".join(d["what"] + (f": {d['detail']}" if d.get("detail") else "")
                                              for d in diffs)


def default_compare_out(args: list[str | Path]) -> Path:
    """``<folder of the first run>/compare-<first>-vs-<second>...`` (``runs/before runs/after``
    -> ``runs/compare-before-vs-after``)."""
    firsts = [Path(str(a).split(",")[0].strip() or ".") for a in args]
    names = "-vs-".join(p.resolve().name or "run" for p in firsts)
    return firsts[0].resolve().parent / f"compare-{names}"


def finite_or_none(v: Any) -> float | None:
    """``v`` as a finite float, else None."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None
