"""Winogender (Rudinger et al. 2018) for a language model: does it prefer the male, female or
neutral pronoun in sentences about occupations, and does its preference follow the occupation's
share of women (BLS)?

templates (shipped or ``--winogender-data-dir``) -> the male, female and neutral sentence of each
(template, participant) scored (causal: whole-sentence log-likelihood after the start token, which
for sentences that differ only in the pronoun equals the log-likelihood of the pronoun and what
follows it given the prefix; masked: the pseudo-log-likelihood of the shared tokens) -> per-template
differences, the share of templates where the male form is likelier, the correlation with BLS with
a bootstrap over occupations (each with its two templates), the "gotcha" templates -> run folder and report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from biaslens.comparison.pair_preference import pair_preference_comparison
from biaslens.methods.winogender.dataset import read_occupation_stats, read_winogender
from biaslens.methods.winogender.metrics import winogender_statistics
from biaslens.methods.winogender.options import WinogenderOptions
from biaslens.results import MetricEntry, SuiteResult, verdict_words
from biaslens.rounding import estimate, level_text, p_text
from biaslens.suites.base import AnalysisContext, CardSpec
from biaslens.suites.paired_scores import PairPreferenceSuite, power_clause, score_pairs

if TYPE_CHECKING:
    from biaslens.suites.base import RunContext

CAVEATS = (
    "Winogender was built to test coreference systems; a language model's likelihood of a pronoun measures "
    "how expected that pronoun is in the sentence, not which person it is resolved to.",
    "Gautam et al. (2024, WinoPron) found templates that treat different grammatical cases of a pronoun alike, "
    "violated template constraints and typos; the neutral sentences also change verb agreement ('they were').",
    "The occupation statistics are U.S. Bureau of Labor Statistics figures for 2015; 60 occupations, two "
    "templates each: the correlation rests on 60 points.",
)


class Winogender(PairPreferenceSuite, table="sentences", caveats=CAVEATS):
    """Winogender: per-template male/female/neutral differences and their correlation with BLS."""

    name = "winogender"
    options = WinogenderOptions
    card = CardSpec("Winogender (pronoun preference vs occupation statistics)", "likelihood", {
        "smoke": {}, "default": {}, "paper": {}})  # 720 sentences: every budget runs them all
    compare = pair_preference_comparison("winogender", "Winogender", "the male sentence scores higher",
                                         table="sentences")

    def collect(self, ctx: RunContext) -> dict[str, pd.DataFrame]:
        opts: WinogenderOptions = ctx.options
        with ctx.timer("dataset"):
            rows = read_winogender(opts.data_dir)
            read_occupation_stats(opts.data_dir)  # checked now, before any model call
        ctx.record_size("sentences", None, 3 * len(rows))
        ctx.console.print(f"[bold]winogender[/bold]: {rows['template'].nunique()} templates, {3 * len(rows)} sentences "
                          f"on [bold]{ctx.calls.info.name}[/bold]")
        male, female, how = score_pairs(ctx, rows["male"].tolist(), rows["female"].tolist(), what="male/female")
        male_n, neutral, _ = score_pairs(ctx, rows["male"].tolist(), rows["neutral"].tolist(), what="male/neutral")
        female_n, neutral_f, _ = score_pairs(ctx, rows["female"].tolist(), rows["neutral"].tolist(),
                                             what="female/neutral")
        rows = rows.assign(score_male=male, score_female=female, score_neutral=neutral, d_mf=male - female,
                           d_mn=male_n - neutral, d_fn=female_n - neutral_f,
                           item=rows["template"] + "." + rows["participant"], unit=rows["template"],
                           prefers=male > female)
        ctx.record[self.record_key] = {"scoring": how, "data_dir": str(opts.data_dir or "shipped")}
        return {"sentences": rows}

    def analyse(self, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> SuiteResult:
        opts: WinogenderOptions = ctx.options
        stats_, per_template = winogender_statistics(tables["sentences"], read_occupation_stats(opts.data_dir),
                                                     alpha=ctx.config.alpha, n_boot=opts.n_bootstrap,
                                                     seed=ctx.config.seed)
        metrics = self.run_metrics(ctx, stats_)
        return SuiteResult(metrics=metrics, entries=_entries(stats_), verdict=winogender_verdict(stats_),
                           tables={"templates": per_template}, analysis=per_template)

    def render(self, result: SuiteResult, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> str:
        from biaslens.methods.winogender.report import render

        return render(result, ctx.record)

    def summary(self, result: SuiteResult, ctx: AnalysisContext) -> None:
        console: Any = ctx.console
        console.print(f"Winogender: {result.verdict}", soft_wrap=True, markup=False, highlight=False)
        for e in result.entries:
            console.print(f"  {e.name}: {estimate(e.value, e.ci_low, e.ci_high, label=f'{level_text(e.level)} CI')} "
                          f"({verdict_words(e.verdict)})", markup=False, highlight=False)


def _share(name: str, s: dict[str, Any], description: str) -> MetricEntry:
    level = s.get("level") or 0.95
    holm_note = ", Holm over the 2 tests of the run's sentence" if s.get("family") else ""
    return MetricEntry(name=name, value=s["share"], ci_low=s["ci_low"], ci_high=s["ci_high"],
                       interval=f"{100 * level:.4g}% Wilson score interval over templates, clustered by occupation"
                                + (" (Holm's step level)" if s.get("family") else ""),
                       higher_is_better=None, ideal=50.0, n_used=s["n"], n_missing=s["n_missing"], level=level,
                       df=s["df"], test=f"score test of 50% (inverts to the interval){holm_note}",
                       p_value=s.get("p_holm", s["p"]), detectable=s["detectable"], verdict=s["verdict"],
                       description=description)


def _mean(name: str, m: dict[str, Any], description: str) -> MetricEntry:
    return MetricEntry(name=name, value=m["mean"], ci_low=m["ci_low"], ci_high=m["ci_high"],
                       interval="95% t-interval over templates, clustered by occupation", higher_is_better=None, ideal=0.0, n_used=m["n"],
                       n_missing=m["n_missing"], level=0.95, df=m["df"], test="t-test of 0", p_value=m["p"],
                       detectable=m["detectable"], verdict=m["verdict"], description=description)


def _entries(s: dict[str, Any]) -> list[MetricEntry]:
    c = s["correlation"]
    return [
        MetricEntry(name="correlation_bls", value=c["r"], ci_low=c["ci_low"], ci_high=c["ci_high"],
                    interval=f"{100 * c['level']:.4g}% test-based interval on Fisher's z scale, inverting the "
                             f"permutation test (Holm's step level); percentile bootstrap over occupations "
                             f"{c['boot_ci_low']:+.2f} to {c['boot_ci_high']:+.2f}", higher_is_better=None,
                    ideal=0.0, n_used=c["n_occupations"], n_missing=0, level=c["level"],
                    test=f"permutation test of r = 0 over occupations ({c['n_permutations']} permutations), Holm over "
                         "the 2 tests of the run's sentence",
                    p_value=c["p_holm"], detectable=c["detectable"], verdict=c["verdict"],
                    description="Pearson r across occupations of the female preference (score female - male) with "
                                "the occupation's share of women (BLS 2015); > 0: the preference follows the statistic"),
        _share("share_male", s["share_male"], "percent of templates whose male sentence scores higher than the female"),
        _mean("mean_diff_male_female", s["mean_d_mf"], "mean over templates of score(male) - score(female), nats"),
        _mean("mean_diff_male_neutral", s["mean_d_mn"], "mean of score(male) - score(neutral), nats"),
        _mean("mean_diff_female_neutral", s["mean_d_fn"], "mean of score(female) - score(neutral), nats"),
        _share("share_majority_gotcha", s["share_majority_gotcha"], (
            "templates whose pronoun refers to the occupation: percent where the occupation's majority-gender (BLS) "
            "sentence scores higher than the minority-gender 'gotcha' sentence")),
        _share("share_majority_participant", s["share_majority_participant"], (
            "templates whose pronoun refers to the other participant: percent where the occupation's "
            "majority-gender sentence scores higher")),
    ]


def winogender_verdict(s: dict[str, Any]) -> str:
    """The run in one sentence: the correlation with BLS and the share of the side it names, each
    with its interval at its Holm step's level (Holm over the two tests) and its verdict."""
    c, m = s["correlation"], s["share_male"]
    r = estimate(c["r"], c["ci_low"], c["ci_high"], signed=True, label=f"{level_text(c['level'])} CI")
    p_c = p_text(c["p_holm"]) + ", permutation test, Holm over 2"
    if c["verdict"] == "detected":
        corr = (f"the model's preference for the female pronoun {'follows' if c['r'] > 0 else 'runs against'} the "
                f"occupation's share of women (BLS): r = {r} over {c['n_occupations']} occupations ({p_c})")
    elif c["verdict"] == "not_detected":
        corr = (f"no relation detected between the model's pronoun preference and the occupation's share of women: "
                f"r = {r} over {c['n_occupations']} occupations ({p_c}; r of {c['detectable']:.2f} would be detected "
                "with 80% power)")
    else:
        corr = (f"cannot tell whether the model's pronoun preference follows the occupation's share of women: r = {r} "
                f"over {c['n_occupations']} occupations ({p_c}); only r of {c['detectable']:.2f} or more would be "
                "detected with 80% power")
    p_s = p_text(m["p_holm"]) + ", Holm over 2"
    level = f"{level_text(m['level'])} CI"
    if m["verdict"] == "detected":
        # the share printed is the share of the side named (ties count for neither side)
        side, sh = ("male", m) if m["share"] > 50 else ("female", s["share_female"])
        share = estimate(sh["share"], sh["ci_low"], sh["ci_high"], unit="%", label=level)
        male = f"the {side} sentence is likelier in {share} of {m['n']} templates ({p_s}; ideal 50%)"
    else:
        share = estimate(m["share"], m["ci_low"], m["ci_high"], unit="%", label=level)
        if m["verdict"] == "not_detected":
            male = (f"no preference for either pronoun detected: the male sentence is likelier in {share} of {m['n']} "
                    f"templates ({p_s}; {power_clause(m)})")
        else:
            male = (f"cannot tell whether the model prefers either pronoun: the male sentence is likelier in {share} "
                    f"of {m['n']} templates ({p_s}); {power_clause(m)}")
    return f"{corr}; {male}"
