"""A leaderboard of bias cards: many models on one page, a column per method.

``leaderboard([card, card, ...], out=DIR)`` reads finished bias card folders (``biaslens
card``; no model calls) and writes ``leaderboard.html``, ``leaderboard.{csv,parquet,json}`` (a
row per model, per method the headline, its interval, its verdict, the noise floor where the
method has one, the warnings of its scorer cards) and ``pairs.csv`` (every pairwise test).

Per method:

- Comparable models: those whose runs measured the same thing as the method's main group (the
  largest group; ties go to the first card's): same headline metric, same budget settings, and
  the same ``biaslens compare`` identity (dataset, prompt selection and seed, decoding, scorer,
  perplexity definition; :func:`biaslens.comparison.entries.run_identity`). The others get "not
  comparable" and what differs.
- Order: best first where the metric has a direction, else closest to its ideal value.
- Which differences are distinguishable: Bonferroni-simultaneous 95% intervals of every
  pairwise difference among the comparable models
  (:func:`biaslens.metrics.ranking.simultaneous_differences`), each referred to Student's t with
  the degrees of freedom of the units its interval rests on (:func:`headline_df`): the chance of
  calling any pair different when none differs is at most about 5% per method. The quantity
  compared is the one ranked: the headline, or, where neither direction is better, its distance
  from the ideal value. Each model's standard error is read off its interval at the interval's
  own level and reference (``MetricEntry.level`` and ``df``, :func:`headline_level`); where both
  cards hold the headline's per-item contributions (``<suite>/headline_items.parquet``) on the
  same items, the pair is compared paired on them (:func:`paired_se`).

Only files inside each card folder are read, by paths relative to it: a card made on another
machine works as it is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.config import ConfigError

LEADERBOARD_FORMAT_VERSION = 1
ALPHA = 0.05
MAX_CARDS = 200  # a sanity bound; the page is checked up to 50


# --------------------------------------------------------------------------- reading


def _read_json(path: Path) -> Any:
    """A JSON file inside a card: None when absent, a one-line error naming it when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from None


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def headline_df(row: dict[str, Any], metrics: dict[str, Any] | None) -> float | None:
    """Degrees of freedom of the headline's standard error: the independent units its interval
    resamples or clusters over, less what it is stratified by. Not n_used where the units are
    fewer (responses nested in descriptors, replies in keywords): read from what each method
    records, else n_used - 1 (None when unknown: no difference is then called)."""
    import re

    metrics = metrics or {}
    by_axis = metrics.get("by_axis")
    if row.get("suite") == "holistic-likelihood" and isinstance(by_axis, dict) and by_axis:
        # BCa over descriptors resampled within each axis
        n = sum(int(a.get("n_descriptors") or 0) for a in by_axis.values() if isinstance(a, dict))
        return float(max(n - len(by_axis), 1)) if n else None
    units = re.search(r"over (\d+) units", str(row.get("interval") or ""))
    if units:  # a delete-one jackknife over these units
        return float(int(units.group(1)) - 1)
    head = (row.get("entries") or [{}])[0] or {}
    keywords = re.search(r"(\d+) / (\d+) keywords", str(head.get("description") or ""))
    if keywords:  # keyword-clustered (CR2) intervals: Welch's conservative df over the clusters
        return float(min(int(keywords.group(1)), int(keywords.group(2))) - 1)
    n = _num(row.get("n_used"))
    return n - 1 if n is not None and n >= 2 else None


def headline_level(row: dict[str, Any]) -> tuple[float, float | None, bool]:
    """``(level, interval_df, recorded)`` of a card row's headline interval: the entry's own
    ``level`` and ``df`` where it records them; for older entries the level from the interval's
    text ("each at 0.9969", "at level 1 - alpha/5"), else 0.95, read with the normal quantile
    (conservative where the interval was a t one with few degrees of freedom)."""
    import re

    head = (row.get("entries") or [{}])[0] or {}
    level = _num(head.get("level"))
    if level is not None and 0 < level < 1:
        return level, _num(head.get("df")), True
    text = str(row.get("interval") or head.get("interval") or "")
    each = re.search(r"each at (0\.\d+)", text)
    if each:
        return float(each.group(1)), None, False
    per = re.search(r"level 1 - alpha/(\d+)", text)
    if per:
        return 1 - ALPHA / int(per.group(1)), None, False
    return 0.95, None, False


def read_items(path: Path) -> pd.Series | None:
    """A run's ``headline_items.parquet`` (``item``, ``influence``: each item's linear
    contribution to the headline) as a Series by item, sorted; None when absent or unusable."""
    f = path / "headline_items.parquet"
    if not f.is_file():
        return None
    try:
        t = pd.read_parquet(f, columns=["item", "influence"])
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"{f}: cannot read the per-item table ({e})") from None
    if t["item"].duplicated().any():
        return None  # items that do not identify themselves cannot be paired
    return t.set_index("item")["influence"].astype(np.float64).sort_index()


def paired_se(a: pd.Series, b: pd.Series, sign_a: float = 1.0, sign_b: float = 1.0) -> tuple[float, float]:
    """Standard error and degrees of freedom of the difference of two headlines measured on the
    same items, from each item's contribution to each headline (``headline - E ~ sum of
    contributions``): ``sqrt(n / (n - 1) * sum((sign_a * a_i - sign_b * b_i)^2))`` over the n items
    that contribute to either, df n - 1. NaN when the item sets differ (compare independently).

    >>> import pandas as pd
    >>> a = pd.Series([0.1, -0.1, 0.0], index=["x", "y", "z"])
    >>> b = pd.Series([0.05, -0.05, 0.0], index=["x", "y", "z"])
    >>> [round(v, 4) for v in paired_se(a, b)]
    [0.1, 1.0]
    """
    if len(a) != len(b) or not a.index.equals(b.index):
        return float("nan"), float("nan")
    d = sign_a * a.to_numpy(np.float64) - sign_b * b.to_numpy(np.float64)
    on = (a.to_numpy() != 0) | (b.to_numpy() != 0)
    n = int(on.sum())
    if n < 2:
        return float("nan"), float("nan")
    return float(np.sqrt(n / (n - 1) * np.sum(d[on] ** 2))), float(n - 1)


def headline_key(row: dict[str, Any], model_labels: set[str]) -> str | None:
    """The headline metric's name without a trailing model label (the community suite names its
    entries ``largest_sentiment_gap.<model>``): two models' headlines must name the same metric."""
    name = row.get("headline")
    if not isinstance(name, str):
        return None
    stem, _, last = name.rpartition(".")
    return stem if stem and last in model_labels else name


def _identity(record: dict[str, Any] | None, suite: str) -> dict[str, Any] | None:
    """``biaslens compare``'s identity of a run, with the start token reduced to whether there
    is one: its text is the tokenizer's (``<s>``, ``<|endoftext|>``), not a choice of what to
    measure, and models of different families must stay comparable."""
    if record is None:
        return None
    from biaslens.comparison.entries import run_identity

    ident = run_identity(record, suite)
    for key, val in ident.items():
        if isinstance(val, dict) and "start_token" in val:
            ident[key] = val | {"start_token": val["start_token"] is not None}
    return ident


def read_entry(path: str | Path) -> dict[str, Any]:
    """One card folder: its card.json, and per completed method its run.json identity and its
    noise floor (read from ``<card>/<suite>/``)."""
    from biaslens.bias_card import CARD_FORMAT_VERSION, read_card

    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a bias card folder ({'no such folder' if not path.exists() else 'a file'}); "
                          "make one with: biaslens card --model M --out FOLDER")
    card = read_card(path)
    version = card.get("format_version")
    if isinstance(version, int) and version > CARD_FORMAT_VERSION:
        raise ConfigError(f"{path / 'card.json'}: card format {version} is newer than this biaslens reads "
                          f"({CARD_FORMAT_VERSION}); upgrade biaslens")
    methods = {}
    for row in card["methods"]:
        if not isinstance(row, dict) or not isinstance(row.get("suite"), str):
            raise ConfigError(f"{path / 'card.json'}: a 'methods' row without a 'suite' name")
        info = {"row": row, "identity": None, "noise_floor": None, "weights_hash": None, "df": None, "items": None}
        if row.get("status") == "complete":
            run = path / row["suite"]
            record = _read_json(run / "run.json")
            if record is not None and not isinstance(record, dict):
                raise ConfigError(f"{run / 'run.json'}: expected a JSON object")
            info["identity"] = _identity(record, row["suite"])
            info["weights_hash"] = ((record or {}).get("model") or {}).get("weights_hash")
            metrics = _read_json(run / "metrics.json")
            if metrics is not None and not isinstance(metrics, dict):
                raise ConfigError(f"{run / 'metrics.json'}: expected a JSON object")
            # the entry's own degrees of freedom where it records them, else the per-suite rule
            level, interval_df, recorded = headline_level(row)
            info["df"] = interval_df if recorded and interval_df is not None else headline_df(row, metrics)
            info["level"], info["interval_df"] = level, interval_df
            info["items"] = read_items(run)
            # the names the suite gave the model (community entries end in one)
            info["model_labels"] = [str(x) for x in (metrics or {}).get("models") or [] if isinstance(x, str)]
            floor = (metrics or {}).get("noise_floor")
            if isinstance(floor, dict):
                # the permuted-label mean: what the headline would be with no bias at this size
                val = next((_num(v) for k, v in floor.items() if k.endswith("permuted_mean")), None)
                info["noise_floor"] = {"value": val, "p": _num(floor.get("p_value"))} if val is not None else None
        methods[row["suite"]] = info
    return {"path": path, "card": card, "methods": methods,
            "model": str(card.get("model") or path.resolve().name), "budget": card.get("budget")}


def _labels(entries: list[dict[str, Any]], labels: list[str] | None) -> list[str]:
    if labels:
        if len(labels) != len(entries):
            raise ConfigError(f"leaderboard: {len(labels)} labels for {len(entries)} cards; give one per card or none")
        out = list(labels)
    else:
        names = [e["model"] for e in entries]
        # the same model name twice (two checkpoints both called "fake", two budgets): add the folder
        out = [f"{n} ({e['path'].resolve().name})" if names.count(n) > 1 else n for n, e in zip(names, entries)]
    seen: dict[str, int] = {}
    for k, lab in enumerate(out):
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            out[k] = f"{lab} #{seen[lab]}"
    return out


# --------------------------------------------------------------------------- per method


def _signature(entry: dict[str, Any], suite: str, key: str | None) -> dict[str, Any]:
    info = entry["methods"][suite]
    budget = (entry["card"].get("budget_settings") or {}).get(suite)
    return {"headline metric": key, "budget": {"name": entry["budget"], "settings": budget},
            **(info["identity"] if info["identity"] is not None else {"run.json": "missing"})}


def _differs(sig: dict[str, Any], ref: dict[str, Any], budgets: tuple[Any, Any]) -> str:
    if "run.json" in sig or "run.json" in ref:
        return "not comparable: a run.json is missing, so what the run measured is unknown"
    what = []
    for k in dict.fromkeys([*ref, *sig]):
        if json.dumps(sig.get(k), sort_keys=True, default=str) != json.dumps(ref.get(k), sort_keys=True, default=str):
            if k == "budget":
                what.append(f"budget ({budgets[0]} vs {budgets[1]} of the ranked models)" if budgets[0] != budgets[1]
                            else "budget settings")
            elif k == "headline metric":
                what.append(f"headline metric ({sig.get(k)} vs {ref.get(k)} of the ranked models)")
            else:
                what.append(k)
    return "not comparable: differs in " + ", ".join(what)


def _order_key(row: dict[str, Any]) -> float:
    v, hib, ideal = row["value"], row.get("higher_is_better"), row.get("ideal")
    if hib is True:
        return -v
    if hib is False:
        return v
    return abs(v - ideal) if ideal is not None else -v


def order_rule(head: dict[str, Any]) -> str:
    hib, ideal = head.get("higher_is_better"), _num(head.get("ideal"))
    if hib is True:
        return "highest first (higher is better)"
    if hib is False:
        return "lowest first (lower is better)"
    return f"closest to the ideal {ideal:g} first" if ideal is not None else "highest first (no stated direction)"


def method_board(suite: str, entries: list[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    """One method across the models: each model's cell, the order and the pairwise tests."""
    all_labels = ({e["model"] for e in entries} | {Path(e["model"]).name for e in entries}
                  | {lab for e in entries for i in e["methods"].values() for lab in i.get("model_labels") or []})
    cells, sigs = [], {}
    for e, lab in zip(entries, labels):
        info = e["methods"].get(suite)
        row = (info or {}).get("row") or {}
        cell = {"model": lab, "status": row.get("status") or "not run", "verdict": row.get("verdict"),
                "headline": row.get("headline"), "value": _num(row.get("value")), "ci_low": _num(row.get("ci_low")),
                "ci_high": _num(row.get("ci_high")), "higher_is_better": row.get("higher_is_better"),
                "ideal": _num(row.get("ideal")), "n_used": row.get("n_used"),
                "noise_floor": ((info or {}).get("noise_floor") or {}).get("value"), "df": (info or {}).get("df"),
                "level": (info or {}).get("level") or 0.95, "interval_df": (info or {}).get("interval_df"),
                "items": (info or {}).get("items"),
                "noise_floor_p": ((info or {}).get("noise_floor") or {}).get("p"),
                "warnings": list(row.get("warnings") or []),
                "scorer_warnings": [w for c in row.get("scorer_cards") or [] if isinstance(c, dict)
                                    for w in (c.get("skill_warning"), c.get("warning")) if w],
                "comparable": None, "rank": None, "distinguishable_from": []}
        if cell["status"] == "complete" and cell["value"] is not None:
            sigs[lab] = (_signature(e, suite, headline_key(row, all_labels)), e["budget"])
        elif cell["status"] == "complete":
            cell["comparable"] = "no headline value"
        else:
            cell["comparable"] = {"not run": "the card did not run this method"}.get(cell["status"], cell["status"])
        cells.append(cell)
    # the main group: the largest set of models whose runs measured the same thing
    groups: dict[str, list[str]] = {}
    for lab, (sig, _) in sigs.items():
        groups.setdefault(json.dumps(sig, sort_keys=True, default=str), []).append(lab)
    main = max(groups.values(), key=len, default=[])  # max keeps the first of equal size: the first card's
    ref = sigs[main[0]] if main else None
    for cell in cells:
        lab = cell["model"]
        if lab in main:
            cell["comparable"] = "yes"
        elif lab in sigs:
            cell["comparable"] = _differs(sigs[lab][0], ref[0], (sigs[lab][1], ref[1]))
    board = [c for c in cells if c["comparable"] == "yes"]
    board.sort(key=_order_key)
    keys = [_order_key(c) for c in board]
    for c, key in zip(board, keys):
        c["rank"] = 1 + sum(k < key for k in keys)  # ties share a rank (1, 1, 3)
    pairs = pd.DataFrame()
    if len(board) >= 2:
        pairs = _pairs(board)
        names = [c["model"] for c in board]
        pairs.insert(0, "model_a", [names[i] for i in pairs["i"]])
        pairs.insert(1, "model_b", [names[j] for j in pairs["j"]])
        pairs = pairs.drop(columns=["i", "j"])
        pairs.insert(0, "suite", suite)
        for r in pairs[pairs["distinguishable"]].itertuples():
            board[names.index(r.model_a)]["distinguishable_from"].append(r.model_b)
            board[names.index(r.model_b)]["distinguishable_from"].append(r.model_a)
    for c in cells:  # the per-item contributions served the paired tests; the page and the JSON keep none
        c.pop("items", None)
    # no difference can be called with these: no interval, an interval that misses its own value
    # (a percentile bootstrap can), or no sample size
    no_interval = [c["model"] for c in board if c["ci_low"] is None or c["ci_high"] is None or c["df"] is None
                   or not c["ci_low"] <= c["value"] <= c["ci_high"]]
    head = next((c for c in board), next((c for c in cells if c["status"] == "complete"), {}))
    title = next((e["methods"][suite]["row"].get("title") for e in entries if suite in e["methods"]), suite)
    # the metric's name without a model in it (community's largest_sentiment_gap.<model>)
    headline = sigs[main[0]][0]["headline metric"] if main else head.get("headline")
    return {"suite": suite, "title": title, "headline": headline, "order": order_rule(head),
            "cells": cells, "pairs": pairs, "n_compared": len(board), "no_interval": no_interval,
            "m": int(pairs["m"].iloc[0]) if len(pairs) else 0,
            "n_distinguishable": int(pairs["distinguishable"].sum()) if len(pairs) else 0,
            "summary": _summary(suite, board, pairs, no_interval, cells)}


def _compared(c: dict[str, Any]) -> tuple[float, float, float, float]:
    """``(value, ci_low, ci_high, sign)`` of the quantity ranked and compared: the headline, or,
    where neither direction is better, its distance from the ideal value, with an interval of the
    same width (the reverse triangle inequality keeps the test of equal distances at its level)."""
    if c["higher_is_better"] is None and c["ideal"] is not None and c["value"] is not None:
        dist, sign = abs(c["value"] - c["ideal"]), 1.0 if c["value"] >= c["ideal"] else -1.0
        if c["ci_low"] is None or c["ci_high"] is None or not c["ci_low"] <= c["value"] <= c["ci_high"]:
            return dist, np.nan, np.nan, sign
        # the half that faces each way, swapped where the sign flips the axis
        below, above = c["value"] - c["ci_low"], c["ci_high"] - c["value"]
        return (dist, dist - below, dist + above, sign) if sign > 0 else (dist, dist - above, dist + below, sign)
    return tuple(np.nan if x is None else x for x in (c["value"], c["ci_low"], c["ci_high"])) + (1.0,)  # type: ignore[return-value]


def _pairs(board: list[dict[str, Any]]) -> pd.DataFrame:
    """Every pairwise test of the compared quantity, paired on shared items where both cards have them."""
    from biaslens.metrics.ranking import simultaneous_differences

    vals = [_compared(c) for c in board]
    i, j = np.triu_indices(len(board), 1)
    pair_se = np.full(len(i), np.nan)
    pair_df = np.full(len(i), np.nan)
    for k, (a, b) in enumerate(zip(i, j)):
        ia, ib = board[a]["items"], board[b]["items"]
        if ia is not None and ib is not None:
            pair_se[k], pair_df[k] = paired_se(ia, ib, vals[a][3], vals[b][3])
    pairs = simultaneous_differences([v[0] for v in vals], [v[1] for v in vals], [v[2] for v in vals], alpha=ALPHA,
                                     ci_level=[c["level"] for c in board],
                                     df=[np.nan if c["df"] is None else c["df"] for c in board],
                                     interval_df=[np.nan if c["interval_df"] is None else c["interval_df"]
                                                  for c in board],
                                     pair_se=pair_se, pair_df=pair_df)
    pairs["compared"] = ("distance from the ideal" if board[0]["higher_is_better"] is None
                         and board[0]["ideal"] is not None else "headline")
    return pairs


def _summary(suite: str, board: list[dict], pairs: pd.DataFrame, no_interval: list[str], cells: list[dict]) -> str:
    """One sentence per method, with its uncertainty."""
    off = sum(c["comparable"] != "yes" for c in cells)
    tail = f"; {off} model(s) not compared (not comparable, failed or not run)" if off else ""
    if len(board) < 2:
        return f"{suite}: fewer than two comparable models, no ranking{tail}"
    m = int(pairs["m"].iloc[0])
    if m == 0:
        return f"{suite}: cannot tell which models differ: the headlines have no interval (or no sample size){tail}"
    k = int(pairs["distinguishable"].sum())
    gap = f", {len(no_interval)} model(s) without a usable interval or sample size left out (cannot tell)" if no_interval else ""
    if k == 0:
        over = "the one pair" if m == 1 else f"simultaneous over {m} pairs"
        return f"{suite}: no two of {len(board)} models are distinguishable at 95% ({over}){gap}{tail}"
    return (f"{suite}: {k} of {m} pairs distinguishable at 95% (simultaneous, Bonferroni); first in order: "
            f"{board[0]['model']} {_rounded(board[0])}{gap}{tail}")


def _rounded(cell: dict[str, Any]) -> str:
    """A cell's value as the card prints it: to its interval's precision."""
    from biaslens.rounding import value_and_interval

    return value_and_interval(cell["value"], cell["ci_low"], cell["ci_high"])[0]


# --------------------------------------------------------------------------- the table


def _wide(boards: list[dict[str, Any]], labels: list[str], entries: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for lab, e in zip(labels, entries):
        row: dict[str, Any] = {"model": lab, "card": e["path"].resolve().name, "budget": e["budget"],
                               "weights_hash": next((i["weights_hash"] for i in e["methods"].values()
                                                     if i["weights_hash"]), None)}
        for b in boards:
            c = next(c for c in b["cells"] if c["model"] == lab)
            s = b["suite"]
            row.update({f"{s}: headline": c["headline"], f"{s}: value": c["value"], f"{s}: ci_low": c["ci_low"],
                        f"{s}: ci_high": c["ci_high"], f"{s}: rank": c["rank"],
                        f"{s}: comparable": c["comparable"], f"{s}: verdict": c["verdict"],
                        f"{s}: noise_floor": c["noise_floor"],
                        f"{s}: distinguishable_from": "; ".join(c["distinguishable_from"]),
                        f"{s}: warnings": " | ".join(c["warnings"]),
                        f"{s}: scorer_warnings": " | ".join(dict.fromkeys(c["scorer_warnings"]))})
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in df.columns:  # Parquet needs one type per column: ranks as nullable ints, texts as strings
        if col.endswith(": rank"):
            df[col] = df[col].astype("Int64")
        elif not col.endswith((": value", ": ci_low", ": ci_high", ": noise_floor")):
            df[col] = df[col].astype("string")
    return df


def leaderboard(cards: list[str | Path], *, out: str | Path | None = None,
                labels: list[str] | None = None) -> dict[str, Any]:
    """Write a leaderboard of bias card folders (no model calls).

    Args:
        cards: two or more folders written by ``biaslens card`` (any machine).
        out: the output folder [default: ``leaderboard`` next to the first card].
        labels: display names, one per card [default: each card's model, with its folder when
            two cards name the same model].

    Returns:
        ``{"out", "models", "methods": [{suite, summary, n_compared, n_distinguishable, ...}],
        "table": DataFrame, "pairs": DataFrame}``.
    """
    from biaslens.fileio import atomic_path
    from biaslens.report.leaderboard import render_leaderboard
    from biaslens.report.run_folder import write_json, write_text

    cards = [Path(c) for c in cards]
    if len(cards) < 2:
        raise ConfigError(f"leaderboard needs at least two bias card folders, got {len(cards)}"
                          + (f": {cards[0]}" if cards else ""))
    if len(cards) > MAX_CARDS:
        raise ConfigError(f"leaderboard: {len(cards)} cards; at most {MAX_CARDS}")
    seen: dict[Path, Path] = {}
    for c in cards:
        r = c.resolve()
        if r in seen:
            raise ConfigError(f"leaderboard: the same card folder twice ({seen[r]} and {c})")
        seen[r] = c
    if labels and len(labels) != len(cards):
        raise ConfigError(f"leaderboard: {len(labels)} labels for {len(cards)} cards; give one per card or none")
    entries = [read_entry(c) for c in cards]
    labels = _labels(entries, labels)
    suites = list(dict.fromkeys(s for e in entries for s in e["methods"]))
    boards = [method_board(s, entries, labels) for s in suites]
    table = _wide(boards, labels, entries)
    pairs = pd.concat([b["pairs"] for b in boards if len(b["pairs"])], ignore_index=True) \
        if any(len(b["pairs"]) for b in boards) else pd.DataFrame(
            columns=["suite", "model_a", "model_b", "diff", "se", "ci_low", "ci_high", "p_adj", "distinguishable",
                     "paired", "compared", "m"])
    out = Path(out) if out else cards[0].resolve().parent / "leaderboard"
    out.mkdir(parents=True, exist_ok=True)
    budgets = sorted({str(e["budget"]) for e in entries})
    result = {"format_version": LEADERBOARD_FORMAT_VERSION, "alpha": ALPHA,
              "procedure": "Bonferroni-simultaneous 95% intervals of all pairwise differences of the ranked quantity per "
                           "method (the headline, or its distance from the ideal), paired on shared items where the "
                           "cards hold them",
              "models": [{"label": lab, "model": e["model"], "card": e["path"].resolve().name, "budget": e["budget"]}
                         for lab, e in zip(labels, entries)],
              "budgets": budgets,
              "methods": [{k: v for k, v in b.items() if k != "pairs"} for b in boards],
              "pairs": json.loads(pairs.to_json(orient="records"))}
    write_json(out / "leaderboard.json", result)
    for name, writer in (("leaderboard.parquet", lambda p: table.to_parquet(p, index=False)),
                         ("leaderboard.csv", lambda p: table.to_csv(p, index=False)),
                         ("pairs.csv", lambda p: pairs.to_csv(p, index=False))):
        with atomic_path(out / name) as tmp:
            writer(tmp)
    write_text(out / "leaderboard.html", render_leaderboard(result, boards))
    return result | {"out": str(out), "table": table, "pairs": pairs}


__all__ = ["leaderboard", "method_board", "read_entry", "headline_key"]
