"""HolisticBias offensiveness of the sentences themselves (paper 2.3.4, B.3; Tables 12, 13),
plus a classifier audit: which bare identity terms the classifier itself flags.

dataset (HolisticBias sentences) -> offensiveness classifier -> per template / descriptor
summaries -> report. No generative model is involved.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.config import ConfigError, RunConfig
from biaslens.datasets.holistic import build_sentences, load_holistic_dataset
from biaslens.engine.progress import progress_reporter
from biaslens.metrics import offensiveness_ranges, percent_offensive, template_offensiveness
from biaslens.report.run_folder import RunFolder
from biaslens.suites.common import out_dir, print_scorer_warnings
from biaslens.results import RunResult
from biaslens.suites.holistic_likelihood import select_rows

#: default sample when the user gives no --sample (alt-profanity-check does the full 473k too)
DEFAULT_SAMPLE = 20_000
_CHUNK = 20_000


def score_in_chunks(scorer, texts: list[str], console, description: str) -> np.ndarray:
    """Offensiveness probabilities of unique texts, in chunks with progress (duplicates scored once)."""
    uniq, inverse = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
    out = np.empty(len(uniq))
    with progress_reporter(console, description, total=len(uniq)) as report:
        report(0, len(uniq))
        for start in range(0, len(uniq), _CHUNK):
            out[start : start + _CHUNK] = scorer.probability(uniq[start : start + _CHUNK].tolist())
            report(min(start + _CHUNK, len(uniq)), len(uniq))
    return out[inverse]


def classifier_audit(descriptors: pd.DataFrame, scorer, neutral_template: str, console=None) -> pd.DataFrame:
    """Score each bare descriptor and each descriptor in a neutral template.

    Args:
        descriptors: unique (axis, descriptor) rows.
        scorer: has ``probability(texts)``.
        neutral_template: contains ``{descriptor}``, e.g. "This is {descriptor}.". Descriptors
            that go after the noun ("with a disability"; ``noun_phrase_type`` noun_descriptor)
            get "a person" before them, so the sentence stays grammatical.
    """
    if "{descriptor}" not in neutral_template:
        raise ConfigError(f"generation.neutral_template {neutral_template!r} must contain '{{descriptor}}'")
    d = descriptors["descriptor"].astype(str).tolist()
    after_noun = (descriptors["noun_phrase_type"].astype(str) == "noun_descriptor").tolist() \
        if "noun_phrase_type" in descriptors else [False] * len(d)
    neutral = [neutral_template.replace("{descriptor}", f"a person {x}" if after else x) for x, after in zip(d, after_noun)]
    bare = scorer.probability(d)
    templ = scorer.probability(neutral)
    out = descriptors[["axis", "descriptor"]].astype(str).reset_index(drop=True).assign(
        bare=bare, neutral_sentence=neutral, neutral=templ)
    out["max"] = out[["bare", "neutral"]].max(axis=1)
    out["flagged"] = out["max"] >= 0.5
    return out.sort_values("max", ascending=False, kind="stable").reset_index(drop=True)


def run_holistic_offensiveness(config: RunConfig, *, backend=None, console=None) -> RunResult:
    """Offensiveness of HolisticBias sentences per template and descriptor, and the classifier audit.

    ``backend`` is accepted for a uniform suite signature and unused (no model is called).
    """
    from rich.console import Console

    from biaslens.scorers import ScorerError
    from biaslens.scorers.card import choose_judge, toxicity_card
    from biaslens.scorers.masking import descriptor_forms, mask_all

    console = console or Console(stderr=True)
    opts = config.generation
    out = out_dir(config)
    with RunFolder(out, suite=config.suite, config=config.model_dump(mode="json")) as folder:
        with folder.timer("dataset"):
            dataset = load_holistic_dataset(config.dataset_dir, extra_files=config.extra_dataset_files)
            all_rows = build_sentences(dataset)
            # the bare-noun control rows (axis "null") have no descriptor to compare
            all_rows = all_rows[(all_rows["axis"] != "null").to_numpy()]
            sample = config.sample if "sample" in config.model_fields_set else DEFAULT_SAMPLE
            rows = select_rows(all_rows, axes=config.axes, templates=config.templates, sample=sample,
                               full=config.full, seed=config.seed)
        if rows.empty:
            raise ConfigError("no sentences selected: check --axes/--templates")
        try:
            with folder.timer("classifier_load"):
                scorer, choice = choose_judge(opts.offensiveness_classifier, device=config.model.device)
            with folder.timer("scorer_card"):
                card = toxicity_card(scorer, choice, role="offensiveness", masking=opts.identity_masking)
        except ScorerError as e:
            raise ConfigError(str(e)) from None
        folder.record["scorer_cards"] = [card]
        name = scorer.name
        console.print(f"[bold]holistic-offensiveness[/bold]: {len(rows):,} sentences ({rows['descriptor'].nunique():,} "
                      f"descriptors, {rows['template'].nunique()} templates) with [bold]{name}[/bold]")
        t0 = time.perf_counter()
        with folder.timer("scoring"):
            p = score_in_chunks(scorer, rows["text"].astype(str).tolist(), console, "scoring sentences")
            # the descriptor replaced by a neutral placeholder: what the template says, not the identity word
            masked = mask_all(rows["text"].astype(str), map(descriptor_forms, rows["descriptor"].astype(str)))
            pm = score_in_chunks(scorer, masked, console, "scoring masked sentences")
        seconds = time.perf_counter() - t0
        rows = rows.assign(offensiveness=pm if opts.identity_masking else p, offensiveness_masked=pm,
                           offensiveness_unmasked=p)
        folder.record["scoring"] = {"classifier": name, "n_sentences": int(len(rows)),
                                    "n_unique": int(rows["text"].nunique()), "seconds": round(seconds, 3),
                                    "sentences_per_second": round(len(rows) / seconds, 1) if seconds > 0 else None}
        with folder.timer("audit"):
            descs = (rows[["axis", "descriptor", "noun_phrase_type"]].astype(str)
                     .drop_duplicates(["axis", "descriptor"]).sort_values(["axis", "descriptor"]))
            audit = classifier_audit(descs, scorer, opts.neutral_template)
        folder.write_table("sentences", rows)
        folder.write_table("classifier_audit", audit)
        analysis, metrics = write_results(folder, rows, audit)
        _print_summary(console, metrics, analysis, folder.path)
        print_scorer_warnings(console, metrics)
        return RunResult(out=folder.path, metrics=metrics, tables={"sentences": rows}, analysis=analysis, stats=folder.record,
                         main_table="sentences")


def analyse(rows: pd.DataFrame, audit: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """Tables 12 and 13 and the summary metrics from scored sentences (no classifier calls)."""
    from biaslens.metrics.offensiveness import descriptor_offensiveness

    t13 = template_offensiveness(rows)
    t12 = offensiveness_ranges(rows)
    per = descriptor_offensiveness(rows)
    flagged = audit[audit["flagged"]]
    masking = "offensiveness_masked" in rows and rows["offensiveness"].equals(rows["offensiveness_masked"])
    other = "offensiveness_unmasked" if masking else "offensiveness_masked"
    extra: dict[str, Any] = {"identity_masking": bool(masking)}
    if other in rows:  # the other figure beside the headline, per template too
        kind = other.split("_")[1]
        t_other = template_offensiveness(rows, other)[["template", "mean_offensiveness", "std_offensiveness"]]
        t13 = t13.merge(t_other.rename(columns={"mean_offensiveness": f"mean_{kind}",
                                                "std_offensiveness": f"std_{kind}"}), on="template", how="left")
        extra |= {f"mean_offensiveness_{kind}": float(rows[other].mean()),
                  f"percent_offensive_{kind}": percent_offensive(rows[other])}
    metrics: dict[str, Any] = {
        "suite": "holistic-offensiveness",
        "n_sentences": int(len(rows)),
        "n_descriptors": int(rows["descriptor"].nunique()),
        "n_templates": int(rows["template"].nunique()),
        "mean_offensiveness": float(rows["offensiveness"].mean()),
        "percent_offensive": percent_offensive(rows["offensiveness"]),
        "by_template": {str(r.template): {"mean": r.mean_offensiveness, "std": r.std_offensiveness}
                        for r in t13.itertuples(index=False)},
        "audit": {"n_descriptors": int(len(audit)), "n_flagged": int(len(flagged)),
                  "flagged": flagged["descriptor"].tolist()[:100],
                  "percent_flagged_bare": percent_offensive(audit["bare"]),
                  "percent_flagged_neutral": percent_offensive(audit["neutral"])},
        **extra,
    }
    return {"table13": t13, "table12": t12, "per_descriptor": per}, metrics


def write_results(folder: RunFolder, rows: pd.DataFrame, audit: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """Tables 12/13, metrics.json and report.html from the scored sentences and the audit (the
    run and ``rerender`` both end here); classifier name and speed from ``folder.record["scoring"]``."""
    with folder.timer("metrics"):
        analysis, metrics = analyse(rows, audit)
    scoring = folder.record.get("scoring") or {}
    metrics["classifier"] = scoring.get("classifier")
    metrics["sentences_per_second"] = scoring.get("sentences_per_second")
    metrics["scorer_cards"] = folder.record.get("scorer_cards") or []
    folder.write_table("template_offensiveness", analysis["table13"])
    folder.write_table("descriptor_ranges", analysis["table12"])
    folder.write_table("descriptor_offensiveness", analysis["per_descriptor"])
    folder.write_json("metrics.json", metrics)
    with folder.timer("report"):
        folder.write_text("report.html", render(analysis, metrics, audit))
    return analysis, metrics


def rerender(run_dir: Path, record: dict[str, Any]) -> Path:
    """metrics.json, the tables and report.html again from sentences.parquet and
    classifier_audit.parquet (no classifier calls)."""
    from biaslens.suites.common import read_stored_table, rerender_folder

    rows = read_stored_table(run_dir, "sentences")
    audit = read_stored_table(run_dir, "classifier_audit")
    folder = rerender_folder(run_dir, record)
    write_results(folder, rows, audit)
    return folder.path / "report.html"


def render(analysis: dict[str, Any], metrics: dict[str, Any], audit: pd.DataFrame) -> str:
    from biaslens.report.holistic_likelihood import _version
    from biaslens.report.html import Section, Table, render_report
    from biaslens.report.scorer_card import scorer_card_section
    from biaslens.scorers.card import card_note, card_warnings

    a = metrics["audit"]
    cards = metrics.get("scorer_cards") or []
    masked = metrics.get("identity_masking", False)
    how = ("descriptor masked: the template's own offensiveness; the unmasked columns (paper-faithful) add the "
           "classifier's reaction to each descriptor" if masked else
           "UNMASKED, paper-faithful: includes the classifier's reaction to the descriptor word itself")
    sections = [
        Section("Offensiveness of HolisticBias sentences",
                "Each sentence is scored by the offensiveness classifier. Per template: mean and standard deviation "
                "across descriptors of the descriptor's mean score over its sentences (Table 13 shape); then "
                "descriptors grouped by their mean score range (Table 12 shape).",
                metrics={"sentences": metrics["n_sentences"], "descriptors": metrics["n_descriptors"],
                         "templates": metrics["n_templates"], "mean offensiveness": metrics["mean_offensiveness"],
                         "sentences offensive (p >= 0.5), %": metrics["percent_offensive"],
                         **{f"{k.replace('_', ' ')}": v for k, v in metrics.items()
                            if k.startswith(("mean_offensiveness_", "percent_offensive_"))},
                         "scores": how,
                         "classifier": metrics.get("classifier"),
                         "classifier validity": "; ".join(card_note(c) for c in cards) or "not measured (older run)"},
                tables=[Table("Per template (Table 13 shape)", analysis["table13"],
                              "; ".join(card_note(c) for c in cards), max_rows=40),
                        Table("Descriptors by offensiveness range (Table 12 shape)", analysis["table12"], max_rows=200)]),
        Section("Classifier audit",
                "The classifier on each bare descriptor and on each descriptor in a neutral sentence. Terms flagged "
                "here (p >= 0.5) are flagged for the word itself, not for what a sentence says about people: "
                "read the sentence results above with that in mind.",
                metrics={"descriptors audited": a["n_descriptors"], "flagged (bare or neutral)": a["n_flagged"],
                         "bare descriptors flagged, %": a["percent_flagged_bare"],
                         "neutral sentences flagged, %": a["percent_flagged_neutral"]},
                tables=[Table("Most offensive identity terms according to the classifier", audit.head(40))]),
    ]
    run = {"suite": "holistic-offensiveness", "model": metrics.get("classifier"), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": _version(), "details": {}}
    if cards:
        sections.insert(1, scorer_card_section(cards))
    return render_report(title=f"HolisticBias offensiveness: {metrics.get('classifier')}", run=run, sections=sections,
                         warnings=card_warnings(cards))


def _print_summary(console, metrics: dict, analysis: dict, out: Path) -> None:
    from rich.table import Table

    table = Table(title=f"Offensiveness per template ({metrics['classifier']})")
    for col in ("template", "mean", "std across descriptors"):
        table.add_column(col, justify="left" if col == "template" else "right")
    for r in analysis["table13"].head(12).itertuples(index=False):
        table.add_row(str(r.template), f"{r.mean_offensiveness:.1%}", f"{r.std_offensiveness:.1%}")
    console.print(table)
    a = metrics["audit"]
    sps = metrics.get("sentences_per_second")
    console.print(f"{metrics['percent_offensive']:.1f}% of {metrics['n_sentences']:,} sentences offensive (p >= 0.5)"
                  + (f", {sps:,.0f} sentences/s" if sps and not math.isnan(sps) else "")
                  + f"; audit: the classifier flags {a['n_flagged']} of {a['n_descriptors']} descriptors on their own")
    console.print(f"report: [bold]{out / 'report.html'}[/bold]")
