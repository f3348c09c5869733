"""Loading a state file: parse, decode, check, build — all or nothing.

Every problem becomes one :class:`~xce.errors.StateError` naming the file, the path
in the document (``hosts[2].slots``), and the line and column of that node: in YAML by
walking the node tree along the path (a YAML state is read entry by entry and the
entries composed again only to locate an error in them: xce.cluster.yaml_stream), in
JSON by a scan of the text without recursion.

Lenient loading (``lenient=True``) keeps a malformed *job* entry from failing the whole
file: the job is left out of the state and returned as an :class:`InvalidJob` carrying
the error the strict load would have raised for it. Problems anywhere else still fail.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, cast, overload

import msgspec
import numpy as np
import yaml

from xce.cluster.schema import (
    MAX_DEPTH,
    MAX_NUMBER,
    DocPath,
    JobSpec,
    SpecError,
    StateSpec,
    check_dependency_cycles,
    check_spec,
    check_text,
    clip,
    decode,
    escape_surrogates,
    format_path,
    quote,
)
from xce.cluster.state import ClusterState, build_state
from xce.cluster.yaml_stream import LIBYAML as _LIBYAML
from xce.cluster.yaml_stream import NOTHING, TooDeep, YamlTree, find_node, long_int, parse
from xce.errors import InputError, StateError
from xce.inputs import MAX_STATE_BYTES, read_input_text


def _char_index(text: str, position: int) -> int:
    """A reader error's position as an index into ``text``: libyaml counts bytes of the
    UTF-8 text, PyYAML's own reader characters."""
    if not _LIBYAML:
        return position
    return len(text.encode("utf-8")[:position].decode("utf-8", "ignore"))


__all__ = [
    "InvalidJob",
    "LenientState",
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


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    return long_int(text.startswith("-"), digits) if digits > _MAX_DIGITS else int(text)


def _too_deep() -> str:
    return f"nested deeper than {MAX_DEPTH} levels (mappings and lists inside each other)"


@dataclasses.dataclass(frozen=True, slots=True)
class InvalidJob:
    """A ``jobs`` entry a lenient load left out, with the error a strict load raises for it.

    ``id`` is the entry's id as a string, or its path (``jobs[3]``) when it has no
    readable id; ``order`` its index in ``jobs``; ``entry`` the entry as written (a
    mapping of plain data: a lone surrogate escaped, a YAML alias to a list or mapping
    met before shown as ``"*jobs[3].user"``), or None when it is not a mapping.
    """

    id: str
    order: int
    error: StateError
    entry: Mapping[str, Any] | None = None

    @property
    def message(self) -> str:
        """The error on one line: ``file:line:col: jobs[3].tasks: message``."""
        where = self.error.where()
        return f"{where}: {self.error.message}" if where else self.error.message


class LenientState(NamedTuple):
    """What a lenient load gives: the state of every well-formed part, and the job
    entries it left out, in file order."""

    state: ClusterState
    invalid: tuple[InvalidJob, ...]


@overload
def load_state(
    path: str | os.PathLike[str],
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: Literal[False] = False,
) -> ClusterState: ...
@overload
def load_state(
    path: str | os.PathLike[str],
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: Literal[True],
) -> LenientState: ...
def load_state(
    path: str | os.PathLike[str],
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: bool = False,
) -> ClusterState | LenientState:
    """Load a ``.yaml``/``.yml``/``.json`` state file; raise StateError if anything is wrong
    (with ``lenient``, anything outside the ``jobs`` entries: see :class:`LenientState`)."""
    source = os.fspath(path)
    fmt = _SUFFIXES.get(os.path.splitext(source)[1].lower())
    if fmt is None:
        raise StateError("unknown file type: expected .yaml, .yml or .json", source=source)
    try:
        text = read_input_text(source, max_bytes=MAX_STATE_BYTES, compressed=False, what="file")
    except InputError as err:
        raise StateError(
            err.message, source=source, line=err.line, column=err.column, text=err.text
        ) from None
    doc = _document(text, source, fmt, lenient)
    return _build_lenient(doc, check_resreq) if lenient else _build(doc, check_resreq)


@overload
def state_from_text(
    text: str,
    source: str = "<string>",
    fmt: Literal["yaml", "json"] = "yaml",
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: Literal[False] = False,
) -> ClusterState: ...
@overload
def state_from_text(
    text: str,
    source: str = "<string>",
    fmt: Literal["yaml", "json"] = "yaml",
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: Literal[True],
) -> LenientState: ...
def state_from_text(
    text: str,
    source: str = "<string>",
    fmt: Literal["yaml", "json"] = "yaml",
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: bool = False,
) -> ClusterState | LenientState:
    """Load a state document held in a string (``source`` names it in errors)."""
    doc = _document(text, source, fmt, lenient)
    return _build_lenient(doc, check_resreq) if lenient else _build(doc, check_resreq)


@overload
def state_from_dict(
    data: Mapping[str, Any],
    source: str = "<dict>",
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: Literal[False] = False,
) -> ClusterState: ...
@overload
def state_from_dict(
    data: Mapping[str, Any],
    source: str = "<dict>",
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: Literal[True],
) -> LenientState: ...
def state_from_dict(
    data: Mapping[str, Any],
    source: str = "<dict>",
    *,
    check_resreq: RequirementCheck | None = None,
    lenient: bool = False,
) -> ClusterState | LenientState:
    """Load a state already parsed into Python data (as YAML/JSON would give it)."""
    doc = _Document(None, source, data)
    return _build_lenient(doc, check_resreq) if lenient else _build(doc, check_resreq)


def locate_error(err: InputError, source: str | None, path: DocPath) -> InputError:
    """``err`` (found after loading: a picker or backfill policy the file names that no
    registry knows) located at ``path`` in the state file ``source``: file, line,
    column and the line's text, when the file can still be read; else at ``path``."""
    located = err.located(source=source, path=format_path(path) or None)
    if source is None:
        return located
    fmt = _SUFFIXES.get(os.path.splitext(source)[1].lower())
    try:
        if fmt is None:
            return located
        text = read_input_text(source, max_bytes=MAX_STATE_BYTES, compressed=False, what="file")
        doc = _document(text, source, fmt, lenient=False)
        found = doc.find(path, at_key=False)
    except (InputError, OSError, yaml.YAMLError):
        return located
    if found is None:
        return located
    return located.located(line=found.line, column=found.column, text=doc.line(found.line))


def _document(text: str, source: str, fmt: Literal["yaml", "json"], lenient: bool) -> _Document:
    if fmt == "yaml":
        return _YamlDocument(text, source, lenient=lenient)
    return _JsonDocument(text, source, lenient=lenient)


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


def _check_requirements(
    state: ClusterState,
    check: RequirementCheck,
    faults: dict[int, SpecError] | None = None,
) -> None:
    """Raise a SpecError for the first invalid requirement; with ``faults``, a pending
    job's is recorded there under its ``order`` instead."""
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
    items += [  # the requirement a job has in each further queue of its (also_queues)
        (
            ("jobs", j.order, "also_queues", k, "resreq"),
            e.resreq,
            *((j.min_tasks, j.max_tasks) if j.tasks_given else (None, None)),
        )
        for j in state.jobs
        for k, e in enumerate(j.also_queues)
        if e.resreq != j.resreq
    ]
    for path, text, low, high in items:
        if not text:
            continue
        try:
            check(text, low, high)
        except InputError as err:
            fault = SpecError(path, err.message, column=err.column, text=text)
        except RecursionError as err:  # a backstop: the parser refuses deep expressions
            fault = SpecError(path, _TOO_DEEP_RESREQ)
            fault.__cause__ = err
        else:
            continue
        if faults is None or path[0] != "jobs":
            raise fault from fault.__cause__
        faults[int(path[1])] = fault


_TOO_DEEP_RESREQ = (
    "the requirement nests too deeply to check (a very long chain of !, -, ||, && or parentheses)"
)


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


# -- lenient loading: a bad job entry pends INVALID instead of failing the file ------------


def _build_lenient(doc: _Document, check: RequirementCheck | None) -> LenientState:
    """Like the strict build, but each job entry's problem (decoding, id, task counts,
    requirement) is recorded against it and the entry left out; the strict build's
    checks run in the same order, so an entry's error is the one a strict load gives."""
    try:
        return _lenient(doc, check)
    except SpecError as err:
        raise doc.error(err) from err.__cause__


def _lenient(doc: _Document, check: RequirementCheck | None) -> LenientState:
    spec, orders, faults = doc.lenient_spec()
    clean = True
    try:
        check_spec(spec)
    except SpecError as err:
        if _job_index(err.path) is None:
            raise
        check_spec(msgspec.structs.replace(spec, jobs=[]))  # problems outside jobs fail
        clean = False
    if faults or not clean:  # entries left out still claim their ids
        spec, orders = _check_jobs(spec, orders, faults, doc)
    state = build_state(spec, doc.source)
    jobs = state.jobs
    if faults:  # entries were left out: the jobs keep their index in the file
        jobs = tuple(dataclasses.replace(j, order=orders[j.order]) for j in jobs)
        state = dataclasses.replace(state, jobs=jobs)
    _check_requirements(state, check if check is not None else _language_check(state), faults)
    if not faults:
        return LenientState(state, ())
    state = dataclasses.replace(state, jobs=tuple(j for j in jobs if j.order not in faults))
    names = {order: str(job.id) for order, job in zip(orders, spec.jobs, strict=True)}
    raw = doc.raw_jobs()
    invalid = []
    doc.prefetch([faults[i].path for i in faults])
    for i in sorted(faults):
        entry = _entry(raw, i)
        name = names.get(i) or _raw_id(entry) or format_path(("jobs", i))
        invalid.append(InvalidJob(name, i, doc.error(faults[i]), _printable(entry, i)))
    # the ids no job of the state has (an entry left out as a duplicate of one does not
    # make it INVALID), and those an earlier load left out
    present = {r.id for r in state.running} | {j.id for j in state.jobs}
    left_out = state.left_out | ({j.id for j in invalid} - present)
    state = dataclasses.replace(state, left_out=left_out)
    return LenientState(state, tuple(invalid))


def _job_index(path: DocPath) -> int | None:
    """``i`` when ``path`` is inside the entry ``jobs[i]``."""
    if len(path) >= 2 and path[0] == "jobs" and isinstance(path[1], int):
        return path[1]
    return None


def _at_job(err: SpecError, i: int) -> SpecError:
    """``err``, found in a one-job document, moved to entry ``jobs[i]``."""
    moved = SpecError(
        ("jobs", i, *err.path[2:]),
        err.message,
        at_key=err.at_key,
        column=err.column,
        text=err.text,
        shown=err.shown,
    )
    moved.__cause__ = err.__cause__
    return moved


def _entry(raw: list[Any], i: int) -> Mapping[str, Any] | None:
    """Entry ``i`` of the raw ``jobs`` list, if it is a mapping."""
    entry = raw[i] if i < len(raw) else None
    return entry if isinstance(entry, dict) else None


def _printable(entry: Mapping[str, Any] | None, i: int) -> Mapping[str, Any] | None:
    """Entry ``jobs[i]`` as shown to people, a tree of plain data whatever was written:
    each lone surrogate (no encoding prints one) as its ``\\uXXXX`` escape, and a list or
    mapping met again (a YAML alias, which may even hold itself) as ``"*"`` and the path
    where it was first met, so that printing it is linear in the text and ends."""
    if entry is None:
        return None

    def text(value: Any) -> Any:
        return escape_surrogates(value) if isinstance(value, str) else value

    copy: dict[Any, Any] = {}
    first: dict[int, str] = {id(entry): "*" + format_path(("jobs", i))}
    stack: list[tuple[Any, Any, DocPath]] = [(entry, copy, ("jobs", i))]
    while stack:
        source, target, path = stack.pop()
        for key, value in list(source.items() if isinstance(source, dict) else enumerate(source)):
            if isinstance(value, dict | list):
                if id(value) in first:
                    value = first[id(value)]
                else:
                    at: DocPath = (*path, key if isinstance(key, int | str) else str(key))
                    first[id(value)] = "*" + format_path(at)
                    stack.append(
                        (value, {} if isinstance(value, dict) else [None] * len(value), at)
                    )
                    value = stack[-1][1]
            target[text(key) if isinstance(target, dict) else key] = text(value)
    return copy


def _raw_id(entry: Mapping[str, Any] | None) -> str | None:
    """A job entry's id as the strict load would read it, if it is readable (text that
    cannot be printed, such as a lone surrogate, is not)."""
    raw = entry.get("id") if entry is not None else None
    if isinstance(raw, str):
        return raw if escape_surrogates(raw) == raw else None
    if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) <= MAX_NUMBER:
        return str(raw)
    return None


def _decode_jobs(data: Any, faults: dict[int, SpecError]) -> tuple[StateSpec, list[int]]:
    """Decode the document but its ``jobs`` entries, then each entry on its own."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        return decode(data), []  # the problem is not inside an entry: it fails
    base = _checked_decode({k: v for k, v in data.items() if k != "jobs"})
    jobs: list[JobSpec] = []
    orders: list[int] = []
    for i, entry in enumerate(data["jobs"]):
        if i in faults:
            continue
        try:
            (job,) = _checked_decode({"jobs": [entry]}).jobs
        except SpecError as err:
            faults[i] = _at_job(err, i)
            continue
        jobs.append(job)
        orders.append(i)
    return msgspec.structs.replace(base, jobs=jobs), orders


def _checked_decode(data: Any) -> StateSpec:
    """:func:`decode`, the text checked first (the document's check stopped at its first
    problem, which may have been in another entry)."""
    check_text(data)
    return decode(data)


def _check_jobs(
    spec: StateSpec, orders: list[int], faults: dict[int, SpecError], doc: _Document
) -> tuple[StateSpec, list[int]]:
    """The checks of :func:`check_spec` on job entries, one entry at a time: a duplicate
    id (of running work or of any earlier entry) and contradicting task counts."""
    seen = {x: f"left_out[{i}]" for i, x in enumerate(spec.left_out)}
    seen.update({str(r.id): f"running[{i}]" for i, r in enumerate(spec.running)})
    decoded = dict(zip(orders, spec.jobs, strict=True))
    raw = doc.raw_jobs() if faults else []
    kept: list[JobSpec] = []
    kept_orders: list[int] = []
    for i in range(max([*orders, *faults], default=-1) + 1):
        job = decoded.get(i)
        name = str(job.id) if job is not None else _raw_id(_entry(raw, i))
        if job is None:
            if name is not None:
                seen.setdefault(name, f"jobs[{i}]")
            continue
        assert name is not None
        try:
            if name in seen:
                raise SpecError(
                    ("jobs", i, "id"), f"duplicate job id {quote(name)} (also {seen[name]})"
                )
            seen[name] = f"jobs[{i}]"
            check_spec(StateSpec(jobs=[job], reservations=spec.reservations, now=spec.now))
        except SpecError as err:
            faults[i] = err if err.path[:2] == ("jobs", i) else _at_job(err, i)
            continue
        kept.append(job)
        kept_orders.append(i)
    while True:  # a cycle of dependencies: its first entry is left out, and so on
        try:
            check_dependency_cycles(kept, kept_orders)
            break
        except SpecError as err:
            i = kept_orders.index(cast(int, err.path[1]))
            faults[kept_orders.pop(i)] = err
            kept.pop(i)
    return msgspec.structs.replace(spec, jobs=kept), kept_orders


# -- documents: the parsed data, and the node tree that locates paths in it ---------------


class _Document:
    """A document already parsed to Python data; locates nothing (no text)."""

    def __init__(self, text: str | None, source: str | None, data: Any) -> None:
        self.text = text
        self.source = source
        self.data = data

    def spec(self) -> StateSpec:
        return decode(self.raw_data())

    def lenient_spec(self) -> tuple[StateSpec, list[int], dict[int, SpecError]]:
        """The document's spec without the job entries that do not decode; the index in
        ``jobs`` of each entry kept; the problem of each entry left out, by index."""
        faults = dict(self.job_faults)
        if not faults:
            try:
                spec = self.spec()
            except SpecError as err:
                if _job_index(err.path) is None:
                    raise
            else:
                return spec, list(range(len(spec.jobs))), faults
        spec, orders = _decode_jobs(self.raw_data(), faults)
        return spec, orders, faults

    job_faults: Mapping[int, SpecError] = MappingProxyType({})
    """Problems of job entries found while reading the text (lenient: duplicate keys)."""

    _checked = False

    def raw_data(self) -> Any:
        """The document as Python data (its text checked: see :func:`check_text`)."""
        if not self._checked:
            self._checked = True
            self.check_text()
        return self.data

    def check_text(self) -> None:
        check_text(self.data)

    def raw_jobs(self) -> list[Any]:
        """The ``jobs`` entries as written ([] when there is no such list)."""
        data = self.raw_data()
        jobs = data.get("jobs") if isinstance(data, dict) else None
        return jobs if isinstance(jobs, list) else []

    def root(self) -> yaml.Node | None:
        """The YAML node tree of the text, or None when there is none."""
        return None

    def node(self, path: DocPath, at_key: bool) -> tuple[yaml.Node | None, bool]:
        """The node at ``path`` (its key if ``at_key``), else its nearest parent; and
        whether it is the node at ``path`` itself."""
        return find_node(self.root(), path, at_key)

    def prefetch(self, paths: list[DocPath]) -> None:
        """About to locate many of these paths (a lenient load's invalid entries): get
        ready to do it at once."""

    def find(self, path: DocPath, at_key: bool) -> _Found | None:
        """Where the node at ``path`` (its key if ``at_key``) is written, else its nearest
        parent; None when the document has no text (or no node at all)."""
        node, exact = self.node(path, at_key)
        if node is None:
            return None
        scalar = node.value if exact and isinstance(node, yaml.ScalarNode) else None
        return _Found(node.start_mark.line + 1, node.start_mark.column + 1, scalar)

    def error(self, err: SpecError) -> StateError:
        """``err`` as a StateError located in this document."""
        line = column = None
        text = err.text
        message = err.message
        found = self.find(err.path, err.at_key)
        if found is not None:
            line, column = found.line, found.column
            written = found.scalar
            if err.shown is not None and written and len(written) <= 24:
                message = message.replace(err.shown, written, 1)  # as written: 1e400, .inf
        elif self.text is not None:
            line = 1  # no node at all: an empty document
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
            message, source=self.source, path=path, line=line, column=column, text=text
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
    """YAML text, read entry by entry (xce.cluster.yaml_stream): the data, and the node
    tree that locates paths with the entries of the root's lists composed again on demand
    (a 50 MB state's whole node tree would need gigabytes)."""

    def __init__(self, text: str, source: str, *, lenient: bool = False) -> None:
        super().__init__(text, source, None)
        self._tree = YamlTree(text, NOTHING)  # until parsed: lines only, for syntax errors
        try:
            parsed = parse(text)
            self._tree = YamlTree(text, parsed)
            faults: dict[int, SpecError] = {}
            for problem in parsed.problems:
                if problem.deep is not None:
                    raise problem.deep
                assert problem.error is not None
                i = _job_index(problem.error.path) if lenient else None
                if i is None:
                    raise problem.error
                faults.setdefault(i, problem.error)
            self.job_faults = faults
            if parsed.construct_error is not None:
                raise parsed.construct_error
            self.data = parsed.data
        except TooDeep as err:
            line, column = err.mark.line + 1, err.mark.column + 1
            raise self.syntax_error(_too_deep(), line, column) from None
        except yaml.MarkedYAMLError as err:
            if "maximum nesting depth" in str(err.problem):  # libyaml's own limit (1000)
                self._raise_too_deep()
            raise self._yaml_error(err) from None
        except RecursionError:  # a YAML parser that recurses (no libyaml)
            self._raise_too_deep()
            raise
        except yaml.reader.ReaderError as err:  # a character YAML does not allow
            line, column = _line_column(text, _char_index(text, err.position))
            what = f"YAML syntax error: {err.reason} (character #x{err.character:04x})"
            raise self.syntax_error(what, line, column) from None
        except SpecError as err:
            raise self.error(err) from None

    def line(self, number: int) -> str | None:
        """Line ``number`` (1-based), counted as YAML counts them: CR LF, CR, LF, NEL,
        U+2028 and U+2029 each end a line."""
        return self._tree.line(number)

    def node(self, path: DocPath, at_key: bool) -> tuple[yaml.Node | None, bool]:
        return self._tree.find(path, at_key)

    def prefetch(self, paths: list[DocPath]) -> None:
        self._tree.prefetch(paths)

    def _raise_too_deep(self) -> None:
        """Raise the nesting error where the text first nests too deep, if it does
        (found with PyYAML's own parser: it makes events without recursion or limit)."""
        assert self.text is not None
        depth = 0
        try:
            for event in yaml.parse(self.text, Loader=yaml.SafeLoader):
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH and (mark := event.start_mark) is not None:
                        raise self.syntax_error(_too_deep(), mark.line + 1, mark.column + 1)
                elif isinstance(event, yaml.CollectionEndEvent):
                    depth -= 1
        except yaml.YAMLError:
            return

    def root(self) -> yaml.Node | None:
        return self._tree.root

    def check_text(self) -> None:
        assert self.text is not None
        if "\\u" in self.text or "\\U" in self.text:  # only escapes make surrogates
            check_text(self.data)

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
    an error (a valid state is never deep, so the fast decoder never recurses far), and
    scanned without recursion to locate it."""

    def __init__(self, text: str, source: str, *, lenient: bool = False) -> None:
        super().__init__(text, source, None)
        self._lenient = lenient

    def spec(self) -> StateSpec:
        assert self.text is not None
        try:
            spec = msgspec.json.decode(self.text, type=StateSpec)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
        else:
            if not self._lenient:  # (lenient: done in lenient_spec)
                for err in _json_duplicate_keys(self.text):
                    raise err
            return spec
        return decode(self.raw_data())

    def lenient_spec(self) -> tuple[StateSpec, list[int], dict[int, SpecError]]:
        assert self.text is not None
        faults: dict[int, SpecError] = {}
        for err in _json_duplicate_keys(self.text):
            i = _job_index(err.path)
            if i is None:
                raise err
            faults.setdefault(i, err)
        self.job_faults = faults
        return super().lenient_spec()

    def raw_data(self) -> Any:
        if self.data is None:
            assert self.text is not None
            deep = _json_too_deep(self.text)  # before the decoder, which recurses
            if deep is not None:
                line, column = _line_column(self.text, deep.start)
                raise self.syntax_error(_too_deep(), line, column)
            if not self._lenient:
                for err in _json_duplicate_keys(self.text):
                    raise err
            try:
                self.data = json.loads(self.text, parse_int=_json_int)
            except json.JSONDecodeError as err:
                msg = err.msg[:1].lower() + err.msg[1:]
                what = f"JSON syntax error: {msg}"
                raise self.syntax_error(what, err.lineno, err.colno) from None
            except RecursionError:  # not reached: the scan above refuses deep text first
                raise StateError(_too_deep(), source=self.source) from None
        return super().raw_data()

    def check_text(self) -> None:
        check_text(self.data, tree=True)

    def find(self, path: DocPath, at_key: bool) -> _Found | None:
        assert self.text is not None
        best: _JsonValue | None = None
        for value in _json_values(self.text):
            n = len(value.path)
            if n <= len(path) and value.path == path[:n] and (best is None or n >= len(best.path)):
                best = value  # the longest prefix of ``path``; the last of equal keys wins
        if best is None:
            return None
        exact = best.path == path
        at = best.key if exact and at_key and best.key >= 0 else best.start
        line, column = _line_column(self.text, at)
        return _Found(line, column, best.scalar if exact and not at_key else None)


class _Found(NamedTuple):
    """Where a node is written (1-based), and the text of a scalar found at the path."""

    line: int
    column: int
    scalar: str | None


class _JsonValue(NamedTuple):
    """A value of a JSON text: its path, where it starts, where its key starts (-1 in a
    list or at the root), and a scalar's text as written (None for a container)."""

    path: DocPath
    start: int
    key: int
    scalar: str | None


_MAX_DIGITS = 4000
"""Python refuses to read whole numbers of more than 4300 digits from text (see
xce.cluster.yaml_stream.long_int)."""

_JSON_TOKEN = re.compile(
    r'[ \t\r\n]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([][{}:,])|([^][{}:," \t\r\n]+))', re.S
)
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def _json_values(text: str) -> Iterator[_JsonValue]:
    """Every value of a JSON text in document order, without recursion; stops quietly
    where the text stops being JSON (the decoder reports that, with its position)."""
    frames: list[list[Any]] = []  # per open container: [path, is_object, index, key]
    path: DocPath = ()
    key_at = -1
    state = "value"
    pos = 0
    while (m := _JSON_TOKEN.match(text, pos)) is not None:
        string, punct, bare = m.groups()
        start = m.start(m.lastindex or 0)
        pos = m.end()
        if state == "first-item":  # just after "[": a value or "]"
            state = "value"
            if punct != "]":
                path, key_at = (*frames[-1][0], 0), -1
        elif state == "first-key" and punct == "}":
            state = "value"
        if state == "value":
            if punct in ("{", "["):
                yield _JsonValue(path, start, key_at, None)
                frames.append([path, punct == "{", 0, None])
                state = "first-key" if punct == "{" else "first-item"
                continue
            if punct in ("]", "}") and frames and frames[-1][1] == (punct == "}"):
                frames.pop()  # an empty container closes
                state = "after"
                if not frames:
                    return
                continue
            if punct is not None:
                return
            yield _JsonValue(path, start, key_at, string if string is not None else bare)
            state = "after"
            if not frames:
                return
        elif state in ("first-key", "key"):
            if string is None:
                return
            try:
                frames[-1][3] = json.loads(string) if "\\" in string else string[1:-1]
            except ValueError:
                return
            key_at, state = start, "colon"
        elif state == "colon":
            if punct != ":":
                return
            path, state = (*frames[-1][0], frames[-1][3]), "value"
        elif punct == ",":  # state "after": a value was read inside a container
            frame = frames[-1]
            if frame[1]:
                state = "key"
            else:
                frame[2] += 1
                path, key_at, state = (*frame[0], frame[2]), -1, "value"
        elif punct in ("]", "}") and frames[-1][1] == (punct == "}"):
            frames.pop()
            if not frames:
                return
        else:
            return


def _json_too_deep(text: str) -> _JsonValue | None:
    """The first list or mapping of a JSON text nested deeper than MAX_DEPTH, if any."""
    bare = _JSON_STRING.sub("", text)  # strings may hold brackets; a quick upper bound
    codes = np.frombuffer(bare.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    step = np.isin(codes, (0x5B, 0x7B)).view(np.int8) - np.isin(codes, (0x5D, 0x7D)).view(np.int8)
    if step.size == 0 or int(np.cumsum(step, dtype=np.int32).max()) <= MAX_DEPTH:
        return None
    for value in _json_values(text):  # exact: only where it may be too deep
        if value.scalar is None and len(value.path) >= MAX_DEPTH:
            return value
    return None


class _DuplicateKey(Exception):
    """A JSON object holds a key twice (raised to stop the quick check early)."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise _DuplicateKey
    return mapping


def _json_duplicate_keys(text: str) -> Iterator[SpecError]:
    """A SpecError at each key written twice in one JSON object, in document order
    (JSON decoders keep the last silently, as PyYAML does; a typo then hides data).

    A quick check with the C decoder first; the slow scan only when it finds one. Text
    that is not JSON (or nests too deep for the decoder) yields nothing: that error is
    reported where the text is decoded."""
    try:
        json.loads(text, parse_int=_json_int, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey:
        pass
    except (ValueError, RecursionError):
        return
    else:
        return
    seen: set[DocPath] = set()
    for value in _json_values(text):
        if value.key < 0:
            continue
        if value.path in seen:
            key = str(value.path[-1])
            yield SpecError(value.path, f"duplicate key {quote(clip(key))}", at_key=True)
        seen.add(value.path)


def _line_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line_start = text.rfind("\n", 0, position) + 1
    return text.count("\n", 0, position) + 1, position - line_start + 1
