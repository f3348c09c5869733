"""Loading a state file: parse, decode, check, build — all or nothing.

Every problem becomes one :class:`~xce.errors.StateError` naming the file, the path
in the document (``hosts[2].slots``), and the line and column of that node, found by
walking the YAML node tree (JSON is YAML enough for this) along the path.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import msgspec
import yaml

from xce.cluster.schema import (
    DocPath,
    SpecError,
    StateSpec,
    check_spec,
    decode,
    format_path,
    quote,
)
from xce.cluster.state import ClusterState, build_state
from xce.errors import InputError, StateError

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

__all__ = [
    "RequirementCheck",
    "load_state",
    "state_from_dict",
    "state_from_text",
    "validate_requirements",
]

RequirementCheck = Callable[[str, int | None, int | None], None]
"""Called as ``check(resreq, min_tasks, max_tasks)`` (None: the job did not say); raises
InputError when invalid. The default checks the requirement language against the
state's own catalog."""

_SUFFIXES: dict[str, Literal["yaml", "json"]] = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}


class _Loader(_BaseLoader):
    """Safe YAML, plus YAML 1.2 floats: ``1e6`` is a number, not the string "1e6"."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_state(
    path: str | os.PathLike[str], *, check_resreq: RequirementCheck | None = None
) -> ClusterState:
    """Load a ``.yaml``/``.yml``/``.json`` state file; raise StateError if anything is wrong."""
    source = os.fspath(path)
    fmt = _SUFFIXES.get(os.path.splitext(source)[1].lower())
    if fmt is None:
        raise StateError("unknown file type: expected .yaml, .yml or .json", source=source)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise StateError(f"cannot read the file: {err.strerror or err}", source=source) from err
    except UnicodeDecodeError as err:
        raise StateError(f"not UTF-8 text: {err.reason}", source=source) from err
    return state_from_text(text, source, fmt, check_resreq=check_resreq)


def state_from_text(
    text: str,
    source: str = "<string>",
    fmt: Literal["yaml", "json"] = "yaml",
    *,
    check_resreq: RequirementCheck | None = None,
) -> ClusterState:
    """Load a state document held in a string (``source`` names it in errors)."""
    doc = _YamlDocument(text, source) if fmt == "yaml" else _JsonDocument(text, source)
    return _build(doc, check_resreq)


def state_from_dict(
    data: Mapping[str, Any],
    source: str = "<dict>",
    *,
    check_resreq: RequirementCheck | None = None,
) -> ClusterState:
    """Load a state already parsed into Python data (as YAML/JSON would give it)."""
    return _build(_Document(None, source, data), check_resreq)


def validate_requirements(state: ClusterState, check: RequirementCheck) -> None:
    """Run ``check`` on every non-empty resreq of the state, running jobs first.

    A running job's task count is its allocated slots. An InputError from ``check``
    is re-raised as a StateError at ``jobs[i].resreq`` whose column points into the
    requirement text (``text``).
    """
    try:
        _check_requirements(state, check)
    except SpecError as err:
        raise _Document(None, state.source, None).error(err) from err.__cause__


def _check_requirements(state: ClusterState, check: RequirementCheck) -> None:
    items: list[tuple[DocPath, str, int | None, int | None]] = [
        (("running", i, "resreq"), run.resreq, run.slots, run.slots)
        for i, run in enumerate(state.running)
    ]
    items += [
        (
            ("jobs", j.order, "resreq"),
            j.resreq,
            *((j.min_tasks, j.max_tasks) if j.tasks_given else (None, None)),
        )
        for j in state.jobs
    ]
    for path, text, low, high in items:
        if not text:
            continue
        try:
            check(text, low, high)
        except InputError as err:
            raise SpecError(path, err.message, column=err.column, text=text) from err


def _language_check(state: ClusterState) -> RequirementCheck:
    """The real check: parse, validate against the state's catalog, bind task counts."""
    from xce.resreq import requirement_for_job  # late: resreq imports cluster modules

    def check(text: str, low: int | None, high: int | None) -> None:
        requirement_for_job(text, state.catalog, low, high)

    return check


def _build(doc: _Document, check: RequirementCheck | None) -> ClusterState:
    try:
        spec = doc.spec()
        check_spec(spec)
        state = build_state(spec, doc.source)
        _check_requirements(state, check if check is not None else _language_check(state))
    except SpecError as err:
        raise doc.error(err) from err.__cause__
    return state


# -- documents: the parsed data, and the node tree that locates paths in it ---------------


class _Document:
    """A document already parsed to Python data; locates nothing (no text)."""

    def __init__(self, text: str | None, source: str | None, data: Any) -> None:
        self.text = text
        self.source = source
        self.data = data

    def spec(self) -> StateSpec:
        return decode(self.data)

    def root(self) -> yaml.Node | None:
        """The YAML node tree of the text, or None when there is none."""
        return None

    def error(self, err: SpecError) -> StateError:
        """``err`` as a StateError located in this document."""
        line = column = None
        text = err.text
        node = _find_node(self.root(), err.path, err.at_key)
        if node is not None:
            line = node.start_mark.line + 1
            column = node.start_mark.column + 1
        if err.text is not None:
            mapped = self._in_file(line, column, err.text, err.column)
            if mapped is not None:  # the requirement is written on one line: point into the file
                column, text = mapped
            else:
                column = err.column  # the column points into err.text, not into the file
        elif line is not None:
            text = self.line(line)
        path = format_path(err.path) or None
        return StateError(
            err.message, source=self.source, path=path, line=line, column=column, text=text
        )

    def _in_file(
        self, line: int | None, start: int | None, inner: str, column: int | None
    ) -> tuple[int, str] | None:
        """Map a column inside a scalar's text to the file, if the scalar is on one line."""
        text = self.line(line) if line is not None else None
        if text is None or start is None or column is None:
            return None
        offset = start - 1 + (1 if text[start - 1 : start] in ("'", '"') else 0)
        if text[offset : offset + len(inner)] != inner:
            return None
        return offset + column, text

    def line(self, number: int) -> str | None:
        """Line ``number`` (1-based) of the text."""
        if self.text is None:
            return None
        lines = self.text.split("\n")
        return lines[number - 1].rstrip("\r") if 0 < number <= len(lines) else None

    def syntax_error(self, what: str, line: int, column: int) -> StateError:
        return StateError(what, source=self.source, line=line, column=column, text=self.line(line))


class _YamlDocument(_Document):
    """YAML text: composed once; the node tree is kept to locate errors."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text, source, None)
        loader = _Loader(text)
        try:
            self._root: yaml.Node | None = loader.get_single_node()
            _check_duplicate_keys(self._root)
            self.data = loader.construct_document(self._root) if self._root else None
        except yaml.MarkedYAMLError as err:
            raise self._yaml_error(err) from None
        except yaml.reader.ReaderError as err:  # a character YAML does not allow
            line, column = _line_column(text, err.position)
            what = f"YAML syntax error: {err.reason} (character #x{err.character:04x})"
            raise self.syntax_error(what, line, column) from None
        except SpecError as err:
            raise self.error(err) from None
        finally:
            loader.dispose()

    def root(self) -> yaml.Node | None:
        return self._root

    def _yaml_error(self, err: yaml.MarkedYAMLError) -> StateError:
        syntax = not isinstance(err, yaml.constructor.ConstructorError)
        what = f"YAML {'syntax ' if syntax else ''}error: {err.problem}"
        mark, started = err.problem_mark or err.context_mark, err.context_mark
        if err.context:
            what += f" ({err.context}"
            if err.context.startswith("while ") and started and mark and started.line != mark.line:
                what += f" that starts at line {started.line + 1}"  # where the unclosed part began
            what += ")"
        if mark is None:
            return StateError(what, source=self.source)
        return self.syntax_error(what, mark.line + 1, mark.column + 1)


class _JsonDocument(_Document):
    """JSON text: decoded straight into structs (fast); re-read slowly only to explain
    an error, composing the node tree only when an error needs locating."""

    _NOT_COMPOSED: Any = object()

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text, source, None)
        self._root: Any = self._NOT_COMPOSED

    def spec(self) -> StateSpec:
        assert self.text is not None
        try:
            return msgspec.json.decode(self.text, type=StateSpec)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as err:
            msg = err.msg[:1].lower() + err.msg[1:]
            raise self.syntax_error(f"JSON syntax error: {msg}", err.lineno, err.colno) from None
        return decode(self.data)

    def root(self) -> yaml.Node | None:
        if self._root is self._NOT_COMPOSED:
            assert self.text is not None
            try:  # JSON forbids raw tabs in strings, so this keeps every column
                self._root = yaml.compose(self.text.replace("\t", " "), Loader=_Loader)
            except yaml.YAMLError:
                self._root = None
        root: yaml.Node | None = self._root
        return root


def _line_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line_start = text.rfind("\n", 0, position) + 1
    return text.count("\n", 0, position) + 1, position - line_start + 1


def _check_duplicate_keys(root: yaml.Node | None) -> None:
    """PyYAML keeps the last of two equal keys silently; a typo then hides data."""
    for path, node in _mappings(root):
        seen: set[str] = set()
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.value == "<<":
                continue
            if key.value in seen:
                raise SpecError(
                    (*path, key.value), f"duplicate key {quote(key.value)}", at_key=True
                )
            seen.add(key.value)


def _mappings(root: yaml.Node | None) -> Iterator[tuple[DocPath, yaml.MappingNode]]:
    """Every mapping node with its path; each node once (aliases may form cycles)."""
    stack: list[tuple[DocPath, yaml.Node]] = [((), root)] if root is not None else []
    visited: set[int] = set()
    while stack:
        path, node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            yield path, node
            stack.extend(
                ((*path, k.value), v) for k, v in node.value if isinstance(k, yaml.ScalarNode)
            )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(((*path, i), v) for i, v in enumerate(node.value))


def _find_node(root: yaml.Node | None, path: DocPath, at_key: bool) -> yaml.Node | None:
    """The node at ``path`` (its key node if ``at_key``), else its nearest existing parent."""
    node = root
    for depth, seg in enumerate(path):
        want_key = at_key and depth == len(path) - 1
        child = _child(node, seg, want_key) if node is not None else None
        if child is None:
            break
        node = child
    return node


def _child(node: yaml.Node, seg: str | int, want_key: bool) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in reversed(node.value):  # the last of equal keys is the one in effect
            if isinstance(key, yaml.ScalarNode) and key.value == str(seg):
                return key if want_key else value
    elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
        child: yaml.Node = node.value[seg]
        return child
    return None
