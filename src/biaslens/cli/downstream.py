"""``biaslens downstream {dst,generation}``: dialog tasks that check a (debiased) model stays useful."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

downstream_app = typer.Typer(rich_markup_mode=None, help="Dialog tasks on your data (RedditBias paper 3.2): state tracking and response "
                                  "generation; results feed `biaslens compare`.", no_args_is_help=True)


def _out(model: str, out: Optional[Path], task: str) -> Path:
    if out is not None:
        return out
    if Path(model).is_dir():
        return Path(model) / f"downstream-{task}"  # found by `biaslens compare MODEL`
    raise typer.BadParameter("--out is needed when --model is not a local folder")


@downstream_app.command("dst")
def dst(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Embedded name, local folder or Hugging Face id."),
    train: Path = typer.Option(..., "--train", help="MultiWOZ 2.0-format JSON for training."),
    test: Path = typer.Option(..., "--test", help="MultiWOZ 2.0-format JSON for testing."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run folder [default MODEL/downstream-dst]."),
    epochs: float = typer.Option(1.0, "--epochs"),
    batch_size: int = typer.Option(8, "--batch-size"),
    lr: float = typer.Option(5e-5, "--lr"),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after N steps (-1: run the epochs)."),
):
    """Dialog state tracking: binary slot-value classification, F1."""
    from biaslens.cli.app import guard

    guard(_run, "dst", model, train, test, out, epochs, batch_size, lr, max_steps)


@downstream_app.command("generation")
def generation(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Embedded name, local folder or Hugging Face id."),
    train: Path = typer.Option(..., "--train", help="DSTC-7 tab-separated file (last columns: context, response)."),
    test: Path = typer.Option(..., "--test", help="DSTC-7 test file; lines sharing a context are its references."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run folder [default MODEL/downstream-generation]."),
    epochs: float = typer.Option(1.0, "--epochs"),
    batch_size: int = typer.Option(8, "--batch-size"),
    lr: float = typer.Option(5e-5, "--lr"),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after N steps (-1: run the epochs)."),
):
    """Response generation: BLEU-4, NIST-2, METEOR, Entropy-4, Dist-2."""
    from biaslens.cli.app import guard

    guard(_run, "generation", model, train, test, out, epochs, batch_size, lr, max_steps)


def _run(task, model, train, test, out, epochs, batch_size, lr, max_steps) -> None:
    from biaslens.cli.output import results_console
    from biaslens.models import model_folder
    from biaslens.suites.downstream import DownstreamDataError, run_dst, run_generation

    for f in (train, test):
        if not f.is_file():
            raise DownstreamDataError(f"{f}: no such file")
    folder = _out(model, out, task)
    fn = run_dst if task == "dst" else run_generation
    metrics = fn(model_folder(model), train, test, folder, epochs=epochs, batch_size=batch_size, lr=lr,
                 max_steps=max_steps)
    console = results_console()  # the scores and the metrics path: standard output
    shown = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} –" for k, v in metrics["scores"].items())
    console.print(f"{task}: {shown}")
    for k, why in (metrics.get("skipped") or {}).items():
        console.print(f"{k} skipped: {why}")
    console.print(f"metrics: [bold]{folder / 'metrics.json'}[/bold]")
