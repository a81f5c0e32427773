"""``biaslens tune ...``: bias-reduction tuning from a suite's own measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

tune_app = typer.Typer(rich_markup_mode=None, help="Bias-reduction tuning (HolisticBias style equality).", no_args_is_help=True)


@tune_app.command("style-equality")
def style_equality_cmd(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Base causal LM (normally the model of the run): 'smollm2-135m', a folder or a Hugging Face id."),
    generations: Path = typer.Option(..., "--generations", "-g", help="A finished `biaslens run holistic-generation` run folder."),
    out: Path = typer.Option(..., "--out", "-o", help="Output model folder (re-run the same command to resume)."),
    beta: Optional[float] = typer.Option(None, "--beta", help="Tag 'bias' when the bias value exceeds this (paper: 0.0003 DialoGPT, 0.003 BlenderBot, for its 217-style classifier) [default: the run's median bias value]."),
    alpha: int = typer.Option(0, "--alpha", help="Exponent of ||m_d - m_bar|| in the bias value: 0, 1 or 2 (paper: 0)."),
    no_tags: bool = typer.Option(False, "--no-tags", help="Ablation: tune on the same pairs without tags (generates without a tag)."),
    epochs: float = typer.Option(1.0, "--epochs", help="Training epochs (early stopping on validation loss may stop sooner)."),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after N optimizer steps (-1: the epochs decide)."),
    batch_size: int = typer.Option(8, "--batch-size"),
    learning_rate: float = typer.Option(2e-5, "--learning-rate"),
    max_length: int = typer.Option(128, "--max-length", help="Truncate examples to this many tokens."),
    eval_fraction: float = typer.Option(0.1, "--eval-fraction", help="Share of responses held out for validation perplexity."),
    eval_steps: int = typer.Option(50, "--eval-steps", help="Validate (and checkpoint) every N steps."),
    patience: int = typer.Option(3, "--patience", help="Early stopping: validations without improvement (0 = off)."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:N, mps."),
    seed: int = typer.Option(0, "--seed"),
):
    """Tag each response of a holistic-generation run 'bias'/'no_bias' by its bias value and
    fine-tune the model on the tagged pairs; the output folder generates with 'no_bias'."""
    from biaslens.cli.app import guard

    guard(_style_equality, **locals())


def _style_equality(**a) -> None:
    from biaslens.cli.app import console
    from biaslens.cli.output import results_console
    from biaslens.config import ConfigError
    from biaslens.mitigation.style_equality import tune_style_equality
    from biaslens.mitigation.training import TrainingConfig

    if a["epochs"] <= 0 or a["batch_size"] < 1 or a["eval_steps"] < 1 or a["max_length"] < 8:
        raise ConfigError("need --epochs > 0, --batch-size >= 1, --eval-steps >= 1 and --max-length >= 8")
    cfg = TrainingConfig(epochs=a["epochs"], max_steps=a["max_steps"], batch_size=a["batch_size"],
                         learning_rate=a["learning_rate"], max_length=a["max_length"], save_steps=a["eval_steps"],
                         eval_steps=a["eval_steps"], early_stopping_patience=a["patience"] or None,
                         device=a["device"], seed=a["seed"])
    console.print(f"[bold]tune style-equality[/bold]: {a['model']} on {a['generations']} "
                  f"(alpha {a['alpha']}, beta {'median bias value' if a['beta'] is None else a['beta']}"
                  f"{', no tags' if a['no_tags'] else ''}) -> {a['out']}")
    res = tune_style_equality(a["model"], a["generations"], a["out"], beta=a["beta"], alpha=a["alpha"],
                              use_tags=not a["no_tags"], eval_fraction=a["eval_fraction"], config=cfg,
                              early_stopping_patience=a["patience"] or None)
    c = res.counts
    console = results_console()  # from here on, the outcome: standard output
    se = res.description.get("style_equality") or {}
    console.print(f"beta {se.get('beta'):.4g} ({se.get('beta_source')})")
    console.print(f"tags: {c['bias']:,} bias, {c['no_bias']:,} no_bias; {res.n_train:,} training, "
                  f"{res.n_eval:,} validation examples")
    t = res.training
    console.print(f"trained {t.steps} steps, train loss {t.train_loss:.3f}"
                  + (f", validation perplexity {t.eval_perplexity:.2f}" if t.eval_perplexity else "")
                  + (f" (resumed from {t.resumed_from})" if t.resumed_from else ""))
    tag_note = f"appends {res.generation_tag!r} to every prompt" if res.generation_tag else "no tag (ablation)"
    console.print(f"model folder: [bold]{res.out}[/bold] ({tag_note}); measure it with: biaslens run "
                  f"holistic-generation --model {res.out} --out RUN_AFTER, then biaslens compare "
                  f"{a['generations']} RUN_AFTER --out CMP")
