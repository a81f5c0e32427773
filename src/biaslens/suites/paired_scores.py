"""One score per sentence of a minimal pair, for the suites that compare two forms of a sentence
(CrowS-Pairs, Winogender, WinoBias), through the run's cached scoring engine (``ctx.calls``).

- causal LMs (and the fake backend): the whole sentence's log-likelihood, every token scored
  after biaslens's start token (the formulation of lm-evaluation-harness's CrowS-Pairs task with
  ``prefix_token_id`` set to that token). For two sentences that differ in one word, the tokens
  before it are the same in both and cancel in the difference: the whole sentence and "the
  differing word and what follows it, given the prefix" give the same difference.
- masked LMs: CrowS-Pairs' pseudo-log-likelihood of the tokens the two sentences share
  (Nangia et al. 2020): each shared token masked in turn, its log-probability summed. The
  backend already scores every token with only that token masked (``HFMaskedBackend``); this
  keeps the shared ones (:func:`biaslens.methods.crows_pairs.metrics.shared_positions` over the
  tokenizer's ids, special tokens left out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from biaslens.errors import ConfigError
from biaslens.metrics.pair_preference import shared_positions
from biaslens.suites.base import Suite

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.models.base import TokenScores
    from biaslens.results import SuiteResult
    from biaslens.suites.base import AnalysisContext, RunContext


class PairPreferenceSuite(Suite):
    """A suite that scores the forms of each sentence and asks which one the model prefers
    (CrowS-Pairs, Winogender, WinoBias): one table of scored items, a report page over it, the
    per-group terminal summary, and metrics that carry how a sentence was scored and the caveats.

    ``class WinoBias(PairPreferenceSuite, table="twins", title="WinoBias", page="module:render",
    summary=("cells", "type.split"), caveats=CAVEATS)``; a suite with its own page or summary
    overrides ``render`` or ``summary``."""

    #: the method's name on its pages and in the terminal ("CrowS-Pairs")
    title: ClassVar[str] = ""
    #: the report page, "module:function" called with the result, the item table (``main_table``)
    #: and the run record
    page: ClassVar[str] = ""
    #: the terminal summary's per-group table: its key in the analysis and its first column's label
    summary_groups: ClassVar[tuple[str, str]] = ("", "")
    #: what the data and a likelihood comparison cannot tell; shown on every report
    caveats: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, *, table: str | None = None, title: str | None = None, page: str | None = None,
                          summary: tuple[str, str] | None = None, caveats: tuple[str, ...] | None = None,
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if table is not None:  # the one table collect returns: stored, re-read, and the items of RunResult
            cls.stored_tables, cls.main_table = (table,), table
        for name, value in (("title", title), ("page", page), ("summary_groups", summary), ("caveats", caveats)):
            if value is not None:
                setattr(cls, name, value)

    def render(self, result: SuiteResult, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> str:
        import importlib

        module, _, function = self.page.partition(":")
        return str(getattr(importlib.import_module(module), function)(result, tables[str(self.main_table)], ctx.record))

    def summary(self, result: SuiteResult, ctx: AnalysisContext) -> None:
        from biaslens.report.pair_preference import print_summary

        key, label = self.summary_groups
        print_summary(ctx.console, self.title, result, result.analysis[key], label)

    @property
    def record_key(self) -> str:
        """The run record's entry ``collect`` fills (``crows_pairs`` for ``crows-pairs``)."""
        return self.name.replace("-", "_")


    def run_metrics(self, ctx: AnalysisContext, stats: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """metrics.json: suite, model, alpha, the statistics, how a sentence was scored, ``extra``
        (in its order) and the caveats."""
        facts = ctx.record.get(self.record_key) or {}
        return {"suite": self.name, "model": ctx.model_name, "alpha": ctx.config.alpha, **stats,
                "score_definition": facts.get("scoring"), **extra, "caveats": list(self.caveats)}


def power_clause(stat: dict[str, Any], size: str = "a share {} points from 50%") -> str:
    """What a verdict that found no preference says of the design's power, ``size`` naming the
    smallest effect with ``{}`` for its number: "a share 12 points from 50% would be detected with 80%
    power" (not detected), "only a share 12+ points from 50% would be detected with 80% power at this
    size" (cannot tell)."""
    detectable = f"{stat['detectable']:.0f}"
    if stat["verdict"] == "not_detected":
        return f"{size.format(detectable)} would be detected with 80% power"
    return f"only {size.format(detectable + '+')} would be detected with 80% power at this size"


def scoring_definition(info) -> str:
    """What a pair's scores are, in words (recorded in run.json and the report)."""
    if info.kind == "masked":
        return "pseudo-log-likelihood of the tokens both sentences share, each masked in turn (Nangia et al. 2020)"
    if info.start_token is None and info.kind != "fake":
        return "whole-sentence log-likelihood, first token as context only (--no-start-token)"
    if info.kind == "fake":
        return "whole-sentence log-likelihood (fake backend)"
    return f"whole-sentence log-likelihood, every token scored after the start token {info.start_token!r}"


def _shared_pll(tokenizer, a: str, b: str, sa: TokenScores, sb: TokenScores) -> tuple[float, float]:
    enc = tokenizer([a, b], add_special_tokens=True, return_special_tokens_mask=True)
    sums = []
    ids = enc["input_ids"]
    pos_a, pos_b = shared_positions(ids[0], ids[1])
    for k, (positions, scores) in enumerate(((pos_a, sa), (pos_b, sb))):
        special = enc["special_tokens_mask"][k]
        rank = np.cumsum([not s for s in special]) - 1  # position -> index among the scored tokens
        if scores.n_tokens != int(rank[-1]) + 1:
            raise ConfigError(f"masked-LM scores of {(a, b)[k]!r} do not match its tokenization "
                              f"({scores.n_tokens} scored tokens, {int(rank[-1]) + 1} non-special)")
        keep = [int(rank[p]) for p in positions if not special[p]]
        sums.append(float(scores.logprobs[keep].sum()))
    return sums[0], sums[1]


def score_pairs(ctx: RunContext, first: list[str], second: list[str], *,
                what: str = "sentences") -> tuple[np.ndarray, np.ndarray, str]:
    """The two sentences' scores, pair by pair (nats; higher is likelier), and how they were made."""
    calls = ctx.calls
    texts = list(first) + list(second)
    with ctx.timer("scoring"), ctx.progress(f"scoring {what}", total=len(set(texts))) as report:
        scores = calls.score(texts, progress=report)
    ctx.record_calls("scoring")
    n = len(first)
    if calls.info.kind == "masked":
        tokenizer = getattr(calls.backend, "tokenizer", None)
        if tokenizer is None:
            raise ConfigError(f"{calls.info.name}: a masked LM needs its tokenizer to find the tokens a pair shares")
        pll = [_shared_pll(tokenizer, a, b, scores[i], scores[n + i]) for i, (a, b) in enumerate(zip(first, second))]
        a_scores = np.array([p[0] for p in pll], dtype=np.float64)
        b_scores = np.array([p[1] for p in pll], dtype=np.float64)
    else:
        a_scores = np.array([s.sum_logprob for s in scores[:n]], dtype=np.float64)
        b_scores = np.array([s.sum_logprob for s in scores[n:]], dtype=np.float64)
    return a_scores, b_scores, scoring_definition(calls.info)
