"""The commands' tables (xce.cli.tables): Rich's up to LONG rows, aligned plain text for
long listings; cells are text, never markup, in both."""

from __future__ import annotations

import io

from rich.console import Console

from xce.cli.tables import LONG, plain_lines, print_table

COLUMNS = ("job", "predicted start", "why never")


def _printed(rows: list[tuple[str, str, str]]) -> str:
    out = io.StringIO()
    print_table(Console(file=out, width=60), "Predicted starts", COLUMNS, rows)
    return out.getvalue()


def _rows(n: int) -> list[tuple[str, str, str]]:
    return [(f"j{k}", f"t={k * 7} s", "" if k % 2 else "held") for k in range(n)]


def test_a_long_table_is_printed_as_aligned_plain_columns() -> None:
    """Beyond LONG rows: the title, the header, a rule, one line per row (never wrapped
    at the console's width), each cell starting where its column's header does."""
    rows = _rows(LONG + 1)
    rows[5] = ("a-very-long-job-identifier-" * 3, "t=1 s", "a reason\nwith a second line")
    lines = _printed(rows).splitlines()
    assert lines[0] == "Predicted starts"
    assert len(lines) == 3 + len(rows)
    header, rule = lines[1], lines[2]
    starts = [header.index(c) for c in COLUMNS]
    assert starts == sorted(starts)
    assert rule.split("  ") == ["-" * len(w) for w in rule.split("  ")]
    for line, row in zip(lines[3:], rows, strict=True):
        for at, cell in zip(starts, row, strict=True):
            shown = cell.replace("\n", "; ")
            assert line[at : at + len(shown)] == shown
    assert lines[3 + 5].endswith("a reason; with a second line")


def test_a_short_table_is_rich_s() -> None:
    """Up to LONG rows: Rich's boxed table, every cell in it."""
    text = _printed(_rows(LONG))
    assert "┏" in text
    assert all(f"j{k} " in text for k in range(LONG))


def test_cells_are_text_not_markup_and_control_characters_show() -> None:
    """A job named like markup prints as named, in both forms; an escape character is
    made visible, so a name cannot drive the terminal."""
    evil = ("[bold]j1[/bold]", "\x1b[2Jt=1 s", "[red]why")
    for n in (1, LONG + 1):
        text = _printed([evil, *_rows(n - 1)])
        assert "[bold]j1[/bold]" in text
        assert "[red]why" in text
        assert "\x1b" not in text
        assert "\\x1b[2Jt=1 s" in text


def test_plain_lines_pad_to_the_widest_cell_of_each_column() -> None:
    lines = plain_lines("T", ("a", "b"), [("xx", "y"), ("x", "yyy")])
    assert lines == ["T", "a   b", "--  ---", "xx  y", "x   yyy"]


def test_markup_cells_print_their_text_in_both_forms() -> None:
    """``markup=True`` (xce schedule's escaped cells): styles apply in Rich's form and
    are dropped in the plain form; escaped user text prints as named in both."""
    from rich.markup import escape

    for n in (1, LONG + 1):
        rows = [(escape("[b]j0"), "[bold]RUN[/bold]", escape("a [x] b"))]
        rows += [(f"j{k}", "PEND", "") for k in range(1, n)]
        out = io.StringIO()
        print_table(Console(file=out, width=80), "Pending", COLUMNS, rows, markup=True)
        text = out.getvalue()
        assert "[b]j0" in text
        assert "a [x] b" in text
        assert "RUN" in text
        assert "[bold]" not in text
        assert "\\[" not in text
