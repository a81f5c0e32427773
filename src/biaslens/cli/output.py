"""Where the command line's output goes, so that a person and a script can both use it.

Results (summary tables, verdicts, the paths of what was written) go to standard output;
progress, notes, warnings, logs and errors go to standard error. ``biaslens run > out.txt``
therefore keeps the summary and the report path, and a terminal still shows the progress.

With ``--json`` (run, card, compare) the command writes exactly one JSON object on standard
output (the uniform headline entries of :mod:`biaslens.results`, the verdicts, the folders and
the status) and nothing else: while it runs, whatever would have gone to standard output
(the human summary, a library's ``print``) is sent to standard error instead.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

JSON_HELP = ("Print the results as one JSON object on standard output (headline entries, verdicts, "
             "folders, status) and nothing else there; the human summary goes to standard error.")

#: the fields of a uniform metric entry (biaslens.results.MetricEntry) a script needs; ``judge_has_skill``
#: false: the value rests on a judge without measured skill and is not evidence of bias
ENTRY_FIELDS = ("name", "model", "value", "ci_low", "ci_high", "interval", "higher_is_better", "ideal", "n_used", "n_missing",
                "judge", "judge_has_skill")


class CommandOutput:
    """The output streams of one command: ``results`` is the console for results (standard
    output, or standard error under ``--json``); :meth:`emit` writes the JSON object."""

    def __init__(self, as_json: bool, stdout) -> None:
        from rich.console import Console

        self.as_json = as_json
        self._stdout = stdout
        target = sys.stderr if as_json else stdout
        # not a terminal (a file, a pipe): never wrap a path or a verdict in mid-phrase
        self.results = Console(file=target, soft_wrap=not _isatty(target), highlight=False)

    def emit(self, obj: dict[str, Any]) -> None:
        """The one JSON object of a ``--json`` command (nothing when ``--json`` is off)."""
        if not self.as_json:
            return
        from biaslens.fileio import jsonable

        self._stdout.write(json.dumps(jsonable(obj), ensure_ascii=False, allow_nan=False) + "\n")
        self._stdout.flush()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def command_output(as_json: bool = False) -> Iterator[CommandOutput]:
    """The streams of one command. Under ``--json``, standard output is sent to standard
    error until the command ends, so that only :meth:`CommandOutput.emit` writes to it."""
    stdout = sys.stdout
    out = CommandOutput(as_json, stdout)
    if not as_json:
        yield out
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield out


def entry(e: dict[str, Any] | None) -> dict[str, Any] | None:
    """The uniform part of one metric entry (None stays None)."""
    return None if not e else {k: e.get(k) for k in ENTRY_FIELDS}


def run_json(result) -> dict[str, Any]:
    """``biaslens run --json``: a finished run's headline entries, verdict, folder and status
    (the status as run.json records it)."""
    out = Path(result.out)
    m = result.metrics or {}
    entries = [entry(e) for e in m.get("entries") or []]
    return {"command": "run", "status": _run_status(out), "suite": m.get("suite"), "model": m.get("model"),
            "run": str(out), "report": str(out / "report.html"), "verdict": m.get("verdict"),
            "headline": entries[0] if entries else None, "entries": entries, "warnings": list(m.get("warnings") or [])}


def _run_status(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError):
        return None


def card_json(card: dict[str, Any]) -> dict[str, Any]:
    """``biaslens card --json``: per method its status, verdict, run folder and headline entries."""
    out = Path(card["out"])
    methods = []
    for r in card.get("methods") or []:
        entries = [entry(e) for e in r.get("entries") or []]
        methods.append({"suite": r.get("suite"), "status": r.get("status"), "verdict": r.get("verdict"),
                        "run": str(out / r["suite"]) if r.get("report") else None,
                        "headline": entries[0] if entries else None, "entries": entries,
                        "warnings": list(r.get("warnings") or [])})
    return {"command": "card", "status": card.get("status"), "model": card.get("model"), "budget": card.get("budget"),
            "card": str(out), "report": str(out / "card.html"), "methods": methods}


def compare_cards_json(result: dict[str, Any]) -> dict[str, Any]:
    """``biaslens compare CARD CARD --json``: the verdict of each method's change."""
    keys = ("suite", "headline", "before", "before_ci", "after", "after_ci", "change", "verdict", "outcome", "reason")
    out = Path(result["out"])
    return {"command": "compare", "status": "complete", "kind": "cards", "out": str(out),
            "report": str(out / "card-compare.html"), "before": result.get("before"), "after": result.get("after"),
            "methods": [{k: r.get(k) for k in keys} for r in result.get("methods") or []],
            "warnings": [result["warning"]] if result.get("warning") else []}


def compare_runs_json(metrics: dict[str, Any]) -> dict[str, Any]:
    """``biaslens compare RUN RUN --json``: each model's runs with their headline entry and
    verdict, then the verdict of each change against the first model."""
    out = Path(metrics["out"])
    models = []
    for e in metrics.get("entries") or []:
        runs = {}
        for suite, folder in (e.get("runs") or {}).items():
            m = _read_metrics(Path(folder))
            head = (m.get("entries") or [None])[0]
            runs[suite] = {"run": str(folder), "status": _run_status(Path(folder)), "verdict": m.get("verdict"),
                           "headline": entry(head)}
        models.append({"label": e.get("label"), "runs": runs})
    changes: dict[str, Any] = {}
    for suite, h in (metrics.get("headlines") or {}).items():
        changes[suite] = {"headline": h.get("headline"), "models": h.get("models")}
    hg = (metrics.get("holistic-generation") or {}).get("fgb_change_vs_first")
    if hg:
        changes["holistic-generation"] = {"headline": "full_gen_bias", "models": hg}
    rb = metrics.get("redditbias") or {}
    if rb.get("t") or rb.get("lm_perplexity"):
        changes["redditbias"] = {"t": rb.get("t"), "lm_perplexity": rb.get("lm_perplexity")}
    return {"command": "compare", "status": "complete", "kind": "runs", "out": str(out),
            "report": str(out / "report.html"), "models": models, "changes": changes,
            "headline_changes": metrics.get("changes") or {},
            "differences": list(metrics.get("differences") or [])}


def _read_metrics(run_dir: Path) -> dict[str, Any]:
    try:
        m = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return m if isinstance(m, dict) else {}


def results_console():
    """A console on standard output for a command's results (commands without ``--json``)."""
    return CommandOutput(False, sys.stdout).results
