"""`biaslens export`: a suite's items in another tool's format (lm-evaluation-harness)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from biaslens.cli.common import TABLE_FORMAT, TABLE_OUT

if TYPE_CHECKING:
    import pandas as pd

export_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                         help="Export a suite's items for another evaluation tool.")


@export_app.command("lm-eval")
def export_lm_eval(
    out: Path = typer.Option(..., "--out", "-o", help="Task folder to write (YAML + JSONL data + README)."),
    suite: str = typer.Option("holistic-likelihood", "--suite", help="Suite whose sentences to export (holistic-likelihood)."),
    sample: Optional[int] = typer.Option(None, help="About N sentences, stratified, as `biaslens run` [default 6000]."),
    full: bool = typer.Option(False, "--full", help="Every sentence."),
    axes: Optional[str] = typer.Option(None, help="Comma-separated axes, e.g. ability,age."),
    templates: Optional[str] = typer.Option(None, help="Templates separated by '|'."),
    seed: Optional[int] = typer.Option(None, help="Seed for sampling [default 0]."),
    dataset_dir: Optional[Path] = typer.Option(None, help="HolisticBias folder in the official format (default: built-in v1.0)."),
    extra_dataset_file: Optional[list[Path]] = typer.Option(None, "--extra-dataset-file", metavar="<file>", help="Your own descriptors/nouns/templates JSON, merged in (repeatable)."),
    bias_types: Optional[str] = typer.Option(None, "--bias-types", help="redditbias: comma-separated bias types [default all]."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="redditbias: a RedditBias checkout (default: phrases from the bias specifications)."),
    split: Optional[str] = typer.Option(None, "--split", help="redditbias: test or valid [default test]."),
    max_template_pairs: Optional[int] = typer.Option(None, "--max-template-pairs", help="redditbias without --data-dir: pairs per bias type [default 400] (the run: -S redditbias.max_template_pairs=N)."),
):
    """Write a suite's texts as an lm-evaluation-harness task (loglikelihood_rolling): score them with `lm_eval --include_path OUT --tasks biaslens_holistic_likelihood --log_samples` (redditbias: biaslens_redditbias_lmb), then `biaslens run SUITE --from-lm-eval SAMPLES --tokenizer MODEL` with the same selection flags."""
    from biaslens.cli.common import guard

    guard(_export_lm_eval, **locals())


def _export_lm_eval(**a):
    import importlib

    from biaslens.config import ConfigError, RunConfig
    from biaslens.environment import default_console
    from biaslens.registry import SUITES
    from biaslens.suites import suite_class

    exporting = [name for name in SUITES if suite_class(name).lm_eval_export]
    if a["suite"] not in exporting:
        raise ConfigError(f"--suite {a['suite']}: {' and '.join(exporting)} export to lm-eval (a "
                          "likelihood per text); the others generate text")
    overrides: dict = {"suite": a["suite"]}
    rb = {k: a[k] for k in ("data_dir", "split", "max_template_pairs") if a[k] is not None}
    if a["bias_types"]:
        rb["bias_types"] = [s.strip() for s in a["bias_types"].split(",") if s.strip()]
    if rb:
        if a["suite"] != "redditbias":
            raise ConfigError("--bias-types/--data-dir/--split/--max-template-pairs: for --suite redditbias")
        overrides["redditbias"] = rb
    for key in ("sample", "seed", "dataset_dir"):
        if a[key] is not None:
            overrides[key] = a[key]
    if a["full"]:
        overrides["full"] = True
    if a["axes"]:
        overrides["axes"] = [s.strip() for s in a["axes"].split(",") if s.strip()]
    if a["templates"]:
        overrides["templates"] = [s.strip() for s in a["templates"].split("|") if s.strip()]
    if a["extra_dataset_file"]:
        overrides["extra_dataset_files"] = list(a["extra_dataset_file"])
    config = RunConfig.validated(overrides, source="flags")
    module, _, function = (suite_class(a["suite"]).lm_eval_export or "").partition(":")
    info = getattr(importlib.import_module(module), function)(config, a["out"])
    asked = config.sample if a["suite"] == "holistic-likelihood" and not config.full else None
    size = (f" ({asked:,} requested: the stratified sample keeps whole axis/template/descriptor groups, as a run "
            "does)" if asked is not None and asked != info["n_rows"] else "")
    default_console().print(f"wrote {info['n_rows']:,} texts{size} as lm-eval task {info['task']} to {a['out']} "
                            f"(see {a['out']}/README.md for the lm_eval command)", markup=False, soft_wrap=True)




def write_dataset(name: str, df_fn, out: Path, fmt: Optional[str], hf_card: Optional[str] = None) -> None:
    """Write one of biaslens's dataset tables as Parquet, CSV or the Hugging Face format; ``hf_card``:
    the method's module holding ``HF_CARD`` (the dataset card), where it has one."""
    import biaslens
    from biaslens.config import ConfigError
    from biaslens.environment import default_console
    from biaslens.fileio import write_table

    lower = out.name.lower()
    fmt = fmt or ("csv" if lower.endswith((".csv", ".csv.gz")) else "parquet" if lower.endswith((".parquet", ".pq"))
                  else "hf")
    if fmt not in ("parquet", "csv", "hf"):
        raise ConfigError(f"--format {fmt}: choose parquet, csv or hf")
    if fmt != "hf" and not lower.endswith((".csv", ".csv.gz", ".parquet", ".pq")):
        raise ConfigError(f"--out {out}: a {fmt} table needs a .{fmt} file name")
    if fmt == "hf":
        import importlib

        from biaslens.datasets.hf_format import require_datasets, write_hf_dataset

        if hf_card is None:
            raise ConfigError(f"--format hf: not written for {name} (no dataset card); use a .parquet or .csv file")

        require_datasets()  # before building the table: a missing extra fails at once
        df = df_fn()
        write_hf_dataset(df, out, importlib.import_module(hf_card).HF_CARD, biaslens_version=biaslens.__version__)
    else:
        df = df_fn()
        out.parent.mkdir(parents=True, exist_ok=True)
        write_table(df, out)
    default_console().print(f"wrote {len(df):,} rows of {name} to {out} ({fmt})", markup=False)


def table_command(dataset_app: typer.Typer, name: str, doc: str, table: Callable[[], pd.DataFrame], *,
                  out_option: Any = TABLE_OUT, format_option: Any = TABLE_FORMAT, hf_card: str | None = None) -> None:
    """`biaslens dataset <name>` with --out and --format: writes ``table()`` (:func:`write_dataset`);
    ``doc`` is the command's help."""

    def write(out: Path = out_option, format: Optional[str] = format_option):
        from biaslens.cli.common import guard

        guard(write_dataset, name, table, out, format, hf_card)

    write.__doc__ = doc
    dataset_app.command(name)(write)


def register_shipped_tables(dataset_app: typer.Typer) -> None:
    """`biaslens dataset <name>` for each method whose shipped data the registry lists
    (:data:`biaslens.registry.TABLES`): the data, Parquet or CSV."""
    import importlib

    from biaslens.registry import TABLES

    def reader(target: str) -> Callable[[], pd.DataFrame]:
        module, _, fn = target.partition(":")
        return lambda: getattr(importlib.import_module(module), fn)()

    for name, (what, target) in TABLES.items():
        table_command(dataset_app, name, f"Write {what}.", reader(target),
                      out_option=typer.Option(..., "--out", "-o", help="Output: a .parquet or .csv file."),
                      format_option=typer.Option(None, "--format", help="parquet or csv [default from --out's extension]."))
