"""HolisticBias offensiveness of the sentences themselves (paper 2.3.4, B.3; Tables 12, 13),
plus a classifier audit: which bare identity terms the classifier itself flags.

dataset (HolisticBias sentences) -> offensiveness classifier -> per template / descriptor
summaries -> report. No generative model is involved.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from biaslens.errors import ConfigError
from biaslens.methods.holistic.dataset import build_sentences, load_holistic_dataset
from biaslens.methods.holistic.dataset.selection import select_rows
from biaslens.methods.holistic.generation_options import GenerationOptions
from biaslens.methods.holistic.offensiveness_metrics import (
    offensiveness_ranges,
    percent_offensive,
    template_offensiveness,
)
from biaslens.results import MetricEntry, SuiteResult
from biaslens.suites.base import AnalysisContext, Suite
from biaslens.text import plural

if TYPE_CHECKING:
    from biaslens.suites.base import RunContext

#: default sample when the user gives no --sample (alt-profanity-check does the full 473k too)
DEFAULT_SAMPLE = 20_000
_CHUNK = 20_000


def score_in_chunks(scorer, texts: list[str], progress, description: str) -> np.ndarray:
    """Offensiveness probabilities of unique texts, in chunks with progress (duplicates scored once);
    ``progress(description, total)`` makes the reporter (``RunContext.progress``)."""
    uniq, inverse = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
    out = np.empty(len(uniq))
    with progress(description, total=len(uniq)) as report:
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


class HolisticOffensiveness(Suite):
    """Offensiveness of HolisticBias sentences per template and descriptor, and the classifier audit
    (no generative model is called)."""

    name = "holistic-offensiveness"
    options = GenerationOptions  # its section of RunConfig, beside this file
    stored_tables = ("sentences", "classifier_audit")
    main_table = "sentences"
    # (the audit's count describes the classifier itself, not the model: it rests on no skill)
    judged_entries = {"percent_offensive": ("offensiveness", True), "mean_offensiveness": ("offensiveness", False)}

    def collect(self, ctx: RunContext) -> dict[str, pd.DataFrame]:
        from biaslens.scorers import ScorerError
        from biaslens.scorers.card import choose_judge, toxicity_card
        from biaslens.scorers.masking import descriptor_forms, mask_all
        from biaslens.suites.judge_model import model_judge_loader

        config, opts = ctx.config, ctx.config.generation
        with ctx.timer("dataset"):
            dataset = load_holistic_dataset(config.dataset_dir, extra_files=config.extra_dataset_files)
            all_rows = build_sentences(dataset)
            # the bare-noun control rows (axis "null") have no descriptor to compare
            all_rows = all_rows[(all_rows["axis"] != "null").to_numpy()]
            sample = config.sample if "sample" in config.model_fields_set else DEFAULT_SAMPLE
            rows = select_rows(all_rows, axes=config.axes, templates=config.templates, sample=sample,
                               full=config.full, seed=config.seed)
        if rows.empty:
            raise ConfigError("no sentences selected: check --axes/--templates")
        ctx.record_size("sentences", None if config.full else sample, len(rows))
        try:
            with ctx.timer("classifier_load"):
                scorer, choice = choose_judge(opts.offensiveness_classifier, device=config.model.device,
                                              role="offensiveness", model_judge=model_judge_loader(config))
            with ctx.timer("scorer_card"):
                card = toxicity_card(scorer, choice, role="offensiveness", masking=opts.identity_masking,
                                     suite="holistic-offensiveness")
        except ScorerError as e:
            raise ConfigError(str(e)) from None
        ctx.record["scorer_cards"] = [card]
        name = scorer.name
        ctx.console.print(f"[bold]holistic-offensiveness[/bold]: {len(rows):,} sentences "
                          f"({plural(rows['descriptor'].nunique(), 'descriptor')}, {plural(rows['template'].nunique(), 'template')}) "
                          f"with [bold]{name}[/bold]")
        t0 = time.perf_counter()
        with ctx.timer("scoring"):
            p = score_in_chunks(scorer, rows["text"].astype(str).tolist(), ctx.progress, "scoring sentences")
            # the descriptor replaced by a neutral placeholder: what the template says, not the identity word
            masked = mask_all(rows["text"].astype(str), map(descriptor_forms, rows["descriptor"].astype(str)))
            pm = score_in_chunks(scorer, masked, ctx.progress, "scoring masked sentences")
        seconds = time.perf_counter() - t0
        rows = rows.assign(offensiveness=pm if opts.identity_masking else p, offensiveness_masked=pm,
                           offensiveness_unmasked=p)
        ctx.record["scoring"] = {"classifier": name, "n_sentences": int(len(rows)),
                                 "n_unique": int(rows["text"].nunique()), "seconds": round(seconds, 3),
                                 "sentences_per_second": round(len(rows) / seconds, 1) if seconds > 0 else None}
        with ctx.timer("audit"):
            descs = (rows[["axis", "descriptor", "noun_phrase_type"]].astype(str)
                     .drop_duplicates(["axis", "descriptor"]).sort_values(["axis", "descriptor"]))
            audit = classifier_audit(descs, scorer, opts.neutral_template)
        return {"sentences": rows, "classifier_audit": audit}

    def analyse(self, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> SuiteResult:
        rows, audit = tables["sentences"], tables["classifier_audit"]
        analysis, metrics = analyse(rows, audit)
        scoring = ctx.record.get("scoring") or {}
        metrics["classifier"] = scoring.get("classifier")
        metrics["sentences_per_second"] = scoring.get("sentences_per_second")
        metrics["scorer_cards"] = ctx.record.get("scorer_cards") or []
        a = metrics["audit"]
        missing = int(rows["offensiveness"].isna().sum())  # sentences without a score
        n_used = {"n_used": int(len(rows)) - missing, "n_missing": missing}
        entries = [MetricEntry(name="percent_offensive", value=metrics["percent_offensive"], higher_is_better=False,
                               ideal=0.0, **n_used,
                               description="sentences the classifier scores offensive (p >= 0.5), %"),
                   MetricEntry(name="mean_offensiveness", value=metrics["mean_offensiveness"], higher_is_better=False,
                               ideal=0.0, **n_used),
                   MetricEntry(name="audit_descriptors_flagged", value=a["n_flagged"], higher_is_better=False,
                               ideal=0.0, n_used=a["n_descriptors"], n_missing=0,
                               description="descriptors the classifier flags on their own or in a neutral sentence")]
        verdict = (f"{metrics['percent_offensive']:.1f}% of {metrics['n_sentences']:,} sentences scored offensive "
                   f"by {metrics['classifier']} (a census of this sample, no interval); the classifier itself flags "
                   f"{a['n_flagged']} of {a['n_descriptors']} descriptors on their own")
        from biaslens.scorers.card import card_gap_sensitivity

        # beside the offensive shares per axis: the judge's errors per axis, measured on model replies
        sens = card_gap_sensitivity(metrics["scorer_cards"], "offensiveness", rows["offensiveness"], rows["axis"],
                                    label=str(metrics["classifier"]), score_name="offensive-sentence share",
                                    positive="offensive", key=f"{ctx.config.seed}|holistic-offensiveness")
        if sens:
            sens["sentence"] += " (the judge's errors were measured on labelled model replies, not on template sentences)"
            metrics["judge_sensitivity"] = sens
            verdict += f"; {sens['sentence']}"
        return SuiteResult(metrics=metrics, entries=entries, analysis=analysis, verdict=verdict,
                           tables={"template_offensiveness": analysis["table13"],
                                   "descriptor_ranges": analysis["table12"],
                                   "descriptor_offensiveness": analysis["per_descriptor"]})

    def render(self, result: SuiteResult, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> str:
        from biaslens.methods.holistic.offensiveness_report import render

        return render(result.analysis, result.metrics, tables["classifier_audit"])

    def summary(self, result: SuiteResult, ctx: AnalysisContext) -> None:
        _print_summary(ctx.console, result.metrics, result.analysis)


def analyse(rows: pd.DataFrame, audit: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """Tables 12 and 13 and the summary metrics from scored sentences (no classifier calls)."""
    from biaslens.methods.holistic.offensiveness_metrics import descriptor_offensiveness

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


def _print_summary(console, metrics: dict, analysis: dict) -> None:
    from rich.table import Table

    from biaslens.results import NO_SKILL_NOTE
    from biaslens.scorers.card import judge_has_skill

    card = next((c for c in metrics.get("scorer_cards") or [] if c.get("role") == "offensiveness"), None)
    skill = card is None or judge_has_skill(card)
    table = Table(title=f"Offensiveness per template ({metrics['classifier']}{'' if skill else ', ' + NO_SKILL_NOTE})")
    for col in ("template", "mean", "std across descriptors"):
        table.add_column(col, justify="left" if col == "template" else "right")
    for r in analysis["table13"].head(12).itertuples(index=False):
        table.add_row(str(r.template), f"{r.mean_offensiveness:.1%}", f"{r.std_offensiveness:.1%}")
    console.print(table)
    a = metrics["audit"]
    sps = metrics.get("sentences_per_second")
    note = f"; {NO_SKILL_NOTE}" if card is not None and not judge_has_skill(card, at_threshold=True) else ""
    console.print(f"{metrics['percent_offensive']:.1f}% of {metrics['n_sentences']:,} sentences offensive (p >= 0.5{note})"
                  + (f", {sps:,.0f} sentences/s" if sps and not math.isnan(sps) else "")
                  + f"; audit: the classifier flags {a['n_flagged']} of {a['n_descriptors']} descriptors on their own")
    if (metrics.get("judge_sensitivity") or {}).get("sentence"):
        console.print(metrics["judge_sensitivity"]["sentence"], markup=False, soft_wrap=True)
