"""Reading a YAML state without holding its whole node tree (issue 26).

Why: PyYAML's node tree costs about forty times the text (a node, two marks, a tag and
a value per scalar), so a 50 MB state with an error on its last line needed more than
3 GB before a single check ran. Here the root mapping is read pair by pair and each
entry of a list directly under it (``hosts[i]``, ``jobs[i]``, ...) is composed,
checked (duplicate keys, nesting) and constructed on its own, then its nodes are
dropped. What is kept is the data, the root mapping's own nodes with every streamed
list as an empty placeholder, and the nodes that carry an anchor (an alias may refer to
them later). Memory is then the data plus one entry's nodes.

The semantics are PyYAML's safe loader over libyaml's events: the same resolver, the
same constructors (merge keys, explicit tags), an alias is the anchored object itself.
To locate an error inside a streamed entry, :class:`YamlTree` reads the text again and
composes only the entries asked for (:meth:`YamlTree.prefetch` asks for many at once).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from typing import Any, NamedTuple

import yaml
from yaml.composer import Composer
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from xce.cluster.schema import MAX_DEPTH, DocPath, SpecError, quote

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

__all__ = [
    "LIBYAML",
    "NOTHING",
    "Loader",
    "Parsed",
    "TooDeep",
    "YamlTree",
    "duplicate_keys",
    "find_node",
    "long_int",
    "parse",
]

LIBYAML = _BaseLoader.__name__.startswith("C")

_MAX_DIGITS = 4000
"""Python refuses to read whole numbers of more than 4300 digits from text: such a number
is read as a power of ten of as many digits, which the schema then refuses as too large."""

_STR = "tag:yaml.org,2002:str"


def long_int(negative: bool, digits: int) -> int:
    """A whole number of ``digits`` digits that Python will not read from text: 10**(digits-1),
    far beyond every limit, so the schema refuses it as too large where it is written."""
    power: int = 10 ** (digits - 1)
    return -power if negative else power


class Loader(_BaseLoader):
    """Safe YAML, plus YAML 1.2 floats: ``1e6`` is a number, not the string "1e6"."""


Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _construct_int(loader: Loader, node: yaml.ScalarNode) -> Any:
    digits = node.value.lstrip("+-").replace("_", "")
    if len(digits) > _MAX_DIGITS and digits.isdigit():
        return long_int(node.value.startswith("-"), len(digits))
    return loader.construct_yaml_int(node)


Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


class TooDeep(Exception):
    """A list or mapping nested deeper than MAX_DEPTH starts at ``mark``."""

    def __init__(self, mark: Any) -> None:  # a yaml.Mark (libyaml's or PyYAML's)
        super().__init__(f"nested deeper than {MAX_DEPTH}")
        self.mark = mark


class _StreamLoader(Composer, Loader):
    """libyaml's events composed by PyYAML's own composer (so that a caller can stop
    after any node), never deeper than MAX_DEPTH; the constructor keeps an object only
    when an alias may ask for it again (its node has an anchor or is inside one: a merge
    key copies an anchored mapping's pairs), so that an alias stays one shared object."""

    def __init__(self, text: str) -> None:
        Loader.__init__(self, text)
        Composer.__init__(self)
        self.level = 0  # the level of the node being composed (the root is level 1)
        self.shared: set[yaml.Node] = set()
        self._anchors_open = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        node: Any
        if self.check_event(AliasEvent):
            node = super().compose_node(parent, index)
            return node  # type: ignore[no-any-return]
        event: Any = self.peek_event()
        if self.level >= MAX_DEPTH and isinstance(event, CollectionStartEvent):
            raise TooDeep(event.start_mark)  # before recursing: the composer recurses
        anchor = event.anchor is not None
        shared = anchor or self._anchors_open > 0  # an alias may reach it again
        self.level += 1
        self._anchors_open += anchor
        try:
            node = super().compose_node(parent, index)
        finally:
            self.level -= 1
            self._anchors_open -= anchor
        if shared:
            self.shared.add(node)
        return node  # type: ignore[no-any-return]

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        data = super().construct_object(node, deep)
        if node not in self.shared:  # no alias reaches it: nothing will ask again
            del self.constructed_objects[node]
        return data

    def construct_part(self, node: yaml.Node) -> Any:
        """``node`` constructed whole (construct_document, without forgetting anchors)."""
        data = self.construct_object(node)
        while self.state_generators:
            generators, self.state_generators = self.state_generators, []
            for generator in generators:
                for _ in generator:
                    pass
        return data


class Problem(NamedTuple):
    """A duplicate key (``error``) or, ending the list, nesting too deep (``deep``)."""

    error: SpecError | None
    deep: TooDeep | None


class Parsed(NamedTuple):
    """A YAML document read by :func:`parse`.

    ``root``: its root node (None: empty), every streamed list an empty placeholder;
    ``data``: the document as Python data (None when ``construct_error`` is set);
    ``problems``: duplicate keys in the order a walk of the whole tree meets them,
    possibly ended by nesting too deep; ``construct_error``: the first error of the
    constructor (an unknown tag, a bad ``!!binary``), to be reported after those;
    ``streamed``: per placeholder (by id), its pair's index in the root mapping and its
    number of entries."""

    root: yaml.Node | None
    data: Any
    problems: list[Problem]
    construct_error: yaml.MarkedYAMLError | None
    streamed: dict[int, tuple[int, int]]


NOTHING = Parsed(None, None, [], None, {})
"""What an empty text parses to."""


def _streamable(loader: _StreamLoader, key: yaml.Node) -> bool:
    """Whether the value after ``key`` is a list read entry by entry: a plain list (no
    anchor, no tag) under a plain string key (not the merge key ``<<``)."""
    if not isinstance(key, yaml.ScalarNode) or key.tag != _STR or key.value == "<<":
        return False
    event: Any = loader.peek_event()
    return (
        isinstance(event, SequenceStartEvent) and event.anchor is None and event.tag in (None, "!")
    )


def _start(loader: _StreamLoader) -> bool:
    """Drop the stream's and document's starts; True when there is a document."""
    loader.get_event()
    if loader.check_event(StreamEndEvent):
        return False
    loader.get_event()
    return True


def _finish(loader: _StreamLoader, root: yaml.Node | None) -> None:
    """Drop the document's end; refuse a second document, as get_single_node does."""
    if root is None:
        return
    loader.get_event()
    if not loader.check_event(StreamEndEvent):
        event: Any = loader.get_event()
        raise yaml.composer.ComposerError(
            "expected a single document in the stream",
            root.start_mark,
            "but found another document",
            event.start_mark,
        )


def _root_mapping(loader: _StreamLoader) -> yaml.MappingNode | None:
    """The root mapping's node, opened (its start event taken), when the root is a
    mapping without an anchor; None (nothing taken) for any other root."""
    event: Any = loader.peek_event()
    if not isinstance(event, MappingStartEvent) or event.anchor is not None:
        return None
    loader.get_event()
    tag = event.tag
    if tag is None or tag == "!":
        tag = loader.resolve(yaml.MappingNode, None, event.implicit)  # type: ignore[no-untyped-call]
    loader.level = 1
    start: Any = event.start_mark
    return yaml.MappingNode(tag, [], start, None, flow_style=event.flow_style)


def _open_list(loader: _StreamLoader) -> yaml.SequenceNode:
    event: Any = loader.get_event()
    tag = loader.resolve(yaml.SequenceNode, None, event.implicit)  # type: ignore[no-untyped-call]
    return yaml.SequenceNode(tag, [], event.start_mark, None, flow_style=event.flow_style)


def parse(text: str) -> Parsed:
    """Read a YAML document (see the module docstring). Raises PyYAML's syntax errors,
    :class:`TooDeep` for text nested too deep, RecursionError never (the composer stops
    at MAX_DEPTH)."""
    loader = _StreamLoader(text)
    try:
        if not _start(loader):
            return Parsed(None, None, [], None, {})
        root = _root_mapping(loader)
        if root is None:  # not a mapping: nothing to stream (and not a state either)
            node = loader.compose_node(None, None)
            _finish(loader, node)
            problems = list(_problems(node, (), loader, set()))
            error, data = _constructed(loader, node)
            return Parsed(node, data, problems, error, {})
        return _parse_mapping(loader, root)
    finally:
        loader.dispose()


def _parse_mapping(loader: _StreamLoader, root: yaml.MappingNode) -> Parsed:
    seen: set[yaml.Node] = set()
    inner: list[Problem] = []
    streamed: dict[int, tuple[int, int]] = {}
    lists: list[tuple[yaml.SequenceNode, list[Any]]] = []
    error: yaml.MarkedYAMLError | None = None
    while not loader.check_event(MappingEndEvent):
        key = loader.compose_node(root, None)
        at: DocPath = (key.value,) if isinstance(key, yaml.ScalarNode) else ()
        if not _streamable(loader, key):
            value = loader.compose_node(root, key)
            if at:
                inner.extend(_problems(value, at, loader, seen))
            root.value.append((key, value))
            continue
        seq = _open_list(loader)
        items: list[Any] = []
        loader.level = 2
        while not loader.check_event(SequenceEndEvent):
            item = loader.compose_node(seq, len(items))
            inner.extend(_problems(item, (*at, len(items)), loader, seen))
            if error is None:
                try:
                    items.append(loader.construct_part(item))
                except yaml.MarkedYAMLError as err:
                    error = err
            if error is not None:
                items.append(None)
        loader.level = 1
        seq.end_mark = _end_mark(loader)
        streamed[id(seq)] = (len(root.value), len(items))
        lists.append((seq, items))
        root.value.append((key, seq))
    root.end_mark = _end_mark(loader)
    _finish(loader, root)
    problems = [Problem(e, None) for e in _own_duplicates(root, ())] + _until_deep(inner)
    for seq, items in lists:  # the placeholders construct as the lists read
        loader.constructed_objects[seq] = items
        loader.shared.add(seq)
    if error is None:
        error, data = _constructed(loader, root)
    return Parsed(root, None if error else data, problems, error, streamed)


def _end_mark(loader: _StreamLoader) -> Any:
    """Take a collection's end event; its end mark."""
    event: Any = loader.get_event()
    return event.end_mark


def _constructed(loader: _StreamLoader, node: yaml.Node) -> tuple[yaml.MarkedYAMLError | None, Any]:
    try:
        return None, loader.construct_part(node)
    except yaml.MarkedYAMLError as err:
        return err, None


def _until_deep(problems: list[Problem]) -> list[Problem]:
    """The problems up to and including the first nesting too deep (a walk stops there)."""
    for k, problem in enumerate(problems):
        if problem.deep is not None:
            return problems[: k + 1]
    return problems


# -- walking node trees: duplicate keys, nesting through aliases, paths ------------------------


def _problems(
    node: yaml.Node, prefix: DocPath, loader: _StreamLoader, seen: set[yaml.Node]
) -> Iterator[Problem]:
    try:
        for err in duplicate_keys(node, prefix, loader.shared, seen):
            yield Problem(err, None)
    except TooDeep as deep:
        yield Problem(None, deep)


def duplicate_keys(
    root: yaml.Node | None,
    prefix: DocPath = (),
    shared: set[yaml.Node] | None = None,
    seen: set[yaml.Node] | None = None,
) -> Iterator[SpecError]:
    """PyYAML keeps the last of two equal keys silently; a typo then hides data. Raises
    TooDeep at the first collection nested deeper than MAX_DEPTH (aliases included)."""
    for path, node in _mappings(root, prefix, shared, seen):
        yield from _own_duplicates(node, path)


def _own_duplicates(node: yaml.MappingNode, path: DocPath) -> Iterator[SpecError]:
    keys: set[str] = set()
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.value == "<<":
            continue
        if key.value in keys:
            yield SpecError((*path, key.value), f"duplicate key {quote(key.value)}", at_key=True)
        keys.add(key.value)


def _mappings(
    root: yaml.Node | None,
    prefix: DocPath,
    shared: set[yaml.Node] | None,
    seen: set[yaml.Node] | None,
) -> Iterator[tuple[DocPath, yaml.MappingNode]]:
    """Every mapping node with its path, in document order; each node once (aliases may
    form cycles): ``seen`` holds the nodes walked that an alias may reach again
    (``shared``; None: every node), across calls. Raises TooDeep at the first
    collection nested deeper than MAX_DEPTH."""
    seen = set() if seen is None else seen
    stack: list[tuple[DocPath, yaml.Node]] = [(prefix, root)] if root is not None else []
    while stack:
        path, node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        if shared is None or node in shared:
            if node in seen:
                continue
            seen.add(node)
        if len(path) >= MAX_DEPTH:
            raise TooDeep(node.start_mark)
        if isinstance(node, yaml.MappingNode):
            yield path, node
            stack.extend(
                ((*path, k.value), v)
                for k, v in reversed(node.value)
                if isinstance(k, yaml.ScalarNode)
            )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node.value))))


def find_node(root: yaml.Node | None, path: DocPath, at_key: bool) -> tuple[yaml.Node | None, bool]:
    """The node at ``path`` (its key node if ``at_key``), else its nearest existing
    parent; and whether it is the node at ``path`` itself."""
    node = root
    for depth, seg in enumerate(path):
        want_key = at_key and depth == len(path) - 1
        child = _child(node, seg, want_key) if node is not None else None
        if child is None:
            return node, False
        node = child
    return node, node is not None


def _child(node: yaml.Node, seg: str | int, want_key: bool) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in reversed(node.value):  # the last of equal keys is the one in effect
            if isinstance(key, yaml.ScalarNode) and key.value == str(seg):
                return key if want_key else value
    elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
        child: yaml.Node = node.value[seg]
        return child
    return None


# -- locating: entries of streamed lists composed again on demand ----------------------------

_BREAKS = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


class YamlTree:
    """The node tree of a parsed text, entries of streamed lists composed again from the
    text when a path leads into them (kept once composed)."""

    def __init__(self, text: str, parsed: Parsed) -> None:
        self.text = text
        self.root = parsed.root
        self._streamed = parsed.streamed
        self._entries: dict[tuple[int, int], yaml.Node] = {}
        self._starts: array[int] | None = None

    def find(self, path: DocPath, at_key: bool) -> tuple[yaml.Node | None, bool]:
        """As :func:`find_node`, into streamed entries too."""
        node, exact = find_node(self.root, path[:1], at_key and len(path) == 1)
        where = self._streamed.get(id(node)) if exact and len(path) > 1 else None
        if where is None or not isinstance(path[1], int) or not 0 <= path[1] < where[1]:
            return find_node(self.root, path, at_key)
        entry = self._entry(where[0], path[1])
        found, exact = find_node(entry, path[2:], at_key)
        return found, exact

    def prefetch(self, paths: list[DocPath]) -> None:
        """Compose, in one reading, every streamed entry these paths lead into."""
        wanted: set[tuple[int, int]] = set()
        for path in paths:
            node, exact = find_node(self.root, path[:1], False)
            where = self._streamed.get(id(node)) if exact and len(path) > 1 else None
            if where is not None and isinstance(path[1], int) and 0 <= path[1] < where[1]:
                wanted.add((where[0], path[1]))
        wanted -= self._entries.keys()
        if wanted:
            self._entries.update(_entries(self.text, wanted))

    def _entry(self, pair: int, index: int) -> yaml.Node | None:
        if (pair, index) not in self._entries:
            self._entries.update(_entries(self.text, {(pair, index)}))
        return self._entries.get((pair, index))

    def line(self, number: int) -> str | None:
        """Line ``number`` (1-based), counted as YAML counts them: CR LF, CR, LF, NEL,
        U+2028 and U+2029 each end a line (the starts of lines found once)."""
        if self._starts is None:
            self._starts = array("q", [0])
            self._starts.extend(m.end() for m in _BREAKS.finditer(self.text))
        if not 0 < number <= len(self._starts):
            return None
        start = self._starts[number - 1]
        end = self._starts[number] if number < len(self._starts) else len(self.text) + 1
        line = self.text[start:end]
        m = _BREAKS.search(line)
        return line[: m.start()] if m else line


def _entries(text: str, wanted: set[tuple[int, int]]) -> dict[tuple[int, int], yaml.Node]:
    """The entries ``(pair, index)`` of the root mapping's streamed lists, composed again
    (and constructed, so that merge keys are expanded in their nodes as the first reading
    left them); the reading stops after the last one."""
    loader = _StreamLoader(text)
    found: dict[tuple[int, int], yaml.Node] = {}
    last = max(wanted)
    try:
        root = _root_mapping(loader) if _start(loader) else None
        if root is None:
            return found
        pair = 0
        while not loader.check_event(MappingEndEvent) and pair <= last[0]:
            key = loader.compose_node(root, None)
            if not _streamable(loader, key):
                loader.compose_node(root, key)
            else:
                seq = _open_list(loader)
                loader.level, index = 2, 0
                while not loader.check_event(SequenceEndEvent) and (pair, index) <= last:
                    item = loader.compose_node(seq, index)
                    if (pair, index) in wanted:
                        loader.construct_part(item)
                        found[(pair, index)] = item
                    index += 1
                loader.level = 1
                if (pair, index) > last:
                    break
                loader.get_event()
            pair += 1
    except (yaml.YAMLError, TooDeep):
        pass  # the first reading raised nothing before these entries
    finally:
        loader.dispose()
    return found
