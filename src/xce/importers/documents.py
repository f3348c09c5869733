"""The JSON a scheduler printed, read with its errors located (file, line, column, path).

Python's decoder accepts what a state file may not hold and what no scheduler means:
``NaN``/``Infinity``, numbers that overflow to infinity (``1e999``), a key written twice
in one object (the last silently wins), lone UTF-16 surrogates (``"\\ud800"``), and it
recurses, so deeply nested text ends in a RecursionError. :func:`parse_json` refuses
nesting deeper than :data:`xce.inputs.MAX_DEPTH` before decoding (always: it would
otherwise crash), and with ``strict`` the rest, each at its file and JSON path, as the
state loader does."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from xce.errors import InputError
from xce.inputs import MAX_DEPTH

__all__ = ["json_path", "located", "parse_json"]

_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


class _NonFinite:
    """Where a number that is not finite was written (kept in the tree, then refused)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as written: its pairs in order, duplicates kept (checked later)."""


def parse_json(source: str, text: str, *, strict: bool = False) -> Any:
    """``text`` (from ``source``) as JSON; InputError at the line and column where it is
    not JSON (a truncated file, another format) or nests deeper than MAX_DEPTH. With
    ``strict``, also at the JSON path of the first number that is not finite, key written
    twice (the second one) or string holding a lone surrogate."""
    _check_depth(source, text)
    if not strict:
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise _not_json(source, err) from None
    try:
        tree = json.loads(
            text, object_pairs_hook=_Pairs, parse_constant=_NonFinite, parse_float=_float
        )
    except json.JSONDecodeError as err:
        raise _not_json(source, err) from None
    return _checked(source, tree, ())


def json_path(path: tuple[str | int, ...]) -> str:
    """``("nodes", 3, "cpus")`` as ``nodes[3].cpus`` (``$`` for the root)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "$"


def _not_json(source: str, err: json.JSONDecodeError) -> InputError:
    return InputError(f"not JSON: {err.msg}", source=source, line=err.lineno, column=err.colno)


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _check_depth(source: str, text: str) -> None:
    """Refuse lists and objects nested deeper than MAX_DEPTH, at the bracket that goes
    too deep, before the decoder (which recurses) sees the text."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    for match in _BRACKETS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                at = match.start()
                line = text.count("\n", 0, at) + 1
                column = at - text.rfind("\n", 0, at)
                raise InputError(
                    f"nested deeper than {MAX_DEPTH} levels (objects and lists inside each other)",
                    source=source,
                    line=line,
                    column=column,
                )
        elif token in "]}":
            depth -= 1


def _checked(source: str, value: Any, path: tuple[str | int, ...]) -> Any:
    """``value`` with its objects made dicts, refusing what ``strict`` refuses. Recursion
    is bounded: the depth was checked before decoding."""
    if isinstance(value, _Pairs):
        out: dict[str, Any] = {}
        for key, item in value:
            at = (*path, key)
            if key in out:
                raise InputError(f"duplicate key {key!r}", source=source, path=json_path(at))
            _check_string(source, key, at)
            out[key] = _checked(source, item, at)
        return out
    if isinstance(value, list):
        return [_checked(source, item, (*path, i)) for i, item in enumerate(value)]
    if isinstance(value, _NonFinite):
        raise InputError(
            f"{value.text} is not a finite number", source=source, path=json_path(path)
        )
    if isinstance(value, str):
        _check_string(source, value, path)
    return value


def _check_string(source: str, text: str, path: tuple[str | int, ...]) -> None:
    if _SURROGATE.search(text):
        raise InputError(
            f"{text[:40]!r} is not valid text (a lone UTF-16 surrogate)",
            source=source,
            path=json_path(path),
        )


@contextmanager
def located(source: str, path: str, *, missing: bool = False) -> Iterator[None]:
    """A ValueError raised inside (an importer reading a value) becomes an InputError at
    ``source: path``; with ``missing``, so does a KeyError (a field the record lacks).
    An InputError passes through as it is (it knows where it is)."""
    try:
        yield
    except InputError:
        raise
    except KeyError as err:
        if not missing:
            raise
        raise InputError(f"no {err.args[0]!r}", source=source, path=path) from None
    except ValueError as err:
        raise InputError(str(err), source=source, path=path) from None
