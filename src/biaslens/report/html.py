"""Self-contained HTML reports: one file, plots embedded as PNG data, every piece of
text (model output, user data, descriptors) HTML-escaped by Jinja2's autoescape."""

from __future__ import annotations

import base64
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape


@dataclass
class Figure:
    title: str
    png: bytes
    caption: str = ""

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class Table:
    title: str
    df: pd.DataFrame
    caption: str = ""
    max_rows: int = 60

    def rows(self) -> list[list[str]]:
        return [[_fmt(v) for v in row] for row in self.df.head(self.max_rows).itertuples(index=False)]

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.df.columns]

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
    """An interval as one table cell, "0.0123 to 0.456", or "–" where either end is missing: two
    ci_low/ci_high columns are what pushes a wide table past the page."""
    lo, hi = pd.to_numeric(lo, errors="coerce"), pd.to_numeric(hi, errors="coerce")
    return f"{lo:.3g} to {hi:.3g}" if math.isfinite(lo) and math.isfinite(hi) else "–"


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


def _breakable(name: Any):
    """A column name (escaped) that may wrap after each underscore: "abs_log_median_ratio" is one
    unbreakable word to the browser, and a row of them pushes a table past the page width."""
    from markupsafe import Markup, escape

    return Markup("_<wbr>").join(escape(part) for part in str(name).split("_"))


_env = Environment(loader=PackageLoader("biaslens.report", "templates"), autoescape=select_autoescape(default=True))
_env.filters["fmt"] = _fmt
_env.filters["breakable"] = _breakable


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


def render_report(*, title: str, run: dict[str, Any], sections: list[Section], warnings: list[str] | None = None) -> str:
    """The whole report as one HTML string; ``warnings`` open it, in plain words, before any number."""
    return _env.get_template("report.html.j2").render(title=title, run=run, sections=sections, warnings=warnings or [])


def with_headline(page: str, verdict: str | None) -> str:
    """The report with its one-sentence verdict (escaped) right under the title: what a reader
    needs first, before any table."""
    if not verdict or "</h1>" not in page:
        return page
    from markupsafe import escape

    block = f'\n<p class="headline" role="status"><b>Verdict:</b> {escape(verdict)}</p>'
    return page.replace("</h1>", "</h1>" + block, 1)

