"""``biaslens compare``: original vs debiased models from finished run folders (no model calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def compare(
    runs: list[str] = typer.Argument(..., help="One per model, original first: a run folder, a debiased model folder (its eval/ and downstream-*/ runs), or run folders joined by commas."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder for report.html and metrics.json."),
    label: Optional[list[str]] = typer.Option(None, "--label", help="Display name per model, in order (repeatable)."),
):
    """Compare models: RedditBias t-values (Figure 1a), LM perplexity (Figure 1b), downstream scores."""
    from biaslens.cli.app import _guard

    _guard(_compare, runs, out, label)


def _compare(runs: list[str], out: Path, labels: Optional[list[str]]) -> None:
    from biaslens.cli.app import console
    from biaslens.suites.compare import compare_runs

    metrics = compare_runs(runs, out, list(labels) if labels else None)
    rb = metrics.get("redditbias") or {}
    for bias_type, by_model in (rb.get("t") or {}).items():
        cells = ", ".join(f"{m}: {t:+.3f}" if t is not None else f"{m}: –" for m, t in by_model.items())
        console.print(f"{bias_type}: t = {cells}")
    for model, ppl in (rb.get("lm_perplexity") or {}).items():
        if ppl is not None:
            console.print(f"LM perplexity {model}: {ppl:.2f}")
    hg = metrics.get("holistic-generation") or {}
    for model, c in (hg.get("fgb_change_vs_first") or {}).items():
        console.print(f"Full Gen Bias x1000 {model}: {c['before']:.3f} -> {c['after']:.3f} ({c['change']:+.3f}; "
                      f"{'went down' if c['went_down'] else 'did not go down'})")
    console.print(f"report: [bold]{out / 'report.html'}[/bold]")
