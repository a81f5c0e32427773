"""The Python API behind the CLI: ``biaslens.run(config)`` and ``biaslens.rerender(dir)``."""

from __future__ import annotations

from pathlib import Path

from biaslens.config import RunConfig


def run(config: RunConfig | dict | None = None, *, backend=None, console=None, **overrides):
    """Run a suite. ``config`` may be a RunConfig, a dict of its fields, or None (defaults);
    keyword overrides are applied on top, e.g. ``run(model={"name": "fake"}, sample=600)``.

    Returns the suite's result object (``out``, ``sentences``, ``metrics``, ...).
    """
    from biaslens.suites import get_suite

    if config is None:
        config = {}
    if isinstance(config, RunConfig):
        # exclude_unset keeps which fields the user set (suites with their own defaults read it)
        config = config.model_dump(exclude_unset=True)
    import copy

    from biaslens.config import _deep_update

    # nested sections merge: run(cfg, model={"batch_size": 8}) keeps cfg's model name
    data, extra = copy.deepcopy(dict(config)), copy.deepcopy(overrides)
    for d in (data, extra):
        if isinstance(d.get("model"), str):
            d["model"] = {"name": d["model"]}
    _deep_update(data, extra)
    cfg = RunConfig.validated(data, source="run()")
    return get_suite(cfg.suite)(cfg, backend=backend, console=console)


class RunNotComplete(ValueError):
    """The run folder's run.json does not say "complete" (still running, killed or failed)."""


def rerender(run_dir: str | Path, *, console=None) -> Path:
    """Recompute metrics and report.html from a finished run folder, without model calls."""
    import json

    import pandas as pd

    from biaslens.report.run_folder import read_run, write_json

    run_dir = Path(run_dir)
    record = read_run(run_dir)
    if record.get("status") != "complete":
        raise RunNotComplete(f"{run_dir}: run status is {record.get('status')!r}, not 'complete'; "
                             "re-run the same command to finish it before re-rendering")
    if record.get("suite") == "redditbias":
        from biaslens.suites.redditbias import rerender as rerender_redditbias

        return rerender_redditbias(run_dir, record)
    if record.get("suite") != "holistic-likelihood":
        raise ValueError(f"{run_dir}: re-rendering suite {record.get('suite')!r} is not supported yet")
    sentences_path = run_dir / "sentences.parquet"
    if not sentences_path.exists():
        raise FileNotFoundError(f"{run_dir}: sentences.parquet is missing; the run did not finish (status {record.get('status')!r})")
    from biaslens.report.holistic_likelihood import render
    from biaslens.suites.holistic_likelihood import analyse

    rows = pd.read_parquet(sentences_path)
    cfg = record.get("config", {})
    analysis, metrics = analyse(rows, alpha=cfg.get("alpha", 0.05))
    old = json.loads((run_dir / "metrics.json").read_text()) if (run_dir / "metrics.json").exists() else {}
    metrics["model"] = old.get("model", (record.get("model") or {}).get("name"))
    masked = (record.get("model") or {}).get("kind") == "masked"
    metrics["scoring"] = old.get("scoring", "pseudo-log-likelihood (SEAT-style templates)" if masked
                                 else "causal log-likelihood")
    write_json(run_dir / "metrics.json", metrics)
    html = render(run_dir, analysis=analysis, sentences=rows, metrics=metrics, run_record=record)
    (run_dir / "report.html").write_text(html, encoding="utf-8")
    return run_dir / "report.html"
