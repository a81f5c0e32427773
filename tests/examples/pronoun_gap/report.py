"""The report section, and the section `biaslens compare` shows for several models."""

import pandas as pd

from biaslens.report.html import Section, Table, render_report


def report_page(result, ctx) -> str:
    section = Section("Pronoun gap", result.verdict, tables=[Table("Per occupation", result.tables["gaps"])])
    run = {"suite": "pronoun-gap", "model": ctx.model_name, "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": "", "details": {}}
    return render_report(title=f"Pronoun gap: {ctx.model_name}", run=run, sections=[section])


def compare_gaps(entries):
    """`biaslens compare`: each model's mean gap with its interval (a table) and the metrics."""
    heads = {e.label: e.metrics["pronoun-gap"]["entries"][0] for e in entries if "pronoun-gap" in e.metrics}
    if not heads:
        return [], {}
    rows = pd.DataFrame([{"model": label, "mean_log_ppl_gap": h["value"], "ci_low": h["ci_low"],
                          "ci_high": h["ci_high"]} for label, h in heads.items()])
    section = Section("Pronoun gap per model", "Mean log perplexity gap with its 95% t-interval over occupations.",
                      tables=[Table("Pronoun gap", rows)])
    return [section], {"mean_log_ppl_gap": {label: h["value"] for label, h in heads.items()}}
