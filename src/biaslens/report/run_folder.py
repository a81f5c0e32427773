"""The run folder: every file a run writes, written so that a reader never mistakes
a half-written run for a finished one.

Each file is written to a temporary name and renamed into place. ``run.json``
says ``"status": "running"`` until the very end, when it is rewritten with
``"complete"`` (or ``"failed"`` and the error). A lock file keeps two processes
from writing the same folder at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens import __version__
from biaslens.fileio import atomic_path, write_atomic, write_json  # noqa: F401  (write_json: re-exported)

RUN_FORMAT_VERSION = 1
CSV_MAX_ROWS = 50_000
_PACKAGES = ("biaslens", "torch", "transformers", "numpy", "scipy", "pandas", "pyarrow", "tokenizers")


class RunFolderBusy(RuntimeError):
    """Another process is writing this run folder."""

    kind = "busy"


def package_versions() -> dict[str, str]:
    from biaslens.machine import installed_versions

    return {"python": platform.python_version(), **installed_versions(_PACKAGES)}


def _platform_facts() -> dict:
    from biaslens.machine import cpu_model_and_flags

    model, flags = cpu_model_and_flags()
    return {"machine": platform.machine(), "system": platform.system(), "cpus": os.cpu_count(), "cpu_model": model,
            "cpu_flags": list(flags)}


def _peak_rss_mb() -> float | None:
    """This process's peak resident memory so far (what a run needed), in MB."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)  # bytes on macOS, KB on Linux


def write_text(path: Path, text: str) -> None:
    """A text file, atomically: written under a temporary name, then renamed into place."""
    write_atomic(path, text)


class _LogFile(logging.FileHandler):
    def handleError(self, record):  # noqa: N802 - logging's name
        # run.log on a full disk: the write that failed reports it once; no logging traceback
        pass


class RunFolder:
    """Owns one run's output folder for the length of a ``with`` block."""

    def __init__(self, path: str | Path, *, suite: str, config: dict[str, Any]):
        self.path = Path(path)
        self.suite = suite
        self.config = config
        self.started = time.time()
        self.timings: dict[str, float] = {}
        self.record: dict[str, Any] = {}
        self.files: list[str] = []
        self._lock = None
        self._log_handler: logging.Handler | None = None

    # -- lifecycle -------------------------------------------------------
    def __enter__(self) -> RunFolder:
        from filelock import FileLock, Timeout

        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.path / ".biaslens.lock"))
        try:
            self._lock.acquire(timeout=0.5)
        except Timeout:
            raise RunFolderBusy(
                f"another biaslens process is writing {self.path}; wait for it to finish or choose another --out"
            ) from None
        try:
            self._remove_previous_outputs()
            self._log_handler = _LogFile(self.path / "run.log", mode="a", encoding="utf-8")
            self._log_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            self._log_handler.setLevel(logging.INFO)
            root = logging.getLogger("biaslens")
            root.addHandler(self._log_handler)
            if root.level == logging.NOTSET or root.level > logging.INFO:
                root.setLevel(logging.INFO)
            self._write_run_json("running")
        except BaseException:
            # e.g. a full disk: an older run.json must not keep saying "complete" over removed outputs
            with contextlib.suppress(OSError):
                (self.path / "run.json").unlink()
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc is None:
                self._write_run_json("complete")
            else:
                try:
                    # tables saved, analysis failed: `biaslens report` may redo the analysis
                    status = "analysis_failed" if getattr(exc, "tables_saved", False) else "failed"
                    self._write_run_json(status, error=exc)
                except (OSError, RuntimeError):  # e.g. the disk is full: run.json keeps "running"
                    pass  # (never "complete"); the run's own error is the one to report
        finally:
            self._release()

    def _release(self) -> None:
        if self._log_handler is not None:
            logging.getLogger("biaslens").removeHandler(self._log_handler)
            self._log_handler.close()
            self._log_handler = None
        if self._lock is not None:
            release_lock(self._lock)
            self._lock = None

    def _remove_previous_outputs(self) -> None:
        """Delete the result files an earlier run listed in this folder's run.json, so a
        re-run that fails never leaves the old metrics/report next to its own run.json."""
        try:
            previous = json.loads((self.path / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        names = previous.get("files") if isinstance(previous, dict) else None
        for name in names if isinstance(names, list) else []:
            if isinstance(name, str) and name and Path(name).name == name and name not in ("run.json", "run.log"):
                try:
                    (self.path / name).unlink()
                except OSError:
                    pass

    def _write_run_json(self, status: str, error: BaseException | None = None) -> None:
        from biaslens.errors import error_kind, error_message

        data = {
            "format_version": RUN_FORMAT_VERSION,
            "biaslens_version": __version__,
            "suite": self.suite,
            "status": status,
            # the message the terminal showed, and what kind of failure it was (no class names)
            "error": error_message(error) if error is not None else None,
            "error_kind": error_kind(error) if error is not None else None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started)),
            "elapsed_seconds": round(time.time() - self.started, 3),
            "config": self.config,
            "versions": package_versions(),
            # the CPU model and flags: a speed in this record names the machine it was measured on
            "platform": {**_platform_facts(), "argv": sys.argv[1:]},
            "timings": self.timings,
            "peak_rss_mb": _peak_rss_mb(),
            "files": self.files,
            **self.record,
        }
        write_json(self.path / "run.json", data)

    # -- writers ---------------------------------------------------------
    def timer(self, name: str):
        folder = self

        class _T:
            def __enter__(self_inner):
                self_inner.t = time.perf_counter()

            def __exit__(self_inner, *a):
                folder.timings[name] = round(time.perf_counter() - self_inner.t, 3)

        return _T()

    def write_table(self, name: str, df: pd.DataFrame, *, csv: bool | None = None) -> None:
        """Parquet always; CSV too when the table is small (or asked for)."""
        target = self.path / f"{name}.parquet"
        with atomic_path(target) as tmp:
            df.to_parquet(tmp, index=False)
        self._add(target.name)
        if csv or (csv is None and len(df) <= CSV_MAX_ROWS):
            ctarget = self.path / f"{name}.csv"
            with atomic_path(ctarget) as ctmp:
                df.to_csv(ctmp, index=False)
            self._add(ctarget.name)

    def write_json(self, name: str, data: Any) -> None:
        write_json(self.path / name, data)
        self._add(name)

    def write_text(self, name: str, text: str) -> None:
        write_text(self.path / name, text)
        self._add(name)

    def _add(self, name: str) -> None:
        if name not in self.files:
            self.files.append(name)


def release_lock(lock) -> None:
    """Release a run folder's lock and delete its file: a finished folder holds only results.
    (Another process that opened the old file meanwhile was refused within its 0.5 s timeout.)"""
    lock.release()
    with contextlib.suppress(OSError):
        Path(lock.lock_file).unlink()


def read_run(path: str | Path) -> dict[str, Any]:
    """run.json of a run folder, with a clear error when it is missing or unfinished."""
    path = Path(path)
    f = path / "run.json"
    if not f.exists():
        raise FileNotFoundError(f"{path} is not a biaslens run folder (no run.json) nor a bias card folder (no card.json)")
    return json.loads(f.read_text(encoding="utf-8"))
