"""The bias regression gate in Python: :func:`compare_gate` (``biaslens compare BEFORE AFTER
--fail-on worse``). Kept apart from :mod:`biaslens.comparison.change` (the decision), which the
suites' own comparisons import: the gate reads bias cards, which a suite may not."""

from __future__ import annotations

from pathlib import Path

from biaslens.comparison.change import GateResult, gate


def compare_gate(before: str | Path, after: str | Path, *, out: str | Path | None = None,
                 labels: list[str] | None = None, intersection: bool = False) -> GateResult:
    """The bias regression gate in Python (``biaslens compare BEFORE AFTER --fail-on worse``):
    compare two bias cards method by method, or two runs (or model folders) suite by suite,
    write the comparison page, and decide. ``exit_code``: 1 when a method got distinguishably
    worse, 2 when the two cannot be compared (a card with a run, different sizes, data,
    decoding or scorer), else 0; ``lines``: one reason per method.

    >>> decision = biaslens.compare_gate("runs/card-current", "runs/card-new")   # doctest: +SKIP
    >>> sys.exit(decision.exit_code)                                             # doctest: +SKIP
    """
    from biaslens.bias_card import compare_cards, is_card
    from biaslens.comparison.runs import compare_runs
    from biaslens.errors import ConfigError

    try:
        if is_card(before) and is_card(after):
            result = gate(compare_cards(before, after, out=out)["methods"])
        else:
            metrics = compare_runs([before, after], out, labels, intersection=intersection, min_models=2)
            result = gate([c for by_model in (metrics.get("changes") or {}).values() for c in by_model.values()])
    except ConfigError as e:  # the comparison itself was refused: not comparable
        return GateResult(2, [f"not comparable: {e}"], [])
    return result
