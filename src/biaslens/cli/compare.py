"""``biaslens compare``: original vs debiased models from finished run folders (no model calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def compare(
    runs: list[str] = typer.Argument(..., help="One per model, original first: a run folder, a debiased model folder (its eval/ and downstream-*/ runs), or run folders joined by commas."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder for report.html and metrics.json [default: compare-FIRST-vs-SECOND next to the first run]."),
    label: Optional[list[str]] = typer.Option(None, "--label", metavar="<label>", help="Display name per model, in order (repeatable)."),
    intersection: bool = typer.Option(False, "--intersection", help="Runs that measured different prompts: compare them on the prompts they share (said in the report) instead of refusing."),
):
    """Compare models: RedditBias t-values (Figure 1a), LM perplexity (Figure 1b), downstream scores,
    HolisticBias generation bias with a paired before/after interval; every other suite by its
    headline number and interval. Two bias card folders are compared method by method."""
    from biaslens.cli.app import guard

    guard(_compare, runs, out, label, intersection)


def _compare(runs: list[str], out: Optional[Path], labels: Optional[list[str]], intersection: bool) -> None:
    from biaslens.bias_card import compare_cards, is_card
    from biaslens.cli.app import console
    from biaslens.rounding import estimate, number
    from biaslens.suites.compare import compare_runs

    if len(runs) == 2 and all(is_card(r) for r in runs):  # two bias cards: method by method
        result = compare_cards(runs[0], runs[1], out=out)
        for r in result["methods"]:
            console.print(f"{r['suite']}: {r['verdict']}" + (f" ({r['reason']})" if r.get("reason") else ""),
                          markup=False, soft_wrap=True)
        console.print(f"report: [bold]{Path(result['out']) / 'card-compare.html'}[/bold]", soft_wrap=True)
        return

    # min_models=2: a comparison of one run would look like a finished comparison
    metrics = compare_runs(runs, out, list(labels) if labels else None, intersection=intersection, min_models=2)
    out = Path(metrics["out"])
    for d in metrics.get("differences") or []:
        values = "; ".join(f"{k}: {v}" for k, v in d.items() if k not in ("suite", "what"))
        console.print(f"[yellow]differs[/yellow] ({d['suite']}) {d['what']}: {values}")
    rb = metrics.get("redditbias") or {}
    for bias_type, by_model in (rb.get("t") or {}).items():
        cells = ", ".join(f"{m}: {number(t, signed=True)}" for m, t in by_model.items())
        console.print(f"{bias_type}: t = {cells}")
    for model, ppl in (rb.get("lm_perplexity") or {}).items():
        if ppl is not None:
            console.print(f"LM perplexity {model}: {number(ppl)}")
    hg = metrics.get("holistic-generation") or {}
    for model, c in (hg.get("fgb_change_vs_first") or {}).items():
        if c.get("ci"):
            console.print(f"Full Gen Bias x1000 {model}: {number(c['before'])} -> {number(c['after'])} (change "
                          f"{estimate(c['change'], *c['ci'], signed=True)[:-1]}; {c['prompts']}): "
                          f"[bold]{c['verdict']}[/bold]")
        else:
            console.print(f"Full Gen Bias {model}: [bold]{c['verdict']}[/bold] ({c.get('reason')})")
        par = c.get("parroting")
        if par:
            console.print(f"parroting {model}: {100 * par['before']:.1f}% -> {100 * par['after']:.1f}% of responses")
    for suite, h in (metrics.get("headlines") or {}).items():
        for model, v in h["models"].items():
            if v.get("verdict") == "reference":
                continue
            console.print(f"{suite} {h['headline']} {model} vs first: {v['verdict']}"
                          + (f" ({v['reason']})" if v.get("reason") else ""), markup=False, soft_wrap=True)
    console.print(f"report: [bold]{out / 'report.html'}[/bold]")
