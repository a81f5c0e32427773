"""Numbers as a reader should see them: no more digits than their uncertainty justifies.

One helper for every sentence and summary biaslens prints (the card, the reports' verdicts, the
terminal summaries); the run's JSON files keep full precision. A top-level module with no
imports of its own, so the pure metrics layer may use it too.

- an estimate with its interval is rounded to the interval's precision: the last digit shown is
  the second significant digit of the interval's width (``0.7581`` in ``0.6712 to 0.8234`` ->
  ``0.76 (95% CI 0.67 to 0.82)``; ``130.045`` in ``100.3 to 160.9`` -> ``130 (95% CI 100 to 161)``);
- a p-value gets 2 significant figures, and "< 0.001" below 0.001 (``p = 0.17``, ``p < 0.001``);
- a number without an interval gets 3 significant figures (``130.04501291588`` -> ``130``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["decimals_for", "estimate", "fixed", "interval", "level_text", "number", "pvalue", "p_text",
           "value_and_interval", "with_level"]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def decimals_for(width: float, sig: int = 2) -> int:
    """Decimal places that show ``sig`` significant figures of ``width`` (negative: round to
    tens, hundreds ...). ``decimals_for(0.1522) == 2``, ``decimals_for(60.6) == 0``,
    ``decimals_for(606) == -1``."""
    if not _finite(width) or width <= 0:
        raise ValueError(f"width must be a positive finite number, got {width!r}")
    return sig - 1 - math.floor(math.log10(width))


def fixed(x: float, decimals: int, *, signed: bool = False) -> str:
    """``x`` rounded to ``decimals`` places (negative: to tens, hundreds ...), thousands separated
    when it is an integer of 5 digits or more; never scientific notation. "-0" prints as "0"."""
    if not _finite(x):
        return "–"
    r = round(float(x), decimals)
    if r == 0:
        r = 0.0  # no "-0.00"
    sign = "+" if signed else ""
    if decimals <= 0:
        text = f"{int(r):{sign},d}" if abs(r) >= 10_000 else f"{int(r):{sign}d}"
    else:
        text = f"{r:{sign}.{decimals}f}"
    return text


def number(x: Any, sig: int = 3, *, signed: bool = False) -> str:
    """A number without an interval, to ``sig`` significant figures: 130.04501291588 -> "130",
    0.000123456 -> "0.000123", 12345.6 -> "12,300"; "–" when missing or not finite."""
    if not _finite(x):
        return "–"
    if x == 0:
        return "+0" if signed else "0"
    r = float(f"{float(x):.{sig}g}")  # round first: 9.996 -> 10.0 has its digits one place left
    return fixed(r, sig - 1 - math.floor(math.log10(abs(r))), signed=signed)


def pvalue(p: Any) -> str:
    """A p-value to 2 significant figures, "< 0.001" below 0.001: 0.16569986 -> "0.17",
    0.0499 -> "0.0499" (below 0.05, so never "0.050"), 0.0501 -> "0.050", 0.00042 -> "< 0.001", 1.0 -> "1.0"."""
    if not _finite(p):
        return "–"
    if p < 0.001:
        return "< 0.001"
    text = number(min(float(p), 1.0), 2)
    if float(text) >= 0.05 > p:  # 0.0498 is below 0.05: it must not print as 0.050
        text = number(float(p), 3)
    return text


def p_text(p: Any) -> str:
    """"p = 0.17" or "p < 0.001" (the form a sentence needs)."""
    s = pvalue(p)
    return f"p {s}" if s.startswith("<") else f"p = {s}"


def _places(lo: Any, hi: Any, sig: int) -> int | None:
    if _finite(lo) and _finite(hi) and hi > lo:
        return decimals_for(float(hi) - float(lo), sig)
    return None


def _end(x: Any, d: int, avoid: tuple[float, ...], signed: bool) -> str:
    """One end of an interval to ``d`` places, or more where it would round onto a value in
    ``avoid`` (0, an ideal of 50) that it is not: an interval that excludes 0 never prints 0 at its
    edge ("-0.71 to -0.004", not "-0.71 to +0.00"; "50.4 to 75" beside an ideal of 50, not "50")."""
    for _ in range(6):
        if not any(x != a and float(fixed(x, d)) == a for a in avoid):
            break
        d += 1
    return fixed(x, d, signed=signed)


def interval(lo: Any, hi: Any, *, sig: int = 2, signed: bool = False, decimals: int | None = None,
             avoid: tuple[float, ...] = (0.0,)) -> str:
    """"0.67 to 0.82": both ends to the interval's precision ("–" when an end is missing); more
    places where an end would round onto a value in ``avoid`` that it is not."""
    if not (_finite(lo) and _finite(hi)):
        return "–"
    d = decimals if decimals is not None else _places(lo, hi, sig)
    if d is None:  # a zero-width interval: nothing to set the precision, 3 significant figures
        return f"{number(lo, signed=signed)} to {number(hi, signed=signed)}"
    return f"{_end(lo, d, avoid, signed)} to {_end(hi, d, avoid, signed)}"


def estimate(value: Any, lo: Any = None, hi: Any = None, *, sig: int = 2, signed: bool = False,
             label: str = "95% CI", unit: str = "", avoid: tuple[float, ...] = (0.0,)) -> str:
    """An estimate with its interval, all three rounded to the interval's precision:
    ``estimate(0.7581, 0.6712, 0.8234) == "0.76 (95% CI 0.67 to 0.82)"``; ``unit`` follows each
    number (``estimate(58.61, 56.1, 61.2, unit="%") == "58.6% (95% CI 56.1% to 61.2%)"``). Without
    an interval the value alone, to 3 significant figures."""
    if not _finite(value):
        return "–"
    d = _places(lo, hi, sig)
    if d is None:
        return number(value, signed=signed) + unit
    prefix = f"{label} " if label else ""
    if unit:
        return (f"{fixed(value, d, signed=signed)}{unit} ({prefix}{_end(lo, d, avoid, signed)}{unit} to "
                f"{_end(hi, d, avoid, signed)}{unit})")
    return f"{fixed(value, d, signed=signed)} ({prefix}{interval(lo, hi, signed=signed, decimals=d, avoid=avoid)})"


def value_and_interval(value: Any, lo: Any = None, hi: Any = None, *, sig: int = 2,
                       signed: bool = False, avoid: tuple[float, ...] = (0.0,)) -> tuple[str, str]:
    """The value and its interval as two table cells, both to the interval's precision, so that
    a table shows the number a sentence says: ``value_and_interval(105.3, 75.8, 190.5) ==
    ("110", "80 to 190")``. Without an interval the value to 3 significant figures and "–"."""
    d = _places(lo, hi, sig) if _finite(value) else None
    if d is None:
        return (number(value, signed=signed) if _finite(value) else "–"), interval(lo, hi, sig=sig, signed=signed,
                                                                                    avoid=avoid)
    return fixed(value, d, signed=signed), interval(lo, hi, signed=signed, decimals=d, avoid=avoid)


def level_text(level: Any) -> str:
    """An interval's coverage as printed beside it: 0.95 -> "95%", 0.9 -> "90%", 1 - 0.05/8 ->
    "99.4%" (a Holm or Bonferroni step); None (an entry that records none) -> "95%"."""
    if not _finite(level) or not 0 < level < 1:
        return "95%"
    pct = 100 * float(level)
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:.1f}%"


def with_level(interval_text: str, level: Any) -> str:
    """A table cell's interval with its coverage: "87 to 129 (90%)"; "–" stays "–"."""
    return interval_text if interval_text in ("–", "") else f"{interval_text} ({level_text(level)})"
