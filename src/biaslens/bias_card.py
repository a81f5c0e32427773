"""The bias card: every method that applies to a model, at a stated budget, on one page.

``make_card(model)`` runs each suite through :func:`biaslens.api.run` into
``<out>/<suite>/`` (same cache, same seed), keeps going past a method that fails (shown as
failed, never as a result), and writes ``card.json`` and ``card.html``: per method the
one-sentence verdict with its uncertainty, the headline number with its interval, warnings,
the scorer cards and a link to the full report. Every suite writes the same uniform part of
``metrics.json`` (:mod:`biaslens.results`), so the card needs no per-suite code.

``compare_cards(before, after)`` compares two cards method by method, with the guards of
``biaslens compare``: a method whose runs differ in what they measured gets "not comparable"
and the reason, never a direction.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslens.config import ConfigError, deep_merge
from biaslens.environment import applies_environment_policy

CARD_FORMAT_VERSION = 1


@dataclass(frozen=True)
class CardMethod:
    """One method on the card: the suite and its settings per budget (``Suite.card``)."""

    suite: str
    title: str
    #: what the method asks of the model; masked LMs only have likelihoods
    needs: str  # "likelihood" | "generation"
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the card inputs the method needs (input name -> dotted configuration field), ``CardSpec.inputs``
    inputs: dict[str, str] = field(default_factory=dict)


def card_methods(inputs: Iterable[str] = (), *, every: bool = False) -> tuple[CardMethod, ...]:
    """The methods on the card, in registry order: every suite in :data:`biaslens.suites.SUITES`
    that declares a ``card`` (:class:`biaslens.suites.base.CardSpec`: title, needs, sizes per
    budget) and whose card inputs are among ``inputs`` (``--prompts``: the counterfactual method;
    ``every``: regardless of inputs). "smoke" checks the wiring at small sizes; "default" gives verdicts worth reading
    in minutes on the embedded model on a 2-core CPU; "paper" uses each suite's own defaults."""
    from biaslens.suites import SUITES, suite_class

    given = set(inputs)
    return tuple(CardMethod(name, spec.title, spec.needs, dict(spec.budgets), dict(spec.inputs))
                 for name in SUITES if (spec := suite_class(name).card) is not None
                 and (every or set(spec.inputs) <= given))


BUDGETS = ("smoke", "default", "paper")


def method_config(method: CardMethod, budget: str, base: dict[str, Any], out: Path,
                  inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run configuration of one method: the user's base settings (model, cache, seed),
    the budget's sizes, the card inputs it needs (``--prompts``), its own folder."""
    given: dict[str, Any] = {}
    for name, dotted in method.inputs.items():
        *parents, leaf = dotted.split(".")
        node = given
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = (inputs or {}).get(name)
    return deep_merge(deep_merge(deep_merge(base, method.budgets.get(budget, {})), given),
                      {"suite": method.suite, "out": str(out / method.suite)})


def card_row(method: CardMethod, run_dir: Path) -> dict[str, Any]:
    """One card row from a finished suite folder's uniform metrics.json part."""
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    entries = metrics.get("entries") or []
    head = dict(entries[0]) if entries else {}
    floor = metrics.get("noise_floor")
    if head.get("reference") is None and isinstance(floor, dict):
        # runs written before MetricEntry.reference: the permuted-label mean their verdict used
        mean = next((v for k, v in floor.items() if k.endswith("permuted_mean") and isinstance(v, (int, float))), None)
        if mean is not None:
            head.update(reference=mean, reference_label="permuted-label noise floor")
    return {"suite": method.suite, "title": method.title, "status": "complete",
            "verdict": metrics.get("verdict") or "no verdict (this method's metrics carry none)",
            "headline": head.get("name"), "value": head.get("value"), "ci_low": head.get("ci_low"),
            "ci_high": head.get("ci_high"), "interval": head.get("interval"), "level": head.get("level"),
            "ideal": head.get("ideal"),
            # what the sentence reads the number against, where it is not the ideal (noise floor, chance level)
            "reference": head.get("reference"), "reference_label": head.get("reference_label"),
            "higher_is_better": head.get("higher_is_better"), "n_used": head.get("n_used"),
            "entries": entries, "warnings": metrics.get("warnings") or [],
            "scorer_cards": metrics.get("scorer_cards") or [], "report": f"{method.suite}/report.html"}


@applies_environment_policy
def make_card(config: dict[str, Any] | None = None, *, out: str | Path | None = None, budget: str = "default",
              methods: list[str] | None = None, console=None, backend=None, results_console=None,
              inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every applicable method on ``config["model"]`` and write ``card.json`` and ``card.html``.

    Args:
        config: base run settings (model, cache_dir, seed, ...), as for :func:`biaslens.run`.
        out: the card folder (default ``runs/card-<model>-<time>``).
        budget: "smoke", "default" or "paper" (the sizes in each suite's ``card``).
        methods: a subset of suite names (default all).
        inputs: what methods that need the user's own data get (``{"prompts": FILE}``: the
            counterfactual method); a method whose inputs are not given is left off.
        backend: an already loaded backend, shared by every method (tests).
        console, results_console: progress (each method's run) and the card's path (default ``console``).
    """
    from biaslens import api
    from biaslens.environment import default_console
    from biaslens.report.card import card_status

    console = console or default_console()
    if budget not in BUDGETS:
        raise ConfigError(f"--budget: unknown budget {budget!r}; choose from {', '.join(BUDGETS)}")
    base = dict(config or {})
    if isinstance(base.get("model"), str):
        base["model"] = {"name": base["model"]}
    base.setdefault("model", {})
    inputs = {k: str(v) for k, v in (inputs or {}).items() if v is not None}
    all_methods = card_methods(every=True)
    known = [m.suite for m in all_methods]
    for name in methods or []:
        if name not in known:
            raise ConfigError(f"--methods: unknown method {name!r}; choose from {', '.join(known)}")
    for m in all_methods:
        lacking = [k for k in m.inputs if k not in inputs]
        if methods and m.suite in methods and lacking:
            raise ConfigError(f"--methods {m.suite}: the method needs {', '.join('--' + k for k in lacking)}")
    # a method that needs an input the user did not give (counterfactual: --prompts) is left off
    chosen = [m for m in all_methods if (not methods or m.suite in methods) and all(k in inputs for k in m.inputs)]
    model_name = (base["model"] or {}).get("name") or "smollm2-135m"
    out = Path(out) if out else Path("runs") / f"card-{Path(model_name).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    existed = out.exists()
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    console.print(f"[bold]bias card[/bold] for [bold]{model_name}[/bold], budget [bold]{budget}[/bold]: "
                  + ", ".join(m.suite for m in chosen))
    rows: list[dict[str, Any]] = []
    kind = None
    for i, method in enumerate(chosen, 1):
        if kind == "masked" and method.needs == "generation":
            rows.append({"suite": method.suite, "title": method.title, "status": "not applicable",
                         "verdict": "not applicable: a masked LM does not generate text"})
            continue
        console.print(f"[bold]({i}/{len(chosen)}) {method.title}[/bold]")
        t0 = time.perf_counter()
        try:
            res = api.run(method_config(method, budget, base, out, inputs), console=console, backend=backend)
            row = card_row(method, Path(res.out))
            kind = kind or (res.stats.get("model") or {}).get("kind")
        except Exception as e:  # noqa: BLE001 - a failed method is shown as failed, the card goes on
            if getattr(e, "at_model_load", False) and not any(r.get("status") == "complete" for r in rows):
                # the model cannot load: every method would fail the same way; one error, no card
                if not existed:
                    shutil.rmtree(out, ignore_errors=True)
                raise
            row = {"suite": method.suite, "title": method.title, "status": "failed",
                   "verdict": f"failed: {type(e).__name__}: {e}", "report": None}
            from rich.markup import escape

            # escaped: the message is text (it may hold "[...]"), the label is markup
            console.print(f"[red]{method.suite} failed:[/red] {escape(f'{type(e).__name__}: {e}')}", soft_wrap=True)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
    card = {"format_version": CARD_FORMAT_VERSION, "model": model_name, "budget": budget,
            "status": card_status(rows),
            "budget_settings": {m.suite: m.budgets.get(budget, {}) for m in chosen},
            "base_config": base, **({"inputs": inputs} if inputs else {}), "methods": rows, "elapsed_seconds": round(time.time() - started, 1),
            "machine": _machine()}
    _write_card(out, card)
    (results_console or console).print(f"card: [bold]{out / 'card.html'}[/bold]", soft_wrap=True)
    return card | {"out": str(out)}


def _machine() -> dict[str, Any]:
    try:
        from biaslens.machine import machine_facts
    except ImportError:  # pragma: no cover
        return {}
    return machine_facts()


def _write_card(out: Path, card: dict[str, Any]) -> None:
    from biaslens.report.card import render_card
    from biaslens.report.run_folder import write_json, write_text

    write_json(out / "card.json", card)
    write_text(out / "card.html", render_card(card))


def read_card(path: str | Path) -> dict[str, Any]:
    """card.json of a card folder, or an error naming the file."""
    f = Path(path) / "card.json"
    try:
        card = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} is not a bias card folder (no card.json)") from None
    except ValueError as e:
        raise ConfigError(f"{f}: not valid JSON ({e})") from None
    if not isinstance(card, dict) or not isinstance(card.get("methods"), list):
        raise ConfigError(f"{f}: expected a bias card (a 'methods' list)")
    return card


def rerender_card(path: str | Path, *, console=None) -> Path:
    """Re-render a card folder without model calls: each completed method's run folder again
    (:func:`biaslens.rerender`), its row from the new metrics.json, then card.json and card.html."""
    from biaslens import api
    from biaslens.report.card import card_status

    path = Path(path)
    card = read_card(path)
    by_suite = {m.suite: m for m in card_methods(every=True)}
    rows = []
    for row in card["methods"]:
        method = by_suite.get(row.get("suite"))
        if row.get("status") == "complete" and method is not None:
            api.rerender(path / method.suite, console=console)
            row = card_row(method, path / method.suite) | {"seconds": row.get("seconds")}
        rows.append(row)
    card = card | {"methods": rows, "status": card_status(rows)}
    _write_card(path, card)
    return path / "card.html"


def is_card(path: str | Path) -> bool:
    return (Path(path) / "card.json").is_file()


def compare_cards(before: str | Path, after: str | Path, *, out: str | Path | None = None) -> dict[str, Any]:
    """Compare two bias cards method by method and write ``out/card-compare.html`` (+ JSON).

    A method is compared only when both cards ran it and its two runs measured the same
    thing (``biaslens compare``'s checks: dataset, prompt selection, decoding, scorer,
    perplexity definition); otherwise the row says "not comparable" and why. Where the
    suite has a paired comparison (generation bias: paired delete-one-descriptor jackknife),
    that verdict is used; elsewhere a change needs non-overlapping 95% intervals. Each row's
    ``outcome`` says whether the change is for the worse
    (:func:`biaslens.comparison.change.method_change`); :func:`biaslens.comparison.change.gate`
    turns the rows into the regression gate's decision.
    """
    from biaslens.comparison.change import method_change, paired_headline_change
    from biaslens.comparison.entries import load_entry
    from biaslens.comparison.runs import compare_runs, section_builders

    before, after = Path(before), Path(after)
    cb, ca = read_card(before), read_card(after)
    out = Path(out) if out else before.resolve().parent / f"card-compare-{before.resolve().name}-vs-{after.resolve().name}"
    out.mkdir(parents=True, exist_ok=True)
    rows_a = {r["suite"]: r for r in ca["methods"]}
    rows = []
    for rb in cb["methods"]:
        suite, ra = rb["suite"], rows_a.get(rb["suite"])
        base = {"suite": suite, "title": rb.get("title", suite), "report": None}
        if ra is None or rb.get("status") != "complete" or ra.get("status") != "complete":
            rows.append(base | {"headline": rb.get("headline"), "before": rb.get("value"),
                                "after": (ra or {}).get("value"), "verdict": "not comparable",
                                "outcome": "not comparable", "reason": "the method did not complete on both cards"})
            continue
        sizes = [json.dumps((c.get("budget_settings") or {}).get(suite), sort_keys=True) for c in (cb, ca)]
        if sizes[0] != sizes[1]:  # a smoke-size run is a different measurement from a default-size one
            rows.append(base | {"headline": rb.get("headline"), "before": rb.get("value"), "after": ra.get("value"),
                                "verdict": "not comparable", "outcome": "not comparable",
                                "reason": f"the cards ran it at different sizes ({cb.get('budget')}: {sizes[0]}; "
                                          f"{ca.get('budget')}: {sizes[1]})"})
            continue
        entries = [load_entry(before / suite, "before"), load_entry(after / suite, "after")]
        paired = None
        if suite in section_builders([entries[0]]):  # the suite's own comparison page, with its paired statistics
            try:
                m = compare_runs([before / suite, after / suite], out / suite, ["before", "after"])
                base["report"] = f"{suite}/report.html"
                paired = paired_headline_change(m.get(suite), "after")
            except ConfigError as e:
                paired = {"verdict": "not comparable", "reason": str(e)}
        rows.append(base | method_change(suite, entries[0], entries[1], paired=paired))
    result = {"format_version": CARD_FORMAT_VERSION, "before": {"card": str(before), "model": cb.get("model"),
                                                                  "budget": cb.get("budget")},
              "after": {"card": str(after), "model": ca.get("model"), "budget": ca.get("budget")},
              "methods": rows, "out": str(out)}
    if cb.get("budget") != ca.get("budget"):
        result["warning"] = (f"the cards used different budgets ({cb.get('budget')} vs {ca.get('budget')}): "
                             "methods whose sizes differ are not comparable")
    from biaslens.report.card import render_card_compare
    from biaslens.report.run_folder import write_json, write_text

    write_json(out / "card-compare.json", result)
    write_text(out / "card-compare.html", render_card_compare(result))
    return result
