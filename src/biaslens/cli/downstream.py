"""``biaslens downstream {dst,generation}``: dialog tasks that check a (debiased) model stays useful."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from biaslens.cli.options import generated_command, load_config
from biaslens.methods.redditbias.options import DownstreamConfig
from biaslens.options import flag_specs

downstream_app = typer.Typer(rich_markup_mode=None, help="Dialog tasks on your data (RedditBias paper 3.2): state tracking and response "
                                  "generation; results feed `biaslens compare`.", no_args_is_help=True)


def _out(model: str, out: Optional[Path], task: str) -> Path:
    if out is not None:
        return out
    if Path(model).is_dir():
        return Path(model) / f"downstream-{task}"  # found by `biaslens compare MODEL`
    raise typer.BadParameter("--out is needed when --model is not a local folder")


#: the flags of both downstream commands: one per field of DownstreamConfig (biaslens.options)
DOWNSTREAM_FLAGS = flag_specs(DownstreamConfig)


def _command(task: str, doc: str):
    def command(**a):
        from biaslens.cli.common import guard

        guard(_run, task, a)

    command.__doc__ = doc
    command.__name__ = task
    return generated_command(command, [], DOWNSTREAM_FLAGS, f"downstream {task}", example="-S epochs=2")


downstream_app.command("dst")(_command("dst", "Dialog state tracking: binary slot-value classification, F1."))
downstream_app.command("generation")(_command(
    "generation", "Response generation: BLEU-4, NIST-2, METEOR, Entropy-4, Dist-2."))


def _run(task: str, values: dict) -> None:
    from biaslens.cli.output import results_console
    from biaslens.methods.redditbias.downstream import DownstreamDataError, run_dst, run_generation
    from biaslens.models import model_folder

    c = load_config(DownstreamConfig, DOWNSTREAM_FLAGS, values)
    model, train, test = c.model, c.train, c.test
    for f in (train, test):
        if not f.is_file():
            raise DownstreamDataError(f"{f}: no such file")
    folder = _out(model, c.out, task)
    fn = run_dst if task == "dst" else run_generation
    metrics = fn(model_folder(model), train, test, folder, epochs=c.epochs, batch_size=c.batch_size, lr=c.lr,
                 max_steps=c.max_steps)
    console = results_console()  # the scores and the metrics path: standard output
    shown = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} –" for k, v in metrics["scores"].items())
    console.print(f"{task}: {shown}")
    for k, why in (metrics.get("skipped") or {}).items():
        console.print(f"{k} skipped: {why}")
    console.print(f"metrics: [bold]{folder / 'metrics.json'}[/bold]")
