"""Helpers for the fault tests: run the CLI in a subprocess and ``kill -9`` it at a chosen point.

Not a test module (no ``test_`` prefix); tests import it like ``conftest``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


@contextlib.contextmanager
def another_process_holds_the_lock(out: Path, seconds: int = 120):
    """Another process holding a run folder's writer lock (as a running biaslens would)."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from filelock import FileLock; l = FileLock(sys.argv[1]); l.acquire(); "
         f"print('locked', flush=True); time.sleep({int(seconds)})", str(Path(out) / ".biaslens.lock")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


def cli(args: list[str]) -> list[str]:
    """The ``biaslens`` command as a subprocess argv (the running interpreter, no console script)."""
    return [sys.executable, "-m", "biaslens.cli.app", *args]


def cache_rows(db: Path) -> int:
    """Committed records in a call cache (0 while it does not exist or is being created)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def kill_when(argv: list[str], env: dict[str, str], ready: Callable[[], bool], log: Path, *,
              timeout: float = 120, poll: float = 0.02) -> None:
    """Start ``argv``, wait until ``ready()`` is true, then SIGKILL it (a real ``kill -9``: no
    handler, no ``finally`` runs in the child). Fails if the process ends on its own first."""
    with open(log, "wb") as f:  # a file, not a pipe: a full pipe would stall the child
        proc = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f"process ended before it could be killed: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"kill point not reached within {timeout} s: {log.read_text()[-2000:]}"
            time.sleep(poll)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"exit {proc.returncode}: {log.read_text()[-2000:]}"


def sum_counts(obj, key: str) -> int:
    """Sum of every ``key`` field anywhere in a run.json (suites record cache hits and computed
    items per phase or per model)."""
    if isinstance(obj, dict):
        return sum((v if k == key and isinstance(v, int) else sum_counts(v, key)) for k, v in obj.items())
    if isinstance(obj, list):
        return sum(sum_counts(v, key) for v in obj)
    return 0


#: metrics.json fields that hold wall-clock time, not results
VOLATILE = frozenset({"elapsed_seconds", "seconds", "sentences_per_second", "started", "timings",
                      "texts_per_second", "responses_per_second", "peak_rss_mb"})


def stable(obj):
    """A metrics.json without its wall-clock fields."""
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


_SLOW_TRAINING = """
import sys, time
import transformers

delay = float(sys.argv[1])
step = transformers.Trainer.training_step

def slow_step(self, *args, **kwargs):
    time.sleep(delay)  # test only: makes a tiny model's training slow enough to kill mid-run
    return step(self, *args, **kwargs)

transformers.Trainer.training_step = slow_step
from biaslens.cli.app import app
app(sys.argv[2:], prog_name="biaslens")
"""


def slow_training_cli(args: list[str], delay: float) -> list[str]:
    """``biaslens ARGS`` in a subprocess whose every training step first sleeps ``delay`` seconds."""
    return [sys.executable, "-c", _SLOW_TRAINING, str(delay), *args]


def complete_checkpoints(ckpt_dir: Path) -> list[int]:
    """Steps of the checkpoints whose save finished (their trainer_state.json is written last)."""
    import json

    steps = []
    for p in ckpt_dir.glob("checkpoint-*"):
        try:
            json.loads((p / "trainer_state.json").read_text())
            steps.append(int(p.name.split("-")[1]))
        except (OSError, ValueError):
            pass
    return sorted(steps)
