"""``biaslens leaderboard``: many bias cards on one page, a column per method."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def leaderboard(
    cards: list[Path] = typer.Argument(..., help="Two or more bias card folders (`biaslens card --out ...`), from any machine."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder for leaderboard.html, leaderboard.{csv,parquet,json} and pairs.csv [default: leaderboard next to the first card]."),
    label: Optional[list[str]] = typer.Option(None, "--label", metavar="<label>", help="Display name per card, in order (repeatable)."),
):
    """A leaderboard of bias cards: per method each model's headline with its 95% interval, its
    verdict, noise floor and scorer warnings, the models in order, and which differences are
    distinguishable (simultaneous 95% intervals over all pairs); runs that measured different
    things are 'not comparable', with the reason. No model calls."""
    from biaslens.cli.common import guard

    guard(_leaderboard, cards, out, label)


def _leaderboard(cards: list[Path], out: Optional[Path], labels: Optional[list[str]]) -> None:
    from biaslens.card_leaderboard import leaderboard as make
    from biaslens.cli.output import results_console

    result = make(cards, out=out, labels=list(labels) if labels else None)
    console = results_console()  # the summaries and the page's path are the results: standard output
    from biaslens.report.leaderboard import verdict_lines

    for line in verdict_lines(result["methods"]):  # methods that say the same share a line
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"leaderboard: [bold]{Path(result['out']) / 'leaderboard.html'}[/bold]", soft_wrap=True)
