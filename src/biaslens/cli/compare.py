"""``biaslens compare``: original vs debiased models from finished run folders (no model calls),
and the bias regression gate (``--fail-on worse``)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from biaslens.cli.output import JSON_HELP, CommandOutput, command_output, compare_cards_json, compare_runs_json


class FailOn(str, Enum):
    worse = "worse"


def compare(
    runs: list[str] = typer.Argument(..., help="One per model, original first: a run folder, a debiased model folder (its eval/ and downstream-*/ runs), or run folders joined by commas; or two bias card folders."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder for report.html and metrics.json [default: compare-FIRST-vs-SECOND next to the first run]."),
    label: Optional[list[str]] = typer.Option(None, "--label", metavar="<label>", help="Display name per model, in order (repeatable)."),
    intersection: bool = typer.Option(False, "--intersection", help="Runs that measured different prompts: compare them on the prompts they share (said in the report) instead of refusing."),
    fail_on: Optional[FailOn] = typer.Option(None, "--fail-on", help="A bias regression gate for CI: 'worse' exits 1 when any method's headline got distinguishably worse than in the first (paired test or non-overlapping 95% intervals), 2 when a method cannot be compared, 0 otherwise; one line per method on standard error."),
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),
):
    """Compare models: RedditBias t-values (Figure 1a), LM perplexity (Figure 1b), downstream scores,
    HolisticBias generation bias with a paired before/after interval; every other suite by its
    headline number and interval. Two bias card folders are compared method by method.

    With --fail-on worse it is a regression gate: exit 1 when a method got distinguishably worse,
    2 when the two cannot be compared (different sizes, data, decoding, scorer ...), 0 otherwise."""
    from biaslens.cli.common import guard

    with command_output(json_output) as output:
        code = guard(_compare, runs, out, label, intersection, fail_on, output)
    if code:
        raise typer.Exit(code)


def _compare(runs: list[str], out: Optional[Path], labels: Optional[list[str]], intersection: bool,
             fail_on: Optional[FailOn], output: CommandOutput) -> int:
    from biaslens.bias_card import compare_cards, is_card
    from biaslens.comparison.change import gate, print_gate
    from biaslens.comparison.runs import compare_runs, summary_lines
    from biaslens.config import ConfigError

    console = output.results  # every line below is a result: standard output

    cards = [r for r in runs if is_card(r)]
    if cards and (len(runs) != 2 or len(cards) != 2):
        raise ConfigError(f"compare: {cards[0]} is a bias card (card.json), and "
                          + (f"{len(runs)} folders were given" if len(cards) == len(runs) else
                             f"{next(r for r in runs if not is_card(r))} is not")
                          + ": compare exactly two cards (biaslens compare CARD_BEFORE CARD_AFTER; many cards: "
                            "biaslens leaderboard), or runs with runs (a card's method folder, e.g. "
                            f"{Path(cards[0]) / 'redditbias'}, is a run at the card's size)")
    if cards:  # two bias cards: method by method
        result = compare_cards(runs[0], runs[1], out=out)
        for r in result["methods"]:
            console.print(f"{r['suite']}: {r['verdict']}" + (f" ({r['reason']})" if r.get("reason") else ""),
                          markup=False, soft_wrap=True)
        console.print(f"report: [bold]{Path(result['out']) / 'card-compare.html'}[/bold]", soft_wrap=True)
        decision = gate(result["methods"]) if fail_on else None
        if decision:
            print_gate(decision)
        output.emit(compare_cards_json(result) | ({"gate": decision.as_dict()} if decision else {}))
        return decision.exit_code if decision else 0

    # min_models=2: a comparison of one run would look like a finished comparison
    metrics = compare_runs(runs, out, list(labels) if labels else None, intersection=intersection, min_models=2)
    out = Path(metrics["out"])
    for d in metrics.get("differences") or []:
        values = "; ".join(f"{k}: {v}" for k, v in d.items() if k not in ("suite", "what"))
        console.print(f"[yellow]differs[/yellow] ({d['suite']}) {d['what']}: {values}")
    for line in summary_lines(metrics):  # each suite's own comparison (Suite.compare), registry order
        console.print(line)
    for suite, h in (metrics.get("headlines") or {}).items():
        for model, v in h["models"].items():
            if v.get("verdict") == "reference":
                continue
            console.print(f"{suite} {h['headline']} {model} vs first: {v['verdict']}"
                          + (f" ({v['reason']})" if v.get("reason") else ""), markup=False, soft_wrap=True)
    console.print(f"report: [bold]{out / 'report.html'}[/bold]", soft_wrap=True)
    decision = gate([c for by_model in (metrics.get("changes") or {}).values() for c in by_model.values()]) \
        if fail_on else None
    if decision:
        print_gate(decision)
    output.emit(compare_runs_json(metrics) | ({"gate": decision.as_dict()} if decision else {}))
    return decision.exit_code if decision else 0
