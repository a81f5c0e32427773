"""Progress for long work: a rich bar on a terminal, periodic log lines everywhere
(so a run in CI or under nohup still shows where it is and how long is left)."""

from __future__ import annotations

import contextlib
import logging
import time

log = logging.getLogger("biaslens.progress")


def _duration(seconds: float) -> str:
    """'2 h 41 min', '7 min 5 s', '40 s'."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} s"
    return f"{s} s"


@contextlib.contextmanager
def progress_reporter(console, description: str, total: int, log_every: float = 15.0, project_after: float = 10.0):
    """Yields ``report(done, total)``; shows a bar with a time estimate.

    Once ``project_after`` seconds of real work have been measured, a long job prints its
    projected total time and finish time as one line, so a user learns at the start of a
    multi-hour run (e.g. ``--full``) what they are in for, not from a bar they may not watch.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    start = time.perf_counter()
    state = {"last_log": start, "first_done": None, "projected": False, "updates": 0, "warm": None}
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
                if done:  # a resumed (or repeated) run: say it where the user looks, not only in run.log
                    msg = (f"{description}: {done:,} of {total_now:,} from the cache"
                           + (" (all of them)" if done == total_now else f", {total_now - done:,} to compute"))
                    log.info(msg)
                    console.print(msg)
                return
            d0, t0 = state["first_done"]
            state["updates"] += 1
            if state["updates"] == 1:
                # the first batch carries the warm-up (kernels, caches): the projection starts after it
                state["warm"] = (done, now)
            dw, tw = state["warm"]
            if (not state["projected"] and state["updates"] >= 3 and now - tw >= project_after
                    and done > dw and done < total_now):
                state["projected"] = True
                rate = (done - dw) / (now - tw)
                left = (total_now - done) / rate
                if left >= 60:
                    end = time.time() + left
                    same_day = time.localtime(end)[:3] == time.localtime()[:3]
                    finish = time.strftime("%H:%M" if same_day else "%a %d %b %H:%M", time.localtime(end))
                    msg = (f"{description}: projected {_duration(left)} more for {total_now - done:,} items "
                           f"at {rate:.1f}/s (finishes about {finish})")
                    log.info(msg)
                    console.print(msg)
            if now - state["last_log"] >= log_every or done == total_now:
                rate = (done - d0) / max(now - t0, 1e-9)
                left = (total_now - done) / rate if rate > 0 else float("nan")
                msg = f"{description}: {done:,}/{total_now:,} ({rate:.1f}/s, about {left:.0f} s left)"
                log.info(msg)
                if not console.is_terminal:
                    console.print(msg)
                state["last_log"] = now

        yield report
