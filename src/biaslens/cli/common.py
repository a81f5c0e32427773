"""What every CLI command shares: the console, and turning known errors into one clear
line (exit code 2) instead of a traceback. Imported by :mod:`biaslens.cli.app` and by each
subcommand module, so that no subcommand imports the app that registers it."""

from __future__ import annotations

import os

import typer

from biaslens.environment import default_console

console = default_console()

# options several commands share: declared once (typer reads them, never changes them)
_TABLE_FORMAT_HELP = ("parquet, csv or hf (a Hugging Face `datasets` folder: save_to_disk, typed features, dataset card) "
                     "[default from --out's extension, hf for a folder name].")
#: --out of a table-writing command
TABLE_OUT = typer.Option(..., "--out", "-o", help="Output: a .parquet/.csv file or a folder (--format hf).")
#: --format of a table-writing command
TABLE_FORMAT = typer.Option(None, "--format", help=_TABLE_FORMAT_HELP)
#: --cache-dir of the cache commands
CACHE_DIR = typer.Option(None, help="Cache folder (default ~/.cache/biaslens).")


def _known_errors() -> tuple[type[BaseException], ...]:
    from biaslens.api import RunNotComplete
    from biaslens.config import ConfigError
    from biaslens.datasets.generations import GenerationsFileError
    from biaslens.errors import DatasetError
    from biaslens.models.base import ModelError
    from biaslens.paths import NoSpaceLeft
    from biaslens.report.run_folder import RunFolderBusy
    from biaslens.suites import UnknownSuite

    return (ConfigError, DatasetError, GenerationsFileError, ModelError, RunFolderBusy, RunNotComplete, UnknownSuite,
            FileNotFoundError, NoSpaceLeft)


def fail(e: BaseException | str, code: int = 2) -> None:
    """Print one "error:" line (escaped: never read as markup) and exit with ``code``."""
    from rich.markup import escape

    # escaped: messages quote file contents and server answers, whose "[...]" is not markup
    console.print(f"[bold red]error:[/bold red] {escape(str(e))}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guard(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        console.print("interrupted: finished batches are cached; run the same command again to resume")
        raise typer.Exit(130) from None
    except _known_errors() as e:
        fail(e)
    except Exception as e:  # noqa: BLE001 - last line of defence, still one clear line
        if os.environ.get("BIASLENS_DEBUG"):
            raise
        fail(f"{type(e).__name__}: {e} (set BIASLENS_DEBUG=1 for the traceback)", code=1)
