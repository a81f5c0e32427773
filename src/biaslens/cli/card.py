"""``biaslens card``: every method on one model at a stated budget, on one page."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from biaslens.cli.output import JSON_HELP, CommandOutput, card_json, command_output


def card(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Model: the embedded one, 'fake', a local folder or a Hub id."),
    budget: str = typer.Option("default", "--budget", help="smoke (checks the wiring at small sizes), default (verdicts worth reading on the embedded model), paper (each suite's paper sizes, hours on a CPU)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Card folder [default: runs/card-MODEL-TIME]."),
    methods: Optional[str] = typer.Option(None, "--methods", help="Comma-separated subset of the methods on the card (the suites that declare one; an unknown name lists them) [default: all]."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:N or mps."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Call cache folder [default: the user cache]."),
    seed: int = typer.Option(0, "--seed"),
    prompts: Optional[Path] = typer.Option(None, "--prompts", help="Your own prompts (text, JSONL, CSV or Parquet with a 'prompt' field): adds the counterfactual method, your prompts varied by identity [default: not on the card]."),
    allow_failures: bool = typer.Option(False, "--allow-failures", help="Exit 0 even when some methods failed (the card then says 'partial')."),
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),
):
    """Run every bias method that applies to MODEL and write one page (card.html): a verdict per
    method with its uncertainty, the scorer cards and links to each full report. Compare two cards
    with `biaslens compare CARD_BEFORE CARD_AFTER`."""
    from biaslens.cli.common import guard

    with command_output(json_output) as output:
        guard(_card, model, budget, out, methods, device, cache_dir, seed, allow_failures, output, prompts)


def _card(model, budget, out, methods, device, cache_dir, seed, allow_failures=False, output=None,
          prompts=None) -> None:
    from biaslens.bias_card import make_card
    from biaslens.cli.common import console

    output = output or CommandOutput(False, sys.stdout)
    config = {"model": {"name": model, "device": device}, "seed": seed}
    if cache_dir is not None:
        config["cache_dir"] = str(cache_dir)
    chosen = [m.strip() for m in methods.split(",") if m.strip()] if methods else None
    card = make_card(config, out=out, budget=budget, methods=chosen, console=console, results_console=output.results,
                     inputs={"prompts": prompts} if prompts is not None else None)
    from biaslens.report.card import method_sentence

    for r in card["methods"]:  # the card's plain sentences, numbers rounded to their intervals
        output.results.print(method_sentence(r), markup=False, soft_wrap=True)
    output.emit(card_json(card))  # before a failure's exit: a script still gets the partial card
    if card["status"] != "complete":
        failed = [r["suite"] for r in card["methods"] if r.get("status") == "failed"]
        message = (f"card status {card['status']}: {len(failed)} of {len(card['methods'])} methods failed "
                   f"({', '.join(failed)})")
        if allow_failures:
            console.print(f"[yellow]note:[/yellow] {message}; exit 0 (--allow-failures)", soft_wrap=True)
        else:
            from biaslens.cli.common import fail

            fail(f"{message}; pass --allow-failures to exit 0 anyway", code=1)
