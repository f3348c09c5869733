"""PBS's JSON read strictly: what :func:`json.loads` lets through and a state file cannot
hold is refused here, located in the input (file and JSON path).

- ``NaN``, ``Infinity``, ``-Infinity`` and numbers beyond a float (``1e400``) are not
  JSON numbers a scheduler means; they would crash a conversion or fail the loader.
- A key given twice in one object (``{"n1": …, "n1": …}``): json keeps the last one
  silently, so a node or job would vanish.
- A string holding a lone UTF-16 surrogate (``"\\ud800"``): not text; a state file
  cannot hold it.
- Nesting deeper than :data:`~xce.inputs.MAX_DEPTH`: the decoder recurses (10,000 levels
  is a RecursionError), and so would anything after it. PBS's documents are at most five
  levels deep.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from xce.errors import InputError
from xce.inputs import MAX_DEPTH

__all__ = ["parse_pbs_json"]


class _NonFinite:
    """What the decoder read for a non-finite number, kept to be located afterwards."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Duplicates(dict[str, Any]):
    """An object with a key given twice: the keys, kept to be located afterwards."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    twice = []
    for key, value in pairs:
        if key in out:
            twice.append(key)
        out[key] = value
    if not twice:
        return out
    marked = _Duplicates(out)
    marked.duplicates = twice
    return marked


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def parse_pbs_json(source: str, text: str) -> Any:
    """``text`` (from ``source``) as JSON, refusing what the module docstring lists;
    InputError at the line and column where it is not JSON, or at the JSON path."""
    try:
        data = json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_NonFinite, parse_float=_float
        )
    except json.JSONDecodeError as err:
        raise InputError(
            f"not JSON: {err.msg}", source=source, line=err.lineno, column=err.colno
        ) from None
    except RecursionError:
        raise _too_deep(source, *_deep_path(text)) from None
    _check_tree(source, data)
    return data


def _too_deep(source: str, path: str, line: int | None = None) -> InputError:
    """Where the nesting goes beyond MAX_DEPTH; the path is cut after its first 80
    characters (a hundred levels of ``[0]`` say nothing more)."""
    return InputError(
        f"JSON nested deeper than {MAX_DEPTH} levels (PBS's documents have at most 5)",
        source=source,
        path=path if len(path) <= 80 else path[:80] + "…",
        line=line,
    )


#: The sections whose keys are names (vnodes, job ids, queues): shown ``nodes["n1"]``.
_NAMED = frozenset({"nodes", "Jobs", "Queue", "Server"})


def _child(path: str, key: str | int) -> str:
    """The JSON path of ``key`` under ``path``, as the importer's messages write it."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if path not in _NAMED and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return key if path == "$" else f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]" if path != "$" else f"[{json.dumps(key)}]"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _not_text(source: str, path: str, value: str) -> InputError:
    """A string holding a lone UTF-16 surrogate (``"\\ud800"``): JSON allows it, no
    file can hold it as text."""
    char = _SURROGATE.search(value)
    code = ord(char[0]) if char else 0
    return InputError(f"not valid text: holds \\u{code:04x}, a lone UTF-16 surrogate",
                      source=source, path=path)  # fmt: skip


def _check_tree(source: str, data: Any) -> None:
    """Walk the decoded tree without recursion: the first non-finite number, key given
    twice, string that is not text or level beyond MAX_DEPTH, located by its JSON path."""
    stack: list[tuple[Any, str, int]] = [(data, "$", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, _NonFinite):
            raise InputError(f"{value.text} is not a finite number", source=source, path=path)
        if isinstance(value, str) and _SURROGATE.search(value):
            raise _not_text(source, path, value)
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise _too_deep(source, path)
        if isinstance(value, _Duplicates):
            key = value.duplicates[0]
            raise InputError(
                f"key {json.dumps(key)} given twice in one object (JSON keeps only the last)",
                source=source,
                path=_child(path, key),
            )
        for key in value if isinstance(value, dict) else ():
            if _SURROGATE.search(key):
                raise _not_text(source, _child(path, key), key)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        children = [(v, _child(path, k), depth + 1) for k, v in items]
        stack.extend(reversed(children))


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{},]')


def _deep_path(text: str) -> tuple[str, int]:
    """The JSON path and line where ``text`` first nests beyond MAX_DEPTH, found by a
    scan that does not recurse (the decoder did): each open container with the key (or
    index) its next value goes under."""
    open_: list[list[Any]] = []  # [kind, key]
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.startswith('"'):
            if token.endswith(":") and open_:
                open_[-1][1] = json.loads(token[:-1].rstrip())
        elif token == ",":
            if open_ and open_[-1][0] == "[":
                open_[-1][1] += 1
        elif token in "[{":
            if len(open_) >= MAX_DEPTH:
                path = "$"
                for _, key in open_:
                    path = _child(path, key if key is not None else "")
                return path, text.count("\n", 0, match.start()) + 1
            open_.append([token, 0 if token == "[" else None])
        elif open_:
            open_.pop()
    return "$", 1
