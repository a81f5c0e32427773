"""Plumbing every suite shares: the run folder's default name, the call cache and the
model, all from a RunConfig."""

from __future__ import annotations

import time
from pathlib import Path

from biaslens.config import RunConfig
from biaslens.engine.calls import executor_for, load_backend, open_cache  # noqa: F401 - open_cache: suites import it here
from biaslens.models import Backend


def default_out(config: RunConfig) -> Path:
    """``runs/<suite>-<model>-<time>`` when the user gave no --out."""
    model = Path(config.model.name).name.replace("/", "_") or "model"
    return Path("runs") / f"{config.suite}-{model}-{time.strftime('%Y%m%d-%H%M%S')}"


def out_dir(config: RunConfig) -> Path:
    return Path(config.out) if config.out else default_out(config)


def backend_from_config(config: RunConfig) -> Backend:
    """The model with its executor attached (``backend.executor``), for suites that do not
    hold a :class:`~biaslens.engine.calls.ModelCalls` yet (built by
    :func:`biaslens.engine.calls.model_calls_from_config`)."""
    executor = executor_for(config)  # connect first: a bad address fails before a model loads
    backend = load_backend(config, executor)
    backend.executor = executor  # None: the engine runs batches in this process
    return backend


def model_record(backend: Backend) -> dict:
    """The model identity as run.json records it."""
    i = backend.info
    record = {"backend": i.backend, "name": i.name, "kind": i.kind, "weights_hash": i.weights_hash,
              "dtype": i.dtype, "start_token": i.start_token, **i.extra}
    if getattr(backend, "executor", None) is not None:
        record["executor"] = backend.executor.describe()  # where the batches ran (ray cluster, workers)
    return record


def print_scorer_warnings(console, metrics: dict) -> None:
    """The scorer cards' warnings (a classifier biased against identity words) at the end of a run."""
    from rich.markup import escape

    for card in metrics.get("scorer_cards") or []:
        if card.get("warning"):
            console.print(f"[bold red]warning:[/bold red] {escape(card['warning'])}")


# -- re-rendering a finished run folder (`biaslens report DIR`) ---------------------------


def stored_config(run_dir: Path, record: dict) -> RunConfig:
    """The RunConfig a finished run recorded in its run.json."""
    return RunConfig.validated(record.get("config") or {}, source=f"{Path(run_dir) / 'run.json'} (config)")


def read_stored_table(run_dir: Path, name: str):
    """``<name>.parquet`` of a run folder, or an error naming the missing file."""
    import pandas as pd

    path = Path(run_dir) / f"{name}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: re-rendering needs the tables the run wrote; "
                                "re-run the suite to rebuild the folder")
    return pd.read_parquet(path)


def rerender_folder(run_dir: Path, record: dict):
    """The run's own writers (atomic tables, JSON, text) over a finished folder; run.json is left
    as the run wrote it, and ``record`` (all of run.json) is what the report reads."""
    from biaslens.report.run_folder import RunFolder

    folder = RunFolder(run_dir, suite=str(record.get("suite")), config=record.get("config") or {})
    folder.record = record
    return folder
