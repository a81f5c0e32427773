"""``biaslens compare``: original vs debiased models from finished run folders (no model calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from biaslens.cli.output import JSON_HELP, CommandOutput, command_output, compare_cards_json, compare_runs_json


def compare(
    runs: list[str] = typer.Argument(..., help="One per model, original first: a run folder, a debiased model folder (its eval/ and downstream-*/ runs), or run folders joined by commas."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder for report.html and metrics.json [default: compare-FIRST-vs-SECOND next to the first run]."),
    label: Optional[list[str]] = typer.Option(None, "--label", metavar="<label>", help="Display name per model, in order (repeatable)."),
    intersection: bool = typer.Option(False, "--intersection", help="Runs that measured different prompts: compare them on the prompts they share (said in the report) instead of refusing."),
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),
):
    """Compare models: RedditBias t-values (Figure 1a), LM perplexity (Figure 1b), downstream scores,
    HolisticBias generation bias with a paired before/after interval; every other suite by its
    headline number and interval. Two bias card folders are compared method by method."""
    from biaslens.cli.common import guard

    with command_output(json_output) as output:
        guard(_compare, runs, out, label, intersection, output)


def _compare(runs: list[str], out: Optional[Path], labels: Optional[list[str]], intersection: bool,
             output: CommandOutput) -> None:
    from biaslens.bias_card import compare_cards, is_card
    from biaslens.comparison.runs import compare_runs, summary_lines

    console = output.results  # every line below is a result: standard output

    if len(runs) == 2 and all(is_card(r) for r in runs):  # two bias cards: method by method
        result = compare_cards(runs[0], runs[1], out=out)
        for r in result["methods"]:
            console.print(f"{r['suite']}: {r['verdict']}" + (f" ({r['reason']})" if r.get("reason") else ""),
                          markup=False, soft_wrap=True)
        console.print(f"report: [bold]{Path(result['out']) / 'card-compare.html'}[/bold]", soft_wrap=True)
        output.emit(compare_cards_json(result))
        return

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
    output.emit(compare_runs_json(metrics))
