"""Command-line interface. Every command parses flags into the same objects the
Python API takes (``RunConfig``), calls the API, and turns known errors into one
clear line (exit code 2) instead of a traceback."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(
    name="biaslens",
    help="Measure social bias in language models: HolisticBias, RedditBias, community bias, FairPair.\n\n"
         "With no arguments, `biaslens run` scores a stratified sample of HolisticBias on the embedded "
         "model (SmolLM2-135M, offline) and writes a Likelihood Bias report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dataset_app = typer.Typer(help="Build and export datasets.", no_args_is_help=True)
cache_app = typer.Typer(help="Inspect or clear the model-call cache.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
app.add_typer(cache_app, name="cache")

console = Console(stderr=True)


def _known_errors() -> tuple[type[BaseException], ...]:
    from biaslens.api import RunNotComplete
    from biaslens.config import ConfigError
    from biaslens.datasets.generations import GenerationsFileError
    from biaslens.datasets.holistic import DatasetError
    from biaslens.models.base import ModelError
    from biaslens.report.run_folder import RunFolderBusy
    from biaslens.suites import UnknownSuite

    return (ConfigError, DatasetError, GenerationsFileError, ModelError, RunFolderBusy, RunNotComplete, UnknownSuite,
            FileNotFoundError)


def _fail(e: BaseException, code: int = 2) -> None:
    console.print(f"[bold red]error:[/bold red] {e}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _guard(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        console.print("interrupted: finished batches are cached; run the same command again to resume")
        raise typer.Exit(130)
    except _known_errors() as e:
        _fail(e)
    except Exception as e:  # noqa: BLE001 - last line of defence, still one clear line
        if os.environ.get("BIASLENS_DEBUG"):
            raise
        _fail(f"{type(e).__name__}: {e} (set BIASLENS_DEBUG=1 for the traceback)", code=1)


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug details (cache keys, batches).")):
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Offline by default: the Hub is unreachable here and a hanging download is worse than a clear error.
    if not os.environ.get("BIASLENS_ONLINE"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@app.command()
def run(
    suite: str = typer.Argument("holistic-likelihood", help="Suite to run (see `biaslens suites`)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="'smollm2-135m' (embedded, default), 'fake', a Hugging Face id or a local folder."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run folder (default runs/<suite>-<model>-<time>)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML file with any RunConfig field; flags override it."),
    sample: Optional[int] = typer.Option(None, help="About N sentences, stratified, whole (axis, template, descriptor) groups [default 6000]."),
    full: bool = typer.Option(False, "--full", help="Every sentence (HolisticBias v1.0: 460,980)."),
    axes: Optional[str] = typer.Option(None, help="Comma-separated axes, e.g. ability,age."),
    templates: Optional[str] = typer.Option(None, help="Templates separated by '|', e.g. 'I love {plural_noun_phrase}.'"),
    seed: Optional[int] = typer.Option(None, help="Seed for sampling [default 0]."),
    dataset_dir: Optional[Path] = typer.Option(None, help="HolisticBias folder in the official format (default: built-in v1.0)."),
    extra_dataset_file: Optional[list[Path]] = typer.Option(None, "--extra-dataset-file", help="Your own descriptors/nouns/templates JSON, merged in (repeatable)."),
    device: Optional[str] = typer.Option(None, help="cpu, cuda, cuda:N, mps [default cpu]."),
    dtype: Optional[str] = typer.Option(None, help="float32 (exact, default), bfloat16, float16."),
    batch_size: Optional[int] = typer.Option(None, help="Texts per forward pass [default per backend: 32 causal]."),
    start_token: Optional[str] = typer.Option(None, help="Document-start token prepended before each text (default chosen per model, recorded in run.json)."),
    no_start_token: bool = typer.Option(False, "--no-start-token", help="Reference-compatible scoring: no start token, the first token is not scored."),
    trust_remote_code: bool = typer.Option(False, help="Allow the model repository's own code to run."),
    cache_dir: Optional[Path] = typer.Option(None, help="Call-cache folder (default ~/.cache/biaslens)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the call cache."),
    alpha: Optional[float] = typer.Option(None, help="Significance level [default 0.05]."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="redditbias: a RedditBias checkout (data/<bias_type>/...); without it, phrases come from the bias specifications."),
    split: Optional[str] = typer.Option(None, "--split", help="redditbias: paired files to use, test or valid [default test]."),
    perplexity_column: Optional[str] = typer.Option(None, "--perplexity-column", help="redditbias: evaluate this precomputed column of the paired files (no model), e.g. perplexity."),
    bias_types: Optional[str] = typer.Option(None, "--bias-types", help="redditbias: comma-separated bias types [default all: religion1,religion2,race,gender,orientation]."),
    spec_file: Optional[list[Path]] = typer.Option(None, "--spec-file", help="redditbias: your own bias specification, YAML or JSON (repeatable)."),
    counterfactual_mode: Optional[str] = typer.Option(None, "--counterfactual-mode", help="redditbias: default (word boundaries, case kept) or reference (lowercase substring swap)."),
    outlier_removal: Optional[str] = typer.Option(None, "--outlier-removal", help="redditbias: auto (off for the *_reduced files), on or off."),
    reference_text: Optional[Path] = typer.Option(None, "--reference-text", help="redditbias: text file for LM perplexity [default humanref6k.txt under --data-dir]."),
):
    """Run a bias suite and write a run folder (run.json, Parquet results, metrics.json, report.html)."""
    _guard(_run, **locals())


def _run(**a):
    from biaslens.api import run as api_run
    from biaslens.config import RunConfig

    overrides: dict = {"suite": a["suite"]}
    m: dict = {}
    for key in ("device", "dtype", "batch_size", "start_token"):
        if a[key] is not None:
            m[key] = a[key]
    if a["model"] is not None:
        m["name"] = a["model"]
    if a["no_start_token"]:
        m["score_first_token"] = False
    if a["trust_remote_code"]:
        m["trust_remote_code"] = True
    if m:
        overrides["model"] = m
    for key in ("out", "sample", "seed", "dataset_dir", "cache_dir", "alpha"):
        if a[key] is not None:
            overrides[key] = a[key]
    if a["full"]:
        overrides["full"] = True
    if a["no_cache"]:
        overrides["use_cache"] = False
    if a["axes"]:
        overrides["axes"] = [s.strip() for s in a["axes"].split(",") if s.strip()]
    if a["templates"]:
        overrides["templates"] = [s.strip() for s in a["templates"].split("|") if s.strip()]
    if a["extra_dataset_file"]:
        overrides["extra_dataset_files"] = list(a["extra_dataset_file"])
    rb: dict = {k: a[k] for k in ("data_dir", "split", "perplexity_column", "counterfactual_mode", "outlier_removal",
                                  "reference_text") if a[k] is not None}
    if a["bias_types"]:
        rb["bias_types"] = [s.strip() for s in a["bias_types"].split(",") if s.strip()]
    if a["spec_file"]:
        rb["spec_files"] = list(a["spec_file"])
    if rb:
        overrides["redditbias"] = rb
    cfg = RunConfig.from_yaml(a["config"], **overrides) if a["config"] else RunConfig.validated(overrides, source="flags")
    api_run(cfg, console=console)


@app.command()
def suites():
    """List the available suites."""
    from biaslens.suites import PLANNED, SUITES

    for name in SUITES:
        typer.echo(name)
    console.print(f"[dim]planned: {', '.join(PLANNED)}[/dim]")


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A finished run folder.")):
    """Recompute the metrics and re-render report.html from a run folder's stored results (no model calls)."""
    _guard(_report, run_dir)


def _report(run_dir: Path):
    from biaslens.api import rerender

    path = rerender(run_dir, console=console)
    typer.echo(str(path))


@dataset_app.command("holistic")
def dataset_holistic(
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .csv or .parquet."),
    dataset_dir: Optional[Path] = typer.Option(None, help="Folder in the official HolisticBias format (default: built-in v1.0)."),
    extra_dataset_file: Optional[list[Path]] = typer.Option(None, "--extra-dataset-file", help="Your own JSON files, merged in (repeatable)."),
    variants: bool = typer.Option(False, "--variants", help="Apply the paper's four stylistic variations (seeded)."),
    seed: int = typer.Option(0, help="Seed for --variants."),
    fix_articles: bool = typer.Option(False, "--fix-articles", help="Correct 'a 80-year-old' -> 'an 80-year-old' etc. (deviates from the reference)."),
):
    """Write the HolisticBias sentence table."""
    _guard(_dataset_holistic, out, dataset_dir, extra_dataset_file, variants, seed, fix_articles)


def _dataset_holistic(out, dataset_dir, extra, variants, seed, fix_articles):
    from biaslens.config import ConfigError
    from biaslens.datasets.holistic import (add_variants, build_sentence_table, build_sentences,
                                            load_holistic_dataset, write_table)

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
    console.print(f"wrote {n:,} sentences ({n_unique:,} unique texts) to {out}")


@cache_app.command("info")
def cache_info(cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default ~/.cache/biaslens).")):
    """Where the cache is and how many calls it holds."""
    from biaslens.engine.cache import CallCache
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if not path.exists():
        typer.echo(f"{path}: empty (no cache yet)")
        return
    c = CallCache(path)
    typer.echo(f"{path}: {len(c):,} cached calls, {path.stat().st_size / 1e6:.1f} MB")


@cache_app.command("clear")
def cache_clear(cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default ~/.cache/biaslens).")):
    """Delete every cached call."""
    from biaslens.engine.cache import CallCache
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if path.exists():
        CallCache(path).clear()
    typer.echo(f"cleared {path}")


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
