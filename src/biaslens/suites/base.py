"""What a suite declares. The runner (:mod:`biaslens.runner`) does the rest.

A suite says which items it sends to the model and what it makes of the answers::

    collect(ctx)          -> the tables the run keeps (model calls through ctx.calls)
    analyse(tables, ctx)  -> SuiteResult (pure: no model; also what `biaslens report` re-runs)
    render(result, ctx)   -> report.html
    summary(result, ctx)  -> the terminal summary

The runner owns the run folder, loading the model, the call cache, progress, timings,
writing the tables, ``metrics.json`` and the report, and re-rendering a finished run.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel

#: biaslens.config.RunConfig, named only in annotations: config composes RunConfig from the
#: registry (biaslens.suites), so importing it here, even for type checking, would close a circle
RunConfig = Any

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from biaslens.engine.calls import ModelCalls
    from biaslens.engine.scoring import ScoringStats
    from biaslens.models.base import Backend
    from biaslens.results import SuiteResult


class AnalysisContext(Protocol):
    """What ``analyse``, ``render`` and ``summary`` may read: the configuration, the run
    record (run.json as written so far: model identity, scoring stats) and the folder.
    The same in a run and in a re-render (the runner's :class:`biaslens.runner.AnalysisContext`)."""

    config: RunConfig
    record: dict[str, Any]
    out: Path
    console: Console | None
    timings: dict[str, float]
    options: Any  # the suite's own options (Suite.options), validated

    @property
    def model_name(self) -> str | None: ...


class RunContext(Protocol):
    """What a suite's ``collect`` gets from the runner (:class:`biaslens.runner.RunContext`):
    the model calls, progress, timers and the run record. A protocol, so that suites never
    import the runner."""

    config: RunConfig
    options: Any  # the suite's own options (Suite.options), validated; None for the built-in suites
    console: Any

    @property
    def record(self) -> dict[str, Any]:
        """run.json's suite-specific part (written with the run's status)."""

    @property
    def out(self) -> Path: ...

    @property
    def calls(self) -> ModelCalls:
        """The run's model (``config.model``), loaded on first use; its identity goes into run.json."""

    @property
    def given_backend(self) -> Any:
        """What the caller passed as ``backend=`` (a Backend, a mapping name -> Backend, or None)."""

    @property
    def model_loaded(self) -> bool: ...

    def timer(self, name: str) -> AbstractContextManager[Any]:
        """Time a phase into run.json's ``timings``."""

    def progress(self, description: str, total: int) -> AbstractContextManager[Any]:
        """A progress reporter (bar on a terminal, log lines otherwise, projected finish)."""

    def write_text(self, name: str, text: str) -> None:
        """An extra file of the run folder."""

    def other_model(self, config: RunConfig, backend: Backend | None = None, *,
                    timer: str | None = None) -> AbstractContextManager[ModelCalls]:
        """Another model for the length of a ``with`` block, closed at the end."""

    def record_calls(self, key: str = "scoring", stats: ScoringStats | None = None) -> None:
        """Write the model-call statistics into run.json under ``key``."""

    def record_size(self, unit: str, requested: int | None, actual: int) -> None:
        """run.json's ``size``: the items asked for and those that actually ran."""


def sample_continuations(ctx: RunContext, prompts: list[str], *, samples: int, max_new_tokens: int,
                         temperature: float, top_p: float, chat: bool) -> list[list[str]]:
    """``samples`` seeded continuations of each prompt (the run's seed), with progress, timed as
    "generation" and recorded in run.json's ``generation``: the sampling loop every open-generation
    method shares. A model that cannot continue text (a masked LM) is a configuration error."""
    from biaslens.engine.scoring import ScoringStats
    from biaslens.errors import ConfigError
    from biaslens.models import GenerationParams, GenerationRequest

    calls = ctx.calls
    if calls.info.kind not in ("causal", "fake", "seq2seq"):
        raise ConfigError(f"{calls.info.name}: a {calls.info.kind} model cannot continue prompts; use a causal LM")
    params = GenerationParams(max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature, top_p=top_p,
                              n=samples, seed=ctx.config.seed, chat=chat)
    stats = ScoringStats()
    with ctx.timer("generation"), ctx.progress("generating continuations", total=len(prompts) * samples) as report:
        outs = calls.generate([GenerationRequest(prompt=p) for p in prompts], params, progress=report, stats=stats)
    ctx.record["generation"] = {"params": params.key_params() | {"n": params.n}, "n_generations": stats.n_texts,
                                **stats.cost(), **stats.generation_speed()}
    return outs


def model_calls(ctx: RunContext, name: str | None) -> AbstractContextManager[ModelCalls]:
    """The calls of the model ``name`` for a ``with`` block: the evaluated model's (the run's, cache
    included) when ``name`` is None or names it, else another model loaded for the block (an LLM
    perturber's model)."""
    import contextlib

    config = ctx.config
    if name is None or name == (ctx.calls.info.name if ctx.model_loaded else config.model.name):
        return contextlib.nullcontext(ctx.calls)
    return ctx.other_model(config.model_copy(update={"model": config.model.model_copy(
        update={"name": name, "backend": "auto", "kind": "auto", "start_token": None})}))


@dataclass(frozen=True)
class CardSpec:
    """A suite's row on the bias card (``biaslens card``): its title, what it asks of the
    model, and its settings per budget (merged into the run configuration)."""

    title: str
    #: what the method asks of the model; masked LMs only have likelihoods
    needs: str  # "likelihood" | "generation"
    #: budget ("smoke", "default", "paper") -> run settings; "smoke" checks the wiring at small
    #: sizes, "default" gives verdicts worth reading on the embedded model on a 2-core CPU, "paper"
    #: uses the suite's own (paper-sized) defaults
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: what the user must give the card for this method (``biaslens card --prompts FILE``): input name ->
    #: the dotted configuration field it sets (e.g. ``{"prompts": "counterfactual.prompts"}``); a method
    #: whose inputs are not all given is left off the card
    inputs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteComparison:
    """A suite's own section of ``biaslens compare`` (and of a bias card comparison):
    ``section(entries, options) -> (report sections, metrics)`` over the compared models'
    :class:`biaslens.comparison.entries.Entry` list (none when no entry ran the suite), and
    ``lines(metrics) -> terminal lines``. A suite without one is compared by its headline."""

    section: Callable[..., tuple[list[Any], dict[str, Any]]]
    lines: Callable[[dict[str, Any]], list[str]] | None = None


class Suite:
    """Base class of a suite declaration (one subclass per method, registered by name
    in :data:`biaslens.suites.SUITES`)."""

    #: the registry name (``biaslens run <name>``)
    name: ClassVar[str]
    #: the tables ``collect`` returns; the run folder keeps them and re-rendering reads
    #: them back (a name ending in ``?`` is optional)
    stored_tables: ClassVar[tuple[str, ...]] = ()
    #: the per-item table ``RunResult.sentences`` points to
    main_table: ClassVar[str | None] = None
    #: the suite's own options (a pydantic model): a section of RunConfig when declared in the
    #: light module beside the suite (``<module>_options.py``, see biaslens.config.suite_sections),
    #: else read from ``RunConfig.options[name]``
    options: ClassVar[type[BaseModel] | None] = None
    #: its row on the bias card (None: not on the card)
    card: ClassVar[CardSpec | None] = None
    #: the report page's renderer, "module:function" taking ``analysis=, metrics=, run_record=``,
    #: imported when a report is rendered; a suite whose page needs more overrides ``render``
    report_page: ClassVar[str | None] = None
    #: ``biaslens export lm-eval --suite NAME``: "module:function" writing its texts as an
    #: lm-evaluation-harness task, ``function(config, out) -> {"n_rows", "task"}`` (None: no export)
    lm_eval_export: ClassVar[str | None] = None
    #: its own comparison in ``biaslens compare`` (None: compared by its headline entry)
    compare: ClassVar[SuiteComparison | None] = None
    #: the entries that rest on a judge: entry name (or the part before its first ".") -> (the
    #: judge's role in the run's scorer cards, whether the number counts texts above the judge's
    #: threshold[, whether it compares groups: then the judge must beat a score that knows only the
    #: group, issue #41]); the runner fills ``MetricEntry.judge`` / ``judge_has_skill`` from the cards and
    #: says "judge without measured skill" next to such numbers (biaslens.scorers.card.judge_has_skill)
    judged_entries: ClassVar[dict[str, tuple[str, bool] | tuple[str, bool, bool]]] = {}

    def parse_options(self, config: RunConfig) -> BaseModel | None:
        """This suite's options from the run configuration, or a ConfigError naming the field."""
        if self.options is None:
            return None
        section = getattr(self.options, "section", "")
        if section and section in type(config).model_fields:  # validated with the configuration
            return getattr(config, section)
        from pydantic import ValidationError

        from biaslens.errors import ConfigError

        try:
            return self.options.model_validate(config.options.get(self.name) or {})
        except ValidationError as e:
            raise ConfigError("\n".join(
                f"field 'options.{self.name}.{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"
                for err in e.errors())) from None

    def collect(self, ctx: RunContext) -> dict[str, pd.DataFrame]:
        """Build the items, call the model through ``ctx.calls`` and return the tables
        to keep. Anything else worth recording goes into ``ctx.record``."""
        raise NotImplementedError

    def analyse(self, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> SuiteResult:
        """Metrics from the stored tables, no model calls."""
        raise NotImplementedError

    def render(self, result: SuiteResult, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> str:
        """The HTML report: ``report_page`` over the analysis and the metrics."""
        if self.report_page is None:
            raise NotImplementedError(f"{self.name}: set report_page or override render")
        import importlib

        module, _, function = self.report_page.partition(":")
        page = getattr(importlib.import_module(module), function)
        return str(page(analysis=result.analysis, metrics=result.metrics, run_record=ctx.record))

    def summary(self, result: SuiteResult, ctx: AnalysisContext) -> None:
        """A few lines for the terminal (the runner adds warnings and the report path)."""
