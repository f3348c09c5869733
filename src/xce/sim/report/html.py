"""The HTML of ``xce report``: sortable tables, embedded images, and the document
around the sections, with a Content-Security-Policy that forbids any network access."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from typing import Any

from xce.sim.report.read import Results

__all__ = [
    "DAY",
    "HOUR",
    "Cell",
    "document",
    "duration",
    "html_table",
    "img",
    "note",
    "number_cell",
    "text_cell",
]

DAY = 86400.0
HOUR = 3600.0

Cell = tuple[str, str]
"""(what a table cell shows, the key it sorts by: a number's text or a string)."""


def img(data: bytes, mime: str, alt: str) -> str:
    """An image embedded as a ``data:`` URL."""
    encoded = base64.b64encode(data).decode("ascii")
    return f'<figure><img src="data:{mime};base64,{encoded}" alt="{html.escape(alt)}"></figure>'


def note(text: str) -> str:
    """A remark in italics (why a section has no figure, what a figure covers)."""
    return f'<p class="note">{html.escape(text)}</p>'


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], caption: str) -> str:
    """A table whose columns sort when their heading is clicked (see the script)."""
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-sort="{html.escape(key)}">{html.escape(shown)}</td>' for shown, key in row
        )
        + "</tr>"
        for row in rows
    )
    return (
        f'<div class="wide"><table class="sortable"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def text_cell(value: str) -> Cell:
    """A string cell, sorted as text."""
    return value, value


def number_cell(value: Any, kind: str = "") -> Cell:
    """A metric as a cell: durations (``*_s``) in a short unit, shares in %."""
    if value is None or value == "":
        return "–", ""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value), str(value)
    if not math.isfinite(number):
        return str(value), ""
    if kind.endswith("_s"):
        shown = duration(number)
    elif kind.startswith("utili"):
        shown = f"{100 * number:.1f} %"
    elif number.is_integer():
        shown = f"{int(number):,}"
    else:
        shown = f"{number:,.2f}"
    return shown, repr(number)


def duration(seconds: float) -> str:
    for unit, size in (("d", DAY), ("h", HOUR), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td:first-child, td:nth-child(2) { text-align: left; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; }
.wide { overflow-x: auto; }
.note { color: #555; font-style: italic; }
"""

_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].dataset.sort, y = b.cells[index].dataset.sort;
      if (x === "" || y === "") { return (x === "") - (y === ""); }
      var nx = Number(x), ny = Number(y);
      var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def document(results: Results, sections: Sequence[tuple[str, str, str]]) -> str:
    title = f"xce report: {results.workload}"
    what = {
        "replay": "a replay (xce simulate --out)",
        "replays": "replays, one per subdirectory",
        "compare": "a comparison (xce compare --out)",
        "sweep": "a sweep (results.csv)",
    }[results.kind]
    nav = " · ".join(f'<a href="#{key}">{html.escape(name)}</a>' for key, name, _ in sections)
    body = "".join(
        f'<section id="{key}"><h2>{html.escape(name)}</h2>{content}</section>'
        for key, name, content in sections
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(f'{what}: {results.directory}')}; {len(results.runs)} "
        f"{'cells' if results.kind == 'sweep' else 'policies'}. Click a column heading to "
        f"sort a table.</p><nav>{nav}</nav>{body}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
