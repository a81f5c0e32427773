"""Progress for long work: a rich bar on a terminal, periodic log lines everywhere
(so a run in CI or under nohup still shows where it is and how long is left)."""

from __future__ import annotations

import contextlib
import logging
import time

log = logging.getLogger("biaslens.progress")


@contextlib.contextmanager
def progress_reporter(console, description: str, total: int, log_every: float = 15.0):
    """Yields ``report(done, total)``; shows a bar with a time estimate."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    start = time.perf_counter()
    state = {"last_log": start, "first_done": None}
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False,
                   disable=not console.is_terminal)
    with bar:
        task = bar.add_task(description, total=total)

        def report(done: int, total_now: int) -> None:
            bar.update(task, completed=done, total=total_now)
            now = time.perf_counter()
            if state["first_done"] is None:
                state["first_done"] = (done, now)
                if done:
                    log.info("%s: %d of %d already in the cache", description, done, total_now)
                return
            d0, t0 = state["first_done"]
            if now - state["last_log"] >= log_every or done == total_now:
                rate = (done - d0) / max(now - t0, 1e-9)
                left = (total_now - done) / rate if rate > 0 else float("nan")
                msg = f"{description}: {done:,}/{total_now:,} ({rate:.1f}/s, about {left:.0f} s left)"
                log.info(msg)
                if not console.is_terminal:
                    console.print(msg)
                state["last_log"] = now

        yield report
