"""Long jobs announce their projected time once, early; short ones stay quiet."""

import io

from rich.console import Console

from biaslens.engine import progress


def _run(monkeypatch, steps, total):
    clock = {"t": 1000.0}
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock["t"])
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with progress.progress_reporter(console, "scoring", total=total) as report:
        report(0, total)
        for dt, done in steps:
            clock["t"] += dt
            report(done, total)
    return out.getvalue()


def test_long_job_prints_projection_once(monkeypatch):
    # the first batch is slow (warm-up, 30 s) and is left out of the rate: projected at the
    # third update from 10 items/s after it; 10,000 - 180 left -> 982 s
    text = _run(monkeypatch, [(30, 60), (6, 120), (6, 180), (6, 240)], total=10_000)
    lines = [ln for ln in text.splitlines() if "projected" in ln]
    assert len(lines) == 1
    assert "16 min 22 s more for 9,820 items at 10.0/s" in lines[0]


def test_short_job_prints_no_projection(monkeypatch):
    text = _run(monkeypatch, [(6, 300), (6, 600), (1, 650)], total=700)
    assert "projected" not in text


def test_duration_format():
    assert progress._duration(40) == "40 s"
    assert progress._duration(425) == "7 min 5 s"
    assert progress._duration(9660) == "2 h 41 min"
