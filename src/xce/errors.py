"""The one error hierarchy of xce.

Expected outcomes (a job pends, a requirement is unsatisfiable) are values, never
exceptions. Exceptions are for bad input (:class:`InputError` and its subclasses, which
are also ``ValueError`` and say *where* the problem is), misuse, cancellation and bugs.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "CONTEXT_WIDTH",
    "Cancelled",
    "EventError",
    "InputError",
    "InternalError",
    "RegistryError",
    "ResreqError",
    "ResreqSyntaxError",
    "StateError",
    "XceError",
    "clip",
    "clip_around",
]


class XceError(Exception):
    """Root of every exception xce raises on purpose."""


class InputError(XceError, ValueError):
    """Bad input: carries where it is (file, path inside the file, line/column).

    ``text`` is the line (or requirement string) the column points into; when it is
    given, :meth:`context` draws it with a caret under the offending column.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        text: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.path = path
        self.line = line
        self.column = column
        self.text = text

    def located(
        self,
        *,
        source: str | None = None,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        text: str | None = None,
    ) -> InputError:
        """A copy of this error of the same class, with unset location fields filled in."""
        other = type(self).__new__(type(self))
        InputError.__init__(
            other,
            self.message,
            source=self.source if self.source is not None else source,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            column=self.column if self.column is not None else column,
            text=self.text if self.text is not None else text,
        )
        return other

    def where(self) -> str:
        """``file:line:column: path`` as far as it is known, or an empty string."""
        parts: list[str] = []
        if self.source is not None:
            loc = self.source
            if self.line is not None:
                loc += f":{self.line}"
                if self.column is not None:
                    loc += f":{self.column}"
            parts.append(loc)
        elif self.line is not None:
            parts.append(f"line {self.line}" + (f", column {self.column}" if self.column else ""))
        elif self.column is not None and self.text is None:
            parts.append(f"column {self.column}")
        if self.path:
            parts.append(self.path)
        return ": ".join(parts)

    def context(self) -> str:
        """The offending text with a caret under the column (empty if unknown); a long
        line is cut to about CONTEXT_WIDTH characters around the column, ``…`` marking
        each cut (a 50 MB one-line file must not make a 50 MB message)."""
        if self.text is None or self.column is None:
            return ""
        shown, at = clip_around(self.text, self.column - 1)
        shown = visible(shown)
        caret = " " * _display_width(shown[:at]) + "^"
        return f"  {shown}\n  {caret}"

    def __str__(self) -> str:
        where = self.where()
        head = f"{where}: {self.message}" if where else self.message
        ctx = self.context()
        return f"{head}\n{ctx}" if ctx else head


_UNSEEN = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with each control, line-break and bidi character replaced by one visible
    character (a control picture such as ``␤`` or ``␉``, else ``�``): a quoted line stays
    one line, and a caret under it stays under the right character."""

    def one(m: re.Match[str]) -> str:
        code = ord(m.group())
        return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"

    return _UNSEEN.sub(one, text)


def _display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide characters (CJK, most emoji) two, combining
    marks none (so a caret lands under the character it points at)."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


CONTEXT_WIDTH = 120
"""How many characters of the offending line an error message quotes at most."""


def clip(text: str, width: int = 40) -> str:
    """``text`` cut to ``width`` characters with ``...`` when longer (a name or value a
    message shows: a user's megabyte-long word must not make a megabyte-long message)."""
    return text if len(text) <= width else text[: width - 3] + "..."


def clip_around(text: str, index: int, width: int = CONTEXT_WIDTH) -> tuple[str, int]:
    """``text`` cut to ``width`` characters around ``index`` (0-based; it may be just past
    the end), with ``…`` where text was cut; and where ``index`` is in the result."""
    index = max(index, 0)
    if len(text) <= width:
        return text, index
    start = max(0, min(index - width // 2, len(text) - width))
    end = start + width
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return head + text[start:end] + tail, index - start + len(head)


class ResreqSyntaxError(InputError):
    """A resource requirement string does not parse; ``column`` is 1-based."""


class ResreqError(InputError):
    """A resource requirement parses but is invalid (for this job or this cluster).

    ``token`` is the word of the requirement at fault, when there is one, so that a
    caller holding the text can point a caret at it.
    """

    token: str | None = None


class StateError(InputError):
    """A state file (or an event applied to the state) is invalid; nothing was applied."""


class EventError(XceError, ValueError):
    """An event the core refuses (unknown job or host, inconsistent change); nothing changed."""


class RegistryError(XceError, ValueError):
    """A plugin registry was misused: a duplicate name, or no plugin for the request."""


class InternalError(XceError):
    """This should never happen: a bug in xce. Please file it with the message."""

    def __init__(self, message: str) -> None:
        super().__init__(f"internal error (a bug in xce, please report it): {message}")


class Cancelled(BaseException):
    """Raised at a cancellation checkpoint once cancellation was requested.

    Derives from ``BaseException`` so that ``except Exception`` cannot swallow it.
    """
