"""Tables for the terminal that stay readable at any width: a table where every cell fits whole,
else each row stacked as ``column: value`` lines (a CI job's log is often 80 columns wide; a
table squeezed into it shows ellipses or cells broken over four lines)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def print_table(console: Any, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                left: Sequence[str] = (), key_columns: int = 1) -> None:
    """``rows`` under ``columns`` on ``console``: a table when it fits the console's width with
    every cell whole, else one block per row headed by its first ``key_columns`` cells, the other
    cells beneath as ``column: value``. Cells are text, never markup; ``left``: left-aligned columns."""
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    cells = [[str(c) for c in r] for r in rows]
    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="left" if c in left else "right", no_wrap=True)
    for r in cells:
        table.add_row(*(Text(c) for c in r))
    # its natural width (measured without the console's limit, which a measure would clamp it to)
    if Measurement.get(console, console.options.update_width(100_000), table).maximum <= console.width:
        console.print(table)
        return
    console.print(Text(title, style="italic"))
    for r in cells:
        console.print(Text(" ".join(r[:key_columns]), style="bold"))
        for name, value in zip(columns[key_columns:], r[key_columns:]):
            console.print(Text(f"  {name}: {value}"))
