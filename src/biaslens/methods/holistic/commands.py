"""HolisticBias's commands: ``biaslens tune style-equality`` (bias-reduction tuning) and ``biaslens
dataset holistic``; registered by the CLI from :data:`biaslens.registry.COMMANDS`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from biaslens.cli.common import TABLE_FORMAT, TABLE_OUT

if TYPE_CHECKING:
    import pandas as pd

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


def holistic_table(dataset_dir: Path | None = None, extra_files: list[Path] | None = None, *,
                   fix_articles: bool = False) -> pd.DataFrame:
    """Every HolisticBias sentence (the table `biaslens dataset holistic` writes)."""
    from biaslens.methods.holistic.dataset import build_sentence_table, load_holistic_dataset

    ds = load_holistic_dataset(dataset_dir, extra_files=list(extra_files or []))
    table: pd.DataFrame = build_sentence_table(ds, fix_articles=fix_articles).to_pandas()
    return table


def _dataset_holistic(out, dataset_dir, extra, variants, seed, fix_articles):
    from biaslens.config import ConfigError
    from biaslens.methods.holistic.dataset import (
        add_variants,
        build_sentence_table,
        build_sentences,
        load_holistic_dataset,
        write_table,
    )

    if not out.name.lower().endswith((".csv", ".csv.gz", ".parquet", ".pq")):
        raise ConfigError(f"--out {out}: unsupported format; use a .csv, .csv.gz or .parquet file name")
    ds = load_holistic_dataset(dataset_dir, extra_files=list(extra or []))
    if variants:
        df = add_variants(build_sentences(ds, fix_articles=fix_articles), seed=seed)
        n, n_unique = len(df), df["text"].nunique()
    else:
        # the Arrow path never builds a pandas frame: a third of the memory
        df = build_sentence_table(ds, fix_articles=fix_articles)
        n, n_unique = df.num_rows, len(df.column("text").unique())
    out.parent.mkdir(parents=True, exist_ok=True)
    write_table(df, out)
    typer.echo(f"wrote {n:,} sentences ({n_unique:,} unique texts) to {out}")  # a result: standard output


def register(app: typer.Typer, dataset_app: typer.Typer) -> None:
    """The CLI's HolisticBias commands."""
    from biaslens.cli.common import fail, guard

    app.add_typer(tune_app, name="tune")

    @dataset_app.command("holistic")
    def dataset_holistic(
        out: Path = TABLE_OUT,
        format: Optional[str] = TABLE_FORMAT,
        dataset_dir: Optional[Path] = typer.Option(None, help="Folder in the official HolisticBias format (default: built-in v1.0)."),
        extra_dataset_file: Optional[list[Path]] = typer.Option(None, "--extra-dataset-file", metavar="<file>", help="Your own JSON files, merged in (repeatable)."),
        variants: bool = typer.Option(False, "--variants", help="Apply the paper's four stylistic variations (seeded)."),
        seed: int = typer.Option(0, help="Seed for --variants."),
        fix_articles: bool = typer.Option(False, "--fix-articles", help="Correct 'a 80-year-old' -> 'an 80-year-old' etc. (deviates from the reference)."),
    ):
        """Write the HolisticBias sentence table."""
        if format == "hf" or (format is None and not out.suffix):
            from biaslens.cli.export import write_dataset

            if variants:
                fail("--variants: not available with --format hf")
            return guard(write_dataset, "holistic", lambda: holistic_table(dataset_dir, extra_dataset_file,
                                                                           fix_articles=fix_articles), out, "hf",
                         "biaslens.methods.holistic.dataset.hf_card")
        guard(_dataset_holistic, out, dataset_dir, extra_dataset_file, variants, seed, fix_articles)
