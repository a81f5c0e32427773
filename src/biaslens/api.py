"""The Python API behind the CLI: ``biaslens.run(config)`` and ``biaslens.rerender(dir)``."""

from __future__ import annotations

from pathlib import Path

from biaslens.config import ConfigError, RunConfig
from biaslens.environment import applies_environment_policy


@applies_environment_policy
def run(config: RunConfig | dict | None = None, *, backend=None, console=None, results_console=None, **overrides):
    """Run a suite. ``config`` may be a RunConfig, a dict of its fields, or None (defaults);
    keyword overrides are applied on top, e.g. ``run(model={"name": "fake"}, sample=600)``.
    ``console`` shows progress and warnings, ``results_console`` the summary and the report
    path (default: ``console``; the CLI gives standard error and standard output).

    Returns a :class:`biaslens.results.RunResult` (``out``, ``metrics``, every table as an attribute).
    """
    from biaslens.suites import get_suite

    if config is None:
        config = {}
    if isinstance(config, RunConfig):
        # exclude_unset keeps which fields the user set (suites with their own defaults read it)
        config = config.model_dump(exclude_unset=True)
    import copy

    from biaslens.config import deep_merge

    # nested sections merge: run(cfg, model={"batch_size": 8}) keeps cfg's model name
    data, extra = copy.deepcopy(dict(config)), copy.deepcopy(overrides)
    for d in (data, extra):
        if isinstance(d.get("model"), str):
            d["model"] = {"name": d["model"]}
    cfg = RunConfig.validated(deep_merge(data, extra), source="run()")
    from biaslens.runner import run_suite

    get_suite(cfg.suite)  # an unknown suite fails here, with suggestions
    return run_suite(cfg, backend=backend, console=console, results_console=results_console)


class RunNotComplete(ValueError):
    """The run folder's run.json does not say "complete" (still running, killed or failed)."""


def rerender(run_dir: str | Path, *, console=None) -> Path:
    """Recompute metrics.json (and the derived tables) and report.html from a finished run
    folder's stored tables, without model calls (the runner's ``rerender_run``)."""
    from filelock import FileLock, Timeout

    from biaslens.report.run_folder import RunFolderBusy, read_run, release_lock
    from biaslens.runner import rerender_run
    from biaslens.suites import SUITES, UnknownSuite, get_suite

    run_dir = Path(run_dir)

    def record_of() -> dict:
        try:
            record = read_run(run_dir)
        except ValueError as e:  # damaged JSON: name the file, no traceback
            raise ConfigError(f"{run_dir / 'run.json'}: not valid JSON ({e})") from None
        if not isinstance(record, dict):
            raise ConfigError(f"{run_dir / 'run.json'}: expected a JSON object, got {type(record).__name__}")
        return record

    record_of()  # a clear error before any lock file is made in a folder that is not a run
    # the same lock a run holds: never rewrite files under a run writing this folder
    lock = FileLock(str(run_dir / ".biaslens.lock"))
    try:
        lock.acquire(timeout=0.5)
    except Timeout:
        raise RunFolderBusy(f"another biaslens process is writing {run_dir}; wait for it to finish") from None
    try:
        record = record_of()
        if record.get("status") not in ("complete", "analysis_failed"):
            raise RunNotComplete(f"{run_dir}: run status is {record.get('status')!r}, not 'complete'; "
                                 "re-run the same command to finish it before re-rendering")
        suite = record.get("suite")
        if not isinstance(suite, str) or suite not in SUITES:
            raise UnknownSuite(f"{run_dir}: re-rendering suite {suite!r} is not supported by this biaslens version")
        return rerender_run(run_dir, record, get_suite(suite), console=console)
    finally:
        release_lock(lock)
