"""Command-line interface. Every command parses flags into the same objects the
Python API takes (``RunConfig``), calls the API, and turns known errors into one
clear line (exit code 2) instead of a traceback."""

from __future__ import annotations

import inspect
import logging
import os
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from biaslens.cli.check_backend import check_backend_command
from biaslens.cli.common import CACHE_DIR, console, fail, guard
from biaslens.cli.compare import compare as compare_command
from biaslens.cli.options import GroupedOptions, generated_command, load_config
from biaslens.cli.output import JSON_HELP, command_output, run_json
from biaslens.config import RunConfig
from biaslens.options import flag_specs


class _ReadableHelp(TyperGroup):
    """The top command group. Built with every command and subcommand under it, it makes their
    ``--help`` read at 80 columns: a command list shows each command's first sentence in full
    (wrapped, not cut at "..."), and repeatable options show their element's metavar (``<path>``)
    and repeatable arguments none, instead of ``<list[Path]>``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _readable_help(self)


def _first_sentence(text: str) -> str:
    first = " ".join(text.strip().split("\n\n")[0].split())
    end = first.find(". ")
    return first if end < 0 else first[: end + 1]


def _readable_help(group) -> None:
    for cmd in (getattr(group, "commands", None) or {}).values():
        if not cmd.short_help and cmd.help:
            cmd.short_help = _first_sentence(cmd.help)
        for param in cmd.params:
            desc = getattr(param, "type_descriptor", None)
            if desc is None or not desc.is_list:
                continue
            if param.param_type_name == "option" and param.metavar is None:
                element = param.bare_type().removeprefix("list[").removesuffix("]")
                param.metavar = f"<{element.lower()}>"  # the style of the other options: <path>, <text>
            elif param.param_type_name == "argument":
                param.display_type_rich = lambda ctx: None  # "runs..." says it repeats; no "<list[str]>"
        _readable_help(cmd)


app = typer.Typer(rich_markup_mode=None, cls=_ReadableHelp,
    name="biaslens",
    help=f"Measure social bias in language models; methods: {', '.join(__import__('biaslens.registry', fromlist=['x']).SUITES)}.\n\n"
         "With no arguments, `biaslens run` scores a stratified sample of HolisticBias on the embedded "
         "model (SmolLM2-135M, offline) and writes a Likelihood Bias report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dataset_app = typer.Typer(rich_markup_mode=None, help="Build and export datasets.", no_args_is_help=True)
cache_app = typer.Typer(rich_markup_mode=None, help="Inspect or clear the model-call cache.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
__import__("biaslens.cli.export", fromlist=["x"]).register_shipped_tables(dataset_app)
app.add_typer(cache_app, name="cache")
# each method's own commands (its training, its dataset tables), from the registry
for _target in __import__("biaslens.registry", fromlist=["x"]).COMMANDS.values():
    _module, _, _function = _target.partition(":")
    getattr(__import__(_module, fromlist=["x"]), _function)(app, dataset_app)
app.command("compare")(compare_command)
app.command("check-backend")(check_backend_command)
app.command("card")(__import__("biaslens.cli.card", fromlist=["card"]).card)
app.command("leaderboard")(__import__("biaslens.cli.leaderboard", fromlist=["leaderboard"]).leaderboard)
app.add_typer(__import__("biaslens.cli.export", fromlist=["export_app"]).export_app, name="export")

@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug details (cache keys, batches).")):
    # The terminal gets warnings (or everything with -v); run.log gets INFO from the run folder.
    handler = logging.StreamHandler()
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler])
    from biaslens.environment import apply_environment_policy

    apply_environment_policy()  # the API applies it too (a notebook behaves the same)
    if not verbose:
        quiet_transformers()


def quiet_transformers() -> None:
    """transformers' errors only and no progress bars, without importing it (2 s and 20 modules
    that `run --help`, `report`, `suites` and `compare` never need): its logging and the Hub's
    bars read these variables when it is first imported; an already imported one is told now."""
    import sys

    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    else:
        os.environ["TRANSFORMERS_VERBOSITY"] = "error"
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"


def run(**a):
    """Run a bias suite and write a run folder (run.json, Parquet results, metrics.json, report.html)."""
    with command_output(a.pop("json_output")) as output:
        output.emit(run_json(guard(_run, {**a, "results_console": output.results})))


def _run(a: dict):
    from biaslens.api import run as api_run
    from biaslens.config import RunConfig

    base: dict = {"suite": a["suite"]} if a["suite"] else {}
    lm_eval_tokenizer = a.get(LM_EVAL_TOKENIZER_FLAG)
    if lm_eval_tokenizer and a.get(MODEL_FLAG) is None:
        # --from-lm-eval: the run is named after, and records, the model lm-eval scored
        base["model"] = {"name": lm_eval_tokenizer}
    cfg = load_config(RunConfig, RUN_FLAGS, a, base=base or None)
    _flags_of_other_suites(cfg.suite, a)
    if a.get(LM_EVAL_SAMPLES_FLAG) is not None and cfg.suite not in ("holistic-likelihood", "redditbias", "crows-pairs"):
        from biaslens.config import ConfigError

        raise ConfigError(f"--from-lm-eval/--tokenizer: for holistic-likelihood, redditbias and crows-pairs, not {cfg.suite}")
    return api_run(cfg, console=console, results_console=a["results_console"])


def _flags_of_other_suites(suite: str, a: dict) -> None:
    """A flag of another suite's own section (``run winogender --winobias-types 1``) is an error
    naming the suite it belongs to, not a setting quietly ignored."""
    from biaslens.config import ConfigError, suite_sections
    from biaslens.options import overrides_from_flags
    from biaslens.registry import SUITES

    # a section named after its suite belongs to that suite alone (the shared generation and
    # likelihood sections serve several)
    owned = {sec: name for name in SUITES if (sec := name.replace("-", "_")) in suite_sections()}
    for spec in RUN_FLAGS:
        if not overrides_from_flags([spec], a):
            continue  # not given
        owners = {owned.get(path[0]) for path in spec.paths}
        if None not in owners and suite not in owners:
            raise ConfigError(f"{spec.flags[0]}: an option of {' and '.join(sorted(owners))}, not of {suite} "  # type: ignore[arg-type]
                              f"(e.g. biaslens run {sorted(owners)[0]} {spec.flags[0]} ...)")  # type: ignore[type-var]


#: the flags of `run`: one per field of RunConfig and of every suite's options (biaslens.options)
RUN_FLAGS = flag_specs(RunConfig)
MODEL_FLAG = next(s.name for s in RUN_FLAGS if "--model" in s.flags)
LM_EVAL_TOKENIZER_FLAG = next(s.name for s in RUN_FLAGS if "--tokenizer" in s.flags)
LM_EVAL_SAMPLES_FLAG = next(s.name for s in RUN_FLAGS if "--from-lm-eval" in s.flags)
app.command(cls=GroupedOptions)(generated_command(run, [
    inspect.Parameter("suite", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str], default=typer.Argument(
        None, help="Suite to run (see `biaslens suites`) [default holistic-likelihood, or the config file's suite].")),
    # CLI-only options (no RunConfig field) go here, beside the generated ones
    inspect.Parameter("json_output", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                      default=typer.Option(False, "--json", help=JSON_HELP)),
], RUN_FLAGS, "RunConfig"))


@app.command()
def suites():
    """List the available suites."""
    from biaslens.suites import PLANNED, SUITES

    for name in SUITES:
        typer.echo(name)
    if PLANNED:
        console.print(f"[dim]planned: {', '.join(PLANNED)}[/dim]")


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A finished run folder or bias card folder.")):
    """Recompute the metrics and re-render report.html from a run folder's stored results (no model calls); a bias card folder re-renders each method and card.html."""
    guard(_report, run_dir)


def _report(run_dir: Path):
    from biaslens.api import rerender
    from biaslens.bias_card import is_card, rerender_card
    from biaslens.config import ConfigError

    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such folder")
    path = rerender_card(run_dir, console=console) if is_card(run_dir) else rerender(run_dir, console=console)
    typer.echo(str(path))


@cache_app.command("info")
def cache_info(cache_dir: Optional[Path] = CACHE_DIR):
    """Where the cache is and how many calls it holds."""
    from biaslens.engine.cache import CallCache
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if not path.exists():
        typer.echo(f"{path}: empty (no cache yet)")
        return
    c = CallCache(path)
    typer.echo(f"{path}: {len(c):,} cached calls, {path.stat().st_size / 1e6:.1f} MB")


@cache_app.command("check")
def cache_check(cache_dir: Optional[Path] = CACHE_DIR):
    """Run SQLite's integrity check on the cache (read-only); exit 1 if it is damaged."""
    guard(_cache_check, cache_dir)


def _cache_check(cache_dir: Optional[Path]) -> None:
    from biaslens.engine.cache import check_integrity
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if not path.exists():
        typer.echo(f"{path}: empty (no cache yet)")
        return
    problems = check_integrity(path)
    if not problems:
        typer.echo(f"{path}: ok")
        return
    lines = [line for p in problems for line in p.splitlines() if not line.startswith("***")] or problems
    fail(f"{path} is damaged ({lines[0]}; {len(lines)} finding(s) in all): the next run moves it aside and "
          "computes again what it held; or delete it", code=1)


@cache_app.command("clear")
def cache_clear(cache_dir: Optional[Path] = CACHE_DIR):
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
