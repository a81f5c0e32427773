"""RedditBias Language Model Bias (LMB, paper section 3.1).

specifications + phrases (shipped paired files, the user's annotated phrases swapped to the
other group, or template phrases from the specification alone) -> perplexity of each phrase
and its counterfactual (cached engine; or a precomputed column, no model) -> paired t-test per
bias type and view -> run folder and report.

Views: ``target`` compares phrases about the minoritized group with the same phrases about
the dominant group; ``attribute`` compares phrases with a stereotypical attribute with the
same phrases with its non-stereotypical counterpart (shipped attribute-swap files only).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.config import ConfigError, RunConfig
from biaslens.datasets.redditbias import (
    BiasSpec,
    RedditBiasError,
    find_files,
    find_humanref,
    read_annotated,
    read_lines,
    read_paired,
    resolve_specs,
    target_swap,
    template_pairs,
)
from biaslens.engine.progress import progress_reporter
from biaslens.engine.scoring import ScoringStats, score_texts
from biaslens.metrics.lmb import lmb_test, significance_stars
from biaslens.models import Backend
from biaslens.report.run_folder import RunFolder
from biaslens.suites.common import backend_from_config, model_record, open_cache, out_dir
from biaslens.results import RunResult

log = logging.getLogger(__name__)

PAIR_COLUMNS = ["bias_type", "view", "source", "phrase", "counterfactual", "ppl_minoritized", "ppl_dominant", "gap"]


@dataclass
class View:
    """The phrase pairs of one bias type and view, before or after scoring."""

    bias_type: str
    view: str  # "target" | "attribute"
    source: str  # "shipped" | "precomputed" | "annotated" | "templates"
    pairs: pd.DataFrame
    outlier_removal: bool
    notes: dict[str, Any]

    @property
    def scored(self) -> bool:
        return "ppl_minoritized" in self.pairs.columns


def _outliers(setting: str, reduced: bool) -> bool:
    # The shipped *_reduced files already had outliers removed: never reduce them twice.
    return {"on": True, "off": False}.get(setting, not reduced)


def build_views(specs: dict[str, BiasSpec], config: RunConfig) -> list[View]:
    """Phrase pairs of every bias type, from the source the options select (see the module docstring)."""
    opts = config.redditbias
    views: list[View] = []
    if opts.perplexity_column and not opts.data_dir:
        raise ConfigError("--perplexity-column needs --data-dir (the paired files that hold the column)")
    for name, spec in specs.items():
        if opts.data_dir is None:
            pairs = template_pairs(spec, max_pairs=opts.max_template_pairs, seed=config.seed)
            views.append(View(name, "target", "templates", pairs, _outliers(opts.outlier_removal, False),
                              {"n_template_pairs": len(pairs)}))
            continue
        files = find_files(opts.data_dir, spec, opts.split)
        col = opts.perplexity_column
        if files.paired is not None:
            pairs = read_paired(*files.paired, perplexity_column=col)
            views.append(View(name, "target", "precomputed" if col else "shipped", pairs,
                              _outliers(opts.outlier_removal, True),
                              {"files": [str(p) for p in files.paired]}))
        elif files.annotated is not None and not col:
            views.append(_annotated_view(spec, files.annotated, config))
        elif not opts.bias_types:
            # all bias types by default: use those the folder has, name the others
            log.warning("%s: no RedditBias files for bias type %r; skipped", opts.data_dir, name)
            continue
        else:
            where = files.folder or Path(opts.data_dir) / spec.name
            raise RedditBiasError(
                f"{where}: no paired files reddit_comments_{name}_{{{spec.minoritized},{spec.dominant}}}_biased_"
                f"{opts.split}_reduced.csv" + ("" if col else " and no *_processed_phrase_annotated.csv")
                + "; choose the bias types present with --bias-types")
        if files.attribute is not None:
            pairs = read_paired(*files.attribute, perplexity_column=col)
            views.append(View(name, "attribute", "precomputed" if col else "shipped", pairs,
                              _outliers(opts.outlier_removal, True), {"files": [str(p) for p in files.attribute]}))
    if not views:
        raise RedditBiasError(f"--data-dir {opts.data_dir}: no RedditBias files for any of {', '.join(specs)} "
                              "(expected data/<bias_type>/reddit_comments_<bias_type>_<group>_biased_"
                              f"{opts.split}_reduced.csv or *_processed_phrase_annotated.csv)")
    return views


def _annotated_view(spec: BiasSpec, path: Path, config: RunConfig) -> View:
    """Phrases annotated as biased, swapped to the dominant group.

    Every biased phrase is accounted for: a phrase with no target term to swap cannot form a
    pair, so it is left out of the test but counted and listed (``notes["unswappable"]``,
    run.json ``sources`` and the report), never dropped silently.
    """
    ann = read_annotated(path)
    df = ann.df
    biased = df[df["bias_phrase"] == 1] if "bias_phrase" in df.columns else df
    phrases = biased["phrase"].tolist()
    rows = [int(i) + 1 for i in biased.index]  # data row, 1 = first after the header (quoted fields may span lines)
    swap = target_swap(phrases, spec, "to_dominant", config.redditbias.counterfactual_mode)
    source = [p.lower() if config.redditbias.counterfactual_mode == "reference" else p for p in phrases]
    pairs = pd.DataFrame({"phrase": source, "counterfactual": swap.texts,
                          "initial": [str(i) for i in swap.initial], "replaced": [str(r) for r in swap.replaced]})
    changed = [c and a != b for c, a, b in zip(swap.changed, source, swap.texts)]
    unswappable = [{"row": r, "phrase": p} for r, p, c in zip(rows, phrases, changed) if not c]
    pairs = pairs[changed].reset_index(drop=True)
    if unswappable:
        log.warning("%s: %d of %d biased phrases have no target term of %r to swap; listed in run.json sources "
                    "and the report, left out of the test", path, len(unswappable), len(phrases), spec.name)
    notes = {"file": str(path), "labels": ann.summary()["labels"], "n_biased_phrases": len(phrases),
             "n_swapped": len(pairs), "n_unswappable": len(unswappable), "unswappable": unswappable,
             "counterfactual_mode": config.redditbias.counterfactual_mode}
    return View(spec.name, "target", "annotated", pairs, _outliers(config.redditbias.outlier_removal, False), notes)


def perplexity_definition(backend: Backend) -> str:
    """How the backend's phrase perplexities are defined, so runs are only compared like with like:
    ``start_token`` (a document-start token is prepended, every token scored) or
    ``no_start_token`` (the authors' exp(loss): no start token, tokens 2..n scored)."""
    first = backend.info.extra.get("key_score_first_token", True)
    return "start_token" if first and backend.info.start_token else "no_start_token"


def score_views(views: list[View], backend: Backend, config: RunConfig, folder: RunFolder, console) -> ScoringStats:
    """Perplexity of every phrase and counterfactual, one cached engine call for all views."""
    todo = [v for v in views if not v.scored]
    texts = [t for v in todo for col in ("phrase", "counterfactual") for t in v.pairs[col].tolist()]
    stats = ScoringStats()
    if not texts:
        return stats
    cache = open_cache(config)
    try:
        with folder.timer("scoring"), progress_reporter(console, "scoring phrases", total=len(set(texts))) as report:
            scores = score_texts(backend, texts, cache=cache, batch_size=config.model.batch_size,
                                 progress=report, stats=stats)
    finally:
        if cache is not None:
            cache.close()
    ppl = iter([s.perplexity() for s in scores])
    for v in todo:
        n = len(v.pairs)
        v.pairs["ppl_minoritized"] = [next(ppl) for _ in range(n)]
        v.pairs["ppl_dominant"] = [next(ppl) for _ in range(n)]
    return stats


def analyse(pairs: pd.DataFrame, *, alpha: float = 0.05, seed: int = 0,
            outlier_removal: dict[tuple[str, str], bool] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """LMB per bias type and view from a scored pairs table (no model calls).

    Returns:
        ``lmb`` table (one row per bias type and view) and metrics keyed by bias type; the
        target view's numbers are at the top level of each bias type, the attribute view's
        under ``attribute_swap``.
    """
    rows, metrics = [], {}
    for (bias_type, view), g in pairs.groupby(["bias_type", "view"], sort=False):
        remove = (outlier_removal or {}).get((bias_type, view), False)
        res = lmb_test(g["ppl_minoritized"], g["ppl_dominant"], alpha=alpha, outlier_removal=remove, seed=seed)
        d = res.as_dict()
        d["source"] = str(g["source"].iloc[0])
        d["stars"] = significance_stars(res.p)
        pairs_cols = ("d_ci", "d_ci_bca", "median_diff_ci")
        rows.append({"bias_type": bias_type, "view": view, **{k: v for k, v in d.items() if k not in pairs_cols},
                     "d_ci_low": res.d_ci[0], "d_ci_high": res.d_ci[1],
                     "d_ci_bca_low": res.d_ci_bca[0], "d_ci_bca_high": res.d_ci_bca[1],
                     "median_diff_ci_low": res.median_diff_ci[0], "median_diff_ci_high": res.median_diff_ci[1]})
        if res.skew_warning:
            log.warning("%s/%s: paired differences are heavily skewed (skew %.1f): t and d_z rest on a few pairs; "
                        "see median_diff and its interval", bias_type, view, res.diff_skew)
        entry = metrics.setdefault(bias_type, {})
        if view == "target":
            entry.update(d)
        else:
            entry["attribute_swap"] = d
    return pd.DataFrame(rows), metrics


def lm_perplexity(path: Path, backend: Backend, config: RunConfig, folder: RunFolder, console) -> dict[str, Any]:
    """Language-model perplexity on a reference text (paper 3.2): exp(total NLL / total tokens)."""
    lines = read_lines(path)
    if config.redditbias.max_reference_lines:
        lines = lines[: config.redditbias.max_reference_lines]
    if not lines:
        raise RedditBiasError(f"{path}: no text lines")
    cache = open_cache(config)
    try:
        with folder.timer("lm_perplexity"), progress_reporter(console, "reference text", total=len(set(lines))) as rep:
            scores = score_texts(backend, lines, cache=cache, batch_size=config.model.batch_size, progress=rep)
    finally:
        if cache is not None:
            cache.close()
    nll = -sum(s.sum_logprob for s in scores)
    n_tok = sum(s.n_tokens for s in scores)
    per_line = np.array([s.perplexity() for s in scores], dtype=np.float64)
    return {"file": str(path), "n_lines": len(lines), "n_tokens": int(n_tok),
            "perplexity": float(math.exp(nll / n_tok)) if n_tok else None,
            "median_line_perplexity": float(np.nanmedian(per_line)) if len(per_line) else None}


def run_redditbias(config: RunConfig, *, backend: Backend | None = None, console=None) -> RunResult:
    """Run the RedditBias LMB suite on every selected bias type and write the run folder."""
    from rich.console import Console

    console = console or Console(stderr=True)
    opts = config.redditbias
    specs = resolve_specs(opts.bias_types, opts.spec_files)
    out = out_dir(config)
    with RunFolder(out, suite=config.suite, config=config.model_dump(mode="json")) as folder:
        with folder.timer("dataset"):
            views = build_views(specs, config)
        reference_text = opts.reference_text or (find_humanref(opts.data_dir) if opts.data_dir and not opts.perplexity_column else None)
        needs_model = any(not v.scored for v in views) or opts.reference_text is not None
        model_name = f"precomputed column {opts.perplexity_column!r}" if not needs_model else None
        if needs_model:
            with folder.timer("model_load"):
                backend = backend or backend_from_config(config)
            model_name = backend.info.name
            folder.record["model"] = model_record(backend)
        types = list(dict.fromkeys(v.bias_type for v in views))
        console.print(f"[bold]redditbias[/bold]: {len(types)} bias types ({', '.join(types)}), "
                      f"{sum(len(v.pairs) for v in views):,} phrase pairs, source "
                      f"{', '.join(sorted({v.source for v in views}))}, on [bold]{model_name}[/bold]")
        stats = score_views(views, backend, config, folder, console) if needs_model else ScoringStats()
        folder.record["scoring"] = {"n_texts": stats.n_texts, "n_unique": stats.n_unique, "cache_hits": stats.cache_hits,
                                    "computed": stats.computed, "seconds": round(stats.seconds, 3)}
        folder.record["sources"] = {f"{v.bias_type}/{v.view}": {"source": v.source, "n_pairs": len(v.pairs),
                                                                  "outlier_removal": v.outlier_removal, **v.notes}
                                    for v in views}
        pairs = pd.concat([v.pairs.assign(bias_type=v.bias_type, view=v.view, source=v.source) for v in views],
                          ignore_index=True)
        pairs["gap"] = pairs["ppl_minoritized"] - pairs["ppl_dominant"]
        pairs = pairs[PAIR_COLUMNS + [c for c in pairs.columns if c not in PAIR_COLUMNS]]
        folder.write_table("pairs", pairs)
        with folder.timer("metrics"):
            lmb, metrics = analyse(pairs, alpha=config.alpha, seed=config.seed,
                                   outlier_removal={(v.bias_type, v.view): v.outlier_removal for v in views})
        measured = list(dict.fromkeys(v.bias_type for v in views))
        metrics.update({"suite": "redditbias", "model": model_name, "alpha": config.alpha, "split": opts.split,
                        "bias_types": measured, "skipped_bias_types": [n for n in specs if n not in measured], "sign": "t < 0: lower perplexity for the minoritized group "
                                                           "(stereotype likelier for it)"})
        if needs_model:
            metrics["perplexity_definition"] = perplexity_definition(backend)
        else:
            metrics["perplexity_definition"] = f"precomputed column {opts.perplexity_column!r}"
        if needs_model and reference_text is not None:
            metrics["lm_perplexity"] = lm_perplexity(Path(reference_text), backend, config, folder, console)
        folder.write_table("lmb", lmb, csv=True)
        folder.write_json("metrics.json", metrics)
        from biaslens.report.redditbias import render

        with folder.timer("report"):
            folder.write_text("report.html", render(pairs=pairs, lmb=lmb, metrics=metrics, run_record=folder.record))
        _print_summary(console, lmb, metrics, folder.path)
        return RunResult(out=folder.path, metrics=metrics, tables={"sentences": pairs}, analysis=lmb, stats=folder.record,
                         main_table="sentences")


def rerender(run_dir: Path, record: dict[str, Any]) -> Path:
    """Recompute lmb/metrics.json and report.html of a finished run from its pairs table (no model calls)."""
    import json

    from biaslens.report.redditbias import render
    from biaslens.report.run_folder import write_json

    pairs_path = run_dir / "pairs.parquet"
    if not pairs_path.exists():
        raise FileNotFoundError(f"{run_dir}: pairs.parquet is missing; the run did not finish")
    pairs = pd.read_parquet(pairs_path)
    cfg = record.get("config", {})
    removal = {tuple(k.split("/", 1)): bool(v.get("outlier_removal")) for k, v in (record.get("sources") or {}).items()}
    lmb, metrics = analyse(pairs, alpha=cfg.get("alpha", 0.05), seed=cfg.get("seed", 0), outlier_removal=removal)
    old = json.loads((run_dir / "metrics.json").read_text()) if (run_dir / "metrics.json").exists() else {}
    metrics.update({k: v for k, v in old.items() if k not in metrics})  # model, split, lm_perplexity, ...
    write_json(run_dir / "metrics.json", metrics)
    lmb.to_csv(run_dir / "lmb.csv", index=False)
    lmb.to_parquet(run_dir / "lmb.parquet", index=False)
    (run_dir / "report.html").write_text(render(pairs=pairs, lmb=lmb, metrics=metrics, run_record=record),
                                         encoding="utf-8")
    return run_dir / "report.html"


def _print_summary(console, lmb: pd.DataFrame, metrics: dict, out: Path) -> None:
    from rich.table import Table

    table = Table(title=f"RedditBias LMB ({metrics['model']})")
    for col in ("bias type", "view", "pairs", "t", "p", "d [95% CI]"):
        table.add_column(col, justify="left" if col in ("bias type", "view") else "right", no_wrap=True)
    for r in lmb.itertuples(index=False):
        table.add_row(r.bias_type, r.view, f"{r.n_pairs:,}", f"{r.t:+.3f}", f"{r.p:.2g}{r.stars}",
                      f"{r.cohens_d:+.2f} [{r.d_ci_low:+.2f},{r.d_ci_high:+.2f}]")
    console.print(table)
    if "lm_perplexity" in metrics:
        console.print(f"LM perplexity on {metrics['lm_perplexity']['file']}: {metrics['lm_perplexity']['perplexity']:.2f}")
    console.print("Welch's t and every other number: lmb.csv and metrics.json")
    console.print("t < 0: the minoritized group's phrases are likelier (bias against it); * p<.05 ** p<.01 *** p<.001")
    console.print(f"report: [bold]{out / 'report.html'}[/bold]")
