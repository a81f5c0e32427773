"""``biaslens tune ...``: bias-reduction tuning from a suite's own measurements."""

from __future__ import annotations

import typer

from biaslens.cli.options import generated_command, load_config
from biaslens.methods.holistic.generation_options import StyleEqualityConfig
from biaslens.options import flag_specs

tune_app = typer.Typer(rich_markup_mode=None, help="Bias-reduction tuning (HolisticBias style equality).", no_args_is_help=True)


#: the flags of `tune style-equality`: one per field of StyleEqualityConfig (biaslens.options)
STYLE_EQUALITY_FLAGS = flag_specs(StyleEqualityConfig)


def style_equality_cmd(**a):
    """Tag each response of a holistic-generation run 'bias'/'no_bias' by its bias value and
    fine-tune the model on the tagged pairs; the output folder generates with 'no_bias'."""
    from biaslens.cli.common import guard

    guard(_style_equality, a)


tune_app.command("style-equality")(generated_command(style_equality_cmd, [], STYLE_EQUALITY_FLAGS,
                                                     "tune style-equality", example="-S epochs=1"))


def _style_equality(values: dict) -> None:
    from biaslens.cli.common import console
    from biaslens.methods.holistic.style_equality import tune_style_equality
    from biaslens.mitigation.training import TrainingConfig

    a = load_config(StyleEqualityConfig, STYLE_EQUALITY_FLAGS, values).model_dump()
    a["no_tags"] = not a["tags"]
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
    from biaslens.cli.output import results_console

    console = results_console()  # from here on, the outcome: standard output
    se = res.description.get("style_equality") or {}
    console.print(f"beta {se.get('beta'):.4g} ({se.get('beta_source')})")
    console.print(f"tags: {c['bias']:,} bias, {c['no_bias']:,} no_bias; {res.n_train:,} training, "
                  f"{res.n_eval:,} validation examples")
    t = res.training
    console.print(t.summary("validation perplexity", 2))
    tag_note = f"appends {res.generation_tag!r} to every prompt" if res.generation_tag else "no tag (ablation)"
    console.print(f"model folder: [bold]{res.out}[/bold] ({tag_note}); measure it with: biaslens run "
                  f"holistic-generation --model {res.out} --out RUN_AFTER, then biaslens compare "
                  f"{a['generations']} RUN_AFTER --out CMP")
