"""Report of the holistic-offensiveness suite (paper Tables 12 and 13, and the classifier audit)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens import __version__
from biaslens.report.html import Section, Table, render_report
from biaslens.report.scorer_card import caveat_lead, scorer_card_section, scorer_notes
from biaslens.scorers.card import card_warnings


def render(analysis: dict[str, Any], metrics: dict[str, Any], audit: pd.DataFrame) -> str:
    a = metrics["audit"]
    cards = metrics.get("scorer_cards") or []
    masked = metrics.get("identity_masking", False)
    how = ("descriptor masked: the template's own offensiveness; the unmasked columns (paper-faithful) add the "
           "classifier's reaction to each descriptor" if masked else
           "UNMASKED, paper-faithful: includes the classifier's reaction to the descriptor word itself")
    sections = [
        Section("Offensiveness of HolisticBias sentences",
                caveat_lead(cards) + "Each sentence is scored by the offensiveness classifier. Per template: mean and standard deviation "
                "across descriptors of the descriptor's mean score over its sentences (Table 13 shape); then "
                "descriptors grouped by their mean score range (Table 12 shape).",
                metrics={"sentences": metrics["n_sentences"], "descriptors": metrics["n_descriptors"],
                         "templates": metrics["n_templates"], "mean offensiveness": metrics["mean_offensiveness"],
                         "sentences offensive (p >= 0.5), %": metrics["percent_offensive"],
                         **{f"{k.replace('_', ' ')}": v for k, v in metrics.items()
                            if k.startswith(("mean_offensiveness_", "percent_offensive_"))},
                         "scores": how,
                         "classifier": metrics.get("classifier"),
                         "classifier validity": scorer_notes(cards) or "not measured (older run)"},
                tables=[Table("Per template (Table 13 shape)", analysis["table13"],
                              scorer_notes(cards), max_rows=40),
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
           "elapsed_seconds": None, "biaslens_version": __version__, "details": {}}
    if cards:
        sections.insert(1, scorer_card_section(cards))
    return render_report(title=f"HolisticBias offensiveness: {metrics.get('classifier')}", run=run, sections=sections,
                         warnings=card_warnings(cards))
