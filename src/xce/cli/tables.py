"""Tables printed by the commands: Rich's for a screenful, aligned plain text for long
listings.

Rich lays out each cell (measuring, wrapping, drawing the box), about 0.4 ms a row: a
prediction or schedule of 20,000 pending jobs would spend 8 s printing what took 2 s to
compute. A table of more than :data:`LONG` rows is therefore printed as plain columns
(the title, the header, a rule, one line per row, cells padded to their column's widest
and separated by two spaces), which costs what the strings do. Cells are plain text
(never read as markup), or with ``markup=True`` Rich markup whose user text is escaped
(:func:`~xce.cli.outputs.shown`), rendered to its text in the plain form; control
characters are made visible (:func:`~xce.cli.outputs.plain`) and a cell's newlines
become ``; `` in the plain form, so that one row stays one line for ``grep`` and
``sort``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xce.cli.outputs import plain

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["LONG", "print_table"]

LONG = 200
"""Rows above which a table is printed as plain text."""


def print_table(
    console: Console,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    markup: bool = False,
) -> None:
    """Print ``rows`` (cells, one per column) under ``title``: Rich's table up to
    :data:`LONG` rows, aligned plain text beyond (module docstring). ``markup``: the
    title, columns and cells are Rich markup (user text escaped), not plain text."""
    if len(rows) <= LONG:
        _rich(console, title, columns, rows, markup)
        return
    if markup:
        from rich.markup import render

        title = render(title).plain
        columns = [render(c).plain for c in columns]
        rows = [[render(c).plain for c in row] for row in rows]
    for line in plain_lines(title, columns, rows):
        console.print(line, markup=False, highlight=False, soft_wrap=True, emoji=False)


def plain_lines(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The plain form's lines: the title, the header, a rule, a line per row."""
    cells = [[plain(c) for c in columns]]
    cells += [[plain(c).replace("\n", "; ") for c in row] for row in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(columns))]
    lines = [plain(title)]
    for k, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _rich(
    console: Console,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    markup: bool,
) -> None:
    from rich.table import Table
    from rich.text import Text

    if markup:
        table = Table(title=title, title_justify="left")
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
    else:
        table = Table(title=Text(plain(title)), title_justify="left")
        for column in columns:
            table.add_column(Text(plain(column)), overflow="fold")
        for row in rows:
            table.add_row(*(Text(plain(c)) for c in row))
    console.print(table)
