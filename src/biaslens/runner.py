"""The one runner: every suite runs, writes and re-renders through here.

``run_suite(config)`` opens the run folder, gives the suite a :class:`RunContext`
(model calls with cache and progress, timers, the run record), writes the tables the
suite collected, then ``finish``: analyse, write the derived tables, ``metrics.json``
and ``report.html``. ``rerender_run(dir)`` reads the stored tables back and runs the
same ``finish`` with no model.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biaslens.config import ConfigError, RunConfig
from biaslens.engine.calls import model_calls_from_config, model_record
from biaslens.models.base import ModelError
from biaslens.report.html import with_headline
from biaslens.results import RunResult, SuiteResult
from biaslens.suites.base import Suite

if TYPE_CHECKING:
    from rich.console import Console

    from biaslens.engine.calls import ModelCalls
    from biaslens.engine.scoring import ScoringStats
    from biaslens.models.base import Backend
    from biaslens.report.run_folder import RunFolder


def default_out(config: RunConfig) -> Path:
    """``runs/<suite>-<model>-<time>`` when the user gave no --out."""
    model = Path(config.model.name).name.replace("/", "_") or "model"
    return Path("runs") / f"{config.suite}-{model}-{time.strftime('%Y%m%d-%H%M%S')}"


def out_dir(config: RunConfig) -> Path:
    return Path(config.out) if config.out else default_out(config)


def calls_record(stats: ScoringStats, calls: ModelCalls | None) -> dict[str, Any]:
    """Model-call statistics as run.json records them (texts, cache hits, speed)."""
    cache = calls.cache if calls is not None else None
    return {
        "n_sentences": stats.n_texts, "n_unique": stats.n_unique, **stats.cost(), "batches": stats.batches,
        "sentences_per_second": None if math.isnan(stats.texts_per_second) else round(stats.texts_per_second, 2),
        "corrupt_cache_records": stats.corrupt_records,
        "cache": str(cache.path) if cache is not None else None,
    }


@dataclass
class AnalysisContext:
    """What ``analyse``, ``render`` and ``summary`` may read (the protocol
    :class:`biaslens.suites.base.AnalysisContext`): the configuration, the run record
    (run.json as written so far: model identity, scoring stats) and the folder. The same in a
    run and in a re-render."""

    config: RunConfig
    record: dict[str, Any]
    out: Path
    console: Console | None = None
    timings: dict[str, float] = field(default_factory=dict)

    options: Any = None  # the suite's own options (Suite.options), validated

    @property
    def model_name(self) -> str | None:
        return (self.record.get("model") or {}).get("name")


class RunContext:
    """What a suite's ``collect`` gets from the runner (the protocol
    :class:`biaslens.suites.base.RunContext`)."""

    def __init__(self, suite: Suite, config: RunConfig, folder: RunFolder, console, backend: Backend | None = None):
        self.suite = suite
        self.config = config
        #: the suite's own options (``Suite.options``), validated; None for the built-in suites
        self.options = suite.parse_options(config)
        self.folder = folder
        self.console = console
        self._backend = backend
        self._calls: ModelCalls | None = None
        self._opened: list[ModelCalls] = []

    @property
    def record(self) -> dict[str, Any]:
        """run.json's suite-specific part (written with the run's status)."""
        return self.folder.record

    @property
    def out(self) -> Path:
        return self.folder.path

    def timer(self, name: str):
        """Time a phase into run.json's ``timings``."""
        return self.folder.timer(name)

    def progress(self, description: str, total: int):
        """A progress reporter (bar on a terminal, log lines otherwise, projected finish)."""
        from biaslens.engine.progress import progress_reporter

        return progress_reporter(self.console, description, total=total)

    @property
    def calls(self) -> ModelCalls:
        """The run's model (``config.model``), loaded on first use; its identity goes into run.json."""
        if self._calls is None:
            try:
                with self.timer("model_load"):
                    self._calls = model_calls_from_config(self.config, self._backend)
            except ModelError as e:
                e.at_model_load = True  # the bias card stops at once: every other method would fail the same way
                raise
            self.record["model"] = model_record(self._calls)
            from biaslens.machine import busy_note

            # here, not at start: the model calls are the long phase, and the load is read as they begin
            if note := busy_note():
                self.console.print(f"[yellow]note:[/yellow] {note}", soft_wrap=True)
        return self._calls

    @property
    def given_backend(self):
        """What the caller passed as ``backend=`` (a loaded Backend, a mapping name -> Backend
        for suites that compare several models, or None)."""
        return self._backend

    def write_text(self, name: str, text: str) -> None:
        """An extra file of the run folder (e.g. a prompt list for the user to read)."""
        self.folder.write_text(name, text)

    @property
    def model_loaded(self) -> bool:
        return self._calls is not None

    @contextlib.contextmanager
    def other_model(self, config: RunConfig, backend: Backend | None = None, *, timer: str | None = None):
        """Another model for the length of a ``with`` block (several models side by side):
        same cache policy, closed at the end; ``timer`` names its load time in run.json."""
        with self.timer(timer) if timer else contextlib.nullcontext():
            calls = model_calls_from_config(config, backend)
        try:
            yield calls
        finally:
            calls.close()
            if backend is None:
                calls.backend.close()

    def record_size(self, unit: str, requested: int | None, actual: int) -> None:
        """run.json's ``size``: what was asked for and what actually ran. A stratified sample
        keeps whole (axis, template, descriptor) groups, so ``--sample 6000`` scores 5,460
        sentences; ``requested`` is None for ``--full``."""
        self.record["size"] = {"unit": unit, "requested": requested, "actual": int(actual),
                               "selection": "full" if requested is None else "stratified sample, whole groups"}

    def record_calls(self, key: str = "scoring", stats: ScoringStats | None = None) -> None:
        """Write the model-call statistics into run.json under ``key``."""
        calls = self._calls
        self.record[key] = calls_record(stats if stats is not None else calls.stats, calls)

    def close(self) -> None:
        if self._calls is not None:
            self._calls.close()


def _analysis_context(suite: Suite, config: RunConfig, folder: RunFolder, console) -> AnalysisContext:
    return AnalysisContext(config=config, record=folder.record, out=folder.path, console=console,
                           timings=folder.timings, options=suite.parse_options(config))


def finish(suite: Suite, folder: RunFolder, tables: dict[str, Any], actx: AnalysisContext) -> SuiteResult:
    """Analyse the stored tables, write the derived tables, metrics.json and report.html
    (a run and a re-render both end here)."""
    with folder.timer("metrics"):
        result = suite.analyse(tables, actx)
        _judged(suite, result)
    for name, table in result.tables.items():
        folder.write_table(name, table)
    folder.write_json("metrics.json", result.metrics_json(suite.name, actx.model_name))
    with folder.timer("report"):
        folder.write_text("report.html", with_headline(suite.render(result, tables, actx), result.verdict))
    return result


def _judged(suite: Suite, result: SuiteResult) -> None:
    """The entries that rest on a judge carry it and its skill (``Suite.judged_entries``), and the
    verdict says "judge without measured skill" where a number it states rests on one."""
    from biaslens.scorers.card import mark_judged_entries, no_skill_caveats

    cards = result.metrics.get("scorer_cards") or []
    mark_judged_entries(result.entries, cards, suite.judged_entries)
    flagged = [e for e in result.entries if e.judge_has_skill is False]
    caveats = no_skill_caveats(flagged, [c for c in cards if any(e.judge == c.get("used") for e in flagged)])
    if result.verdict and caveats:
        result.verdict = result.verdict.rstrip(". ") + "; " + "; ".join(caveats)
        if "verdict" in result.metrics:  # suites that keep their sentence in metrics too say the same
            result.metrics["verdict"] = result.verdict


def _print_footer(console, results_console, result: SuiteResult, out: Path) -> None:
    """Scorer warnings (with the progress), then "judge without measured skill" beside the numbers
    and the report path (with the results), under every suite's summary."""
    from rich.markup import escape

    from biaslens.scorers.card import card_warnings, no_skill_caveats

    cards = result.metrics.get("scorer_cards") or []
    for text in card_warnings(cards):
        console.print(f"[bold red]warning:[/bold red] {escape(text)}")
    # with the numbers themselves: a reader of standard output alone sees which ones to discount
    for text in no_skill_caveats(result.entries, cards, with_values=True):
        results_console.print(f"[bold]{escape(text)}[/bold]", soft_wrap=True)
    # soft_wrap: never break the path across lines (CI logs are 80 columns); escape: "[" in paths
    results_console.print(f"report: [bold]{escape(str(out / 'report.html'))}[/bold]", soft_wrap=True)


def run_suite(config: RunConfig, *, backend: Backend | None = None, console=None, results_console=None) -> RunResult:
    """Run one suite end to end and write its run folder. ``console`` gets progress and
    warnings, ``results_console`` (default ``console``) the summary and the report path."""
    from biaslens.environment import default_console
    from biaslens.report.run_folder import RunFolder
    from biaslens.suites import get_suite

    suite = get_suite(config.suite)
    suite.parse_options(config)  # a mistake in the options fails before a run folder exists
    console = console or default_console()
    out = out_dir(config)
    existed = out.exists()
    new_parents = [p for p in out.parents if not p.exists()]  # e.g. runs/: removed with a litter folder
    ctx: RunContext | None = None
    try:
        with RunFolder(out, suite=suite.name, config=config.model_dump(mode="json")) as folder:
            ctx = RunContext(suite, config, folder, console, backend)
            try:
                tables = suite.collect(ctx)
            finally:
                ctx.close()
            result = _write_and_report(suite, config, folder, console, tables, results_console or console)
    except (ValueError, ModelError) as e:
        if not existed and _input_mistake(e, ctx):
            # nothing was computed: a run folder holding only the error would just be litter
            shutil.rmtree(out, ignore_errors=True)
            for parent in new_parents:  # deepest first; only if still empty
                with contextlib.suppress(OSError):
                    parent.rmdir()
        raise
    model = folder.record.get("model")
    return RunResult(out=folder.path, metrics=result.metrics_json(suite.name, model.get("name") if isinstance(
                         model, dict) else None),
                     tables={**tables, **result.tables}, analysis=result.analysis, stats=folder.record,
                     main_table=suite.main_table)


def _input_mistake(error: BaseException, ctx: RunContext | None) -> bool:
    """A mistake in the input (configuration, dataset, generations file, a model that cannot be
    loaded) found before any model call was computed."""
    computed = ctx is not None and ctx.model_loaded and ctx.calls.stats.computed > 0
    if isinstance(error, ModelError):
        return ctx is None or not ctx.model_loaded
    return not computed


def _write_and_report(suite: Suite, config: RunConfig, folder: RunFolder, console, tables: dict,
                      results_console) -> SuiteResult:
    """The stored tables, then analysis, derived tables, metrics.json, report and summary."""
    missing = [n for n in _required(suite) if n not in tables]
    if missing:  # a suite bug, not a user error: say which table
        raise RuntimeError(f"suite {suite.name} collected no table {missing[0]!r}")
    for name, table in tables.items():
        folder.write_table(name, table)
    actx = _analysis_context(suite, config, folder, console)
    from biaslens.paths import NoSpaceLeft

    try:
        result = finish(suite, folder, tables, actx)
    except (OSError, NoSpaceLeft):
        raise  # writing failed, not the analysis: the error already says what to do
    except Exception as e:
        # the model calls are done and their tables saved: never lose them to an analysis detail
        raise AnalysisError(f"the analysis failed ({type(e).__name__}: {e}); the collected tables are saved in "
                            f"{folder.path}: fix the cause and run `biaslens report {folder.path}` to redo the "
                            "analysis without model calls") from e
    import dataclasses

    suite.summary(result, dataclasses.replace(actx, console=results_console))  # the summary is a result
    _print_footer(console, results_console, result, folder.path)
    return result


class AnalysisError(RuntimeError):
    """The analysis of collected tables failed; they are saved (not a ValueError: the run folder
    must not be cleaned up as an input mistake); run.json says "analysis_failed"."""

    tables_saved = True
    kind = "analysis"


def _required(suite: Suite) -> list[str]:
    return [n for n in suite.stored_tables if not n.endswith("?")]


def read_stored_table(run_dir: Path, name: str):
    """``<name>.parquet`` of a run folder, or an error naming the missing file."""
    import pandas as pd

    path = Path(run_dir) / f"{name}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: re-rendering needs the tables the run wrote; "
                                "re-run the suite to rebuild the folder")
    return pd.read_parquet(path)


def stored_config(run_dir: Path, record: dict) -> RunConfig:
    """The RunConfig a finished run recorded in its run.json."""
    return RunConfig.validated(record.get("config") or {}, source=f"{Path(run_dir) / 'run.json'} (config)")


def rerender_run(run_dir: Path, record: dict[str, Any], suite: Suite, *, console=None) -> Path:
    """metrics.json, the derived tables and report.html again from a finished run's
    stored tables (no model calls). run.json is left as the run wrote it; ``record``
    (all of run.json) is what analysis and report read."""
    from biaslens.report.run_folder import RunFolder

    run_dir = Path(run_dir)
    tables = {}
    for name in suite.stored_tables:
        optional = name.endswith("?")
        name = name.rstrip("?")
        if optional and not (run_dir / f"{name}.parquet").is_file():
            continue
        tables[name] = read_stored_table(run_dir, name)
    folder = RunFolder(run_dir, suite=str(record.get("suite")), config=record.get("config") or {})
    folder.record = record
    config = stored_config(run_dir, record)
    actx = AnalysisContext(config=config, record=record, out=run_dir, console=console, timings=folder.timings,
                           options=suite.parse_options(config))
    finish(suite, folder, tables, actx)
    if record.get("status") == "analysis_failed":  # the analysis is now done: the run is complete
        from biaslens.report.run_folder import write_json

        files = list(dict.fromkeys([*(record.get("files") or []), *folder.files]))
        write_json(run_dir / "run.json", {**record, "status": "complete", "error": None, "error_kind": None, "files": files})
    return run_dir / "report.html"


__all__ = ["AnalysisContext", "ConfigError", "RunContext", "run_suite", "rerender_run", "finish", "out_dir"]
