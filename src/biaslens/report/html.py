"""Self-contained HTML reports: one file, plots embedded as PNG data, every piece of
text (model output, user data, descriptors) HTML-escaped by Jinja2's autoescape."""

from __future__ import annotations

import base64
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from biaslens.report.glossary import glossary_for, human_name
from biaslens.text import plural, shorten


@dataclass
class Figure:
    title: str
    png: bytes
    caption: str = ""

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


#: longer text cells (model output) are cut, on a character boundary, with an ellipsis: the
#: run folder's files hold them whole
MAX_CELL_CHARS = 1500
_NUMERIC = re.compile(r"[-+\u2212]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?")


@dataclass(frozen=True)
class Cell:
    """One table cell: its text and whether it is a number (or an interval of two), which is
    never wrapped ("3.02e-" / "11" reads as two numbers)."""
    text: str
    numeric: bool = False

    @classmethod
    def of(cls, v: Any, limit: int | None = MAX_CELL_CHARS) -> Cell:
        if isinstance(v, (bool, np.bool_)) or v is None:
            return cls(str(v))
        if isinstance(v, (int, float, np.integer, np.floating)):
            return cls(_fmt(float(v) if isinstance(v, np.floating) else v), True)
        text = str(v) if limit is None else shorten(str(v), limit)
        return cls(text, _is_numeric(text))


def _is_numeric(text: str) -> bool:
    """A number, or numbers joined by " to ", "-", " / " with an optional parenthesised note
    ("0.12 to 0.45", "0.12-0.45 (percentile)", "3 / 4", "0.83 (0.71-0.91)")."""
    core = re.sub(r"\s*\([^()]*\)$", "", text.strip())
    if not core or not any(c.isdigit() for c in core):
        return False
    parts = re.split(r"\s+to\s+|\s*/\s*|(?<=\d)-(?=[-+\u2212]?[\d.])|\s+\u2013\s+", core)
    return all(_NUMERIC.fullmatch(p) or p == "\u2013" for p in parts)


@dataclass
class Table:
    title: str
    df: pd.DataFrame
    caption: str = ""
    max_rows: int = 60

    def rows(self) -> list[list[Cell]]:
        return [[Cell.of(v) for v in row] for row in self.df.head(self.max_rows).itertuples(index=False)]

    @property
    def columns(self) -> list[str]:
        """The headers a reader sees (:func:`~biaslens.report.glossary.human_name`); the files on
        disk keep the machine names."""
        return [human_name(c) for c in self.df.columns]

    @property
    def truncated(self) -> int:
        return max(0, len(self.df) - self.max_rows)


@dataclass
class Section:
    title: str
    intro: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    #: (text, relative path) links to other files of the same output, e.g. a suite's report
    links: list[tuple[str, str]] = field(default_factory=list)
    #: sentences shown as a list right after the intro (the card's one sentence per method)
    bullets: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for _, href in self.links:
            # only plain relative paths: never a scheme (javascript:, http:) or a parent folder
            if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*", href) or ".." in href.split("/"):
                raise ValueError(f"report link {href!r}: only relative paths inside the output folder")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3g}"
        return f"{v:.4g}"
    return str(v)


def interval_text(lo: Any, hi: Any) -> str:
    """An interval as one table cell, both ends to the interval's precision (:mod:`biaslens.rounding`:
    "0.01 to 0.46"), or "–" where either end is missing: two ci_low/ci_high columns are what pushes a
    wide table past the page."""
    from biaslens.rounding import interval

    lo, hi = pd.to_numeric(lo, errors="coerce"), pd.to_numeric(hi, errors="coerce")
    return interval(float(lo), float(hi)) if math.isfinite(lo) and math.isfinite(hi) else "–"


def intervals(lo, hi) -> list[str]:
    """:func:`interval_text` down two columns."""
    return [interval_text(a, b) for a, b in zip(lo, hi, strict=True)]


def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, **kwargs):
    """``(figure, axes)`` like ``pyplot.subplots``, on a standalone matplotlib Figure: no pyplot
    state and no global backend change, so a notebook user's plotting setup is left alone."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def figure_from_matplotlib(fig, title: str, caption: str = "") -> Figure:
    """PNG bytes of a matplotlib figure (made with :func:`subplots`)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return Figure(title=title, png=buf.getvalue(), caption=caption)


def _words(name: Any):
    """A header (escaped) that wraps only at its spaces: each word is kept whole ("p-value",
    "3.02e-11", "95%" never split at a hyphen or a digit)."""
    from markupsafe import Markup

    return Markup(" ").join(Markup('<span class="w">%s</span>') % w for w in str(name).split())


def _metric_cell(v: Any) -> Cell:
    """A value of a section's metrics list, formatted like a table cell (never cut: these are the
    report's own words)."""
    return Cell.of(v, limit=None)


_env = Environment(loader=PackageLoader("biaslens.report", "templates"), autoescape=select_autoescape(default=True))
_env.filters["fmt"] = _fmt
_env.filters["words"] = _words
_env.filters["cell"] = _metric_cell
_env.filters["plural"] = plural


def size_detail(run_record: dict[str, Any]) -> dict[str, str]:
    """The report header's size: what ran and what was asked for (run.json's ``size``); a
    stratified sample keeps whole groups, so the two can differ."""
    size = run_record.get("size") or {}
    if not size:
        return {}
    ran = f"{size['actual']:,} {size['unit']}"
    if size.get("requested") is None:
        return {"size": f"{ran} (full)"}
    return {"size": f"{ran} run; {size['requested']:,} requested (--sample: about N, whole "
                    "(axis, template, descriptor) groups)"}


def shown_names(sections: list[Section], extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Every name a page shows a number under: table headers and the sections' metric names (as
    shown), then ``extra`` (e.g. the metric names a card lists in rows), without repeats."""
    names = [*(c for s in sections for t in s.tables for c in t.columns),
             *(str(k) for s in sections for k in s.metrics), *extra]
    for t in (t for s in sections for t in s.tables):  # tables that name a metric per row
        for col in ("metric", "headline metric"):
            if col in t.df.columns:
                names += [str(v) for v in t.df[col].head(t.max_rows) if isinstance(v, str)]
    return list(dict.fromkeys(names))


def render_report(*, title: str, run: dict[str, Any], sections: list[Section], warnings: list[str] | None = None,
                  glossary_terms: list[str] | tuple[str, ...] = ()) -> str:
    """The whole report as one HTML string; ``warnings`` open it, in plain words, before any number.
    It ends with the glossary of the metrics it shows (``glossary_terms``: names it shows other
    than as table headers or metric names, e.g. in a table's rows)."""
    glossary = glossary_for(shown_names(sections, glossary_terms))
    return _env.get_template("report.html.j2").render(title=title, run=run, sections=sections, warnings=warnings or [],
                                                      glossary=glossary)


def with_headline(page: str, verdict: str | list[str] | None) -> str:
    """The report with its one-sentence verdict (escaped) right under the title: what a reader
    needs first, before any table. A list is one line per item (a leaderboard: one per method)."""
    if not verdict or "</h1>" not in page or 'class="headline"' in page:  # once: a suite's page may carry it already
        return page
    from markupsafe import escape

    if isinstance(verdict, list):
        items = "".join(f"<li>{escape(v)}</li>" for v in verdict)
        block = f'\n<div class="headline" role="status"><b>Verdict:</b><ul>{items}</ul></div>'
    else:
        block = f'\n<p class="headline" role="status"><b>Verdict:</b> {escape(verdict)}</p>'
    return page.replace("</h1>", "</h1>" + block, 1)

