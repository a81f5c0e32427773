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

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from biaslens.config import RunConfig
    from biaslens.results import SuiteResult
    from biaslens.runner import RunContext


@dataclass
class AnalysisContext:
    """What ``analyse``, ``render`` and ``summary`` may read: the configuration, the run
    record (run.json as written so far: model identity, scoring stats) and the folder.
    The same in a run and in a re-render."""

    config: RunConfig
    record: dict[str, Any]
    out: Path
    console: Console | None = None
    timings: dict[str, float] = field(default_factory=dict)

    options: Any = None  # the suite's own options (Suite.options), validated

    @property
    def model_name(self) -> str | None:
        return (self.record.get("model") or {}).get("name")


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

    def parse_options(self, config: RunConfig) -> BaseModel | None:
        """This suite's options from the run configuration, or a ConfigError naming the field."""
        if self.options is None:
            return None
        section = getattr(self.options, "section", "")
        if section and section in type(config).model_fields:  # validated with the configuration
            return getattr(config, section)
        from pydantic import ValidationError

        from biaslens.config import ConfigError

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
        """The HTML report."""
        raise NotImplementedError

    def summary(self, result: SuiteResult, ctx: AnalysisContext) -> None:
        """A few lines for the terminal (the runner adds warnings and the report path)."""
