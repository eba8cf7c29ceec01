"""Tool tables of the CLI (``toolhost tools``, ``toolhost search``, locally or via the running serve).

A tool name is copied into ``toolhost call``, so the name column (and the other short columns:
server, risk, data flow, timeout, score) is never wrapped or cut, at any terminal width and without
a TTY (rich then uses ``$COLUMNS``, else 80). Only the last column (a description or why a hit
ranked) gives up room: cut to one line with an ellipsis, or wrapped. Imports stay light (rich only).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

__all__ = ["risk_cell", "tool_rows_table"]

_RISK_STYLE = {"read": "green", "write": "yellow", "destructive": "red"}


def risk_cell(risk: str) -> Text:
    """``risk`` (``read``/``write``/``destructive``) in its colour."""
    return Text(risk, style=_RISK_STYLE.get(risk, ""))


def tool_rows_table(title: str, heads: Sequence[str], last: str, rows: Iterable[Sequence[str | Text]], *,
                    wrap_last: bool = False) -> Table:
    """A table with whole columns ``heads`` and a last column ``last`` that takes the width left:
    each row is ``(*cells of heads, last cell)``; the last cell is one line cut with ``…``, or
    wrapped when ``wrap_last``. Every whole column's minimum width is its widest cell."""
    rows = [list(r) for r in rows]
    table = Table(title=title, expand=False)
    for i, head in enumerate(heads):
        widest = max([cell_len(head), *(cell_len(r[i]) if isinstance(r[i], str) else r[i].cell_len for r in rows)])
        table.add_column(head, no_wrap=True, min_width=widest)
    table.add_column(last)  # wrapable, so rich narrows it first; its cells say how they give up room
    for *cells, tail in rows:
        table.add_row(*cells, tail if isinstance(tail, Text) else Text(tail, no_wrap=not wrap_last,
                                                                         overflow="fold" if wrap_last else "ellipsis"))
    return table
