"""Evaluating select expressions against hosts, in bulk (numpy) and memoised.

:func:`compile_select` binds an interned expression to a cluster's catalog once: it
resolves every bare word (a resource, ``max<name>``, a string value, ``any``), checks
types, and says whether the select reads availability (``dynamic``) and whether it can
turn *true* as resources fall (then the unsatisfiable cache must not trust it; design §3).

Semantics (design §2): a consumable name is the amount available now; ``max<name>`` its
capacity; strings compare as strings, ``any`` matching every value; a tag is 1 or 0; a
host lacking a resource fails every comparison on it; non-zero is true. LSF's
``type==local`` (and ``model==local``: the submission host's type or model) is true on
every host, because no state says where a job was submitted (:data:`LOCAL_NAMES`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from xce.cluster.catalog import ResourceCatalog, ResourceKind
from xce.errors import ResreqError, clip
from xce.inputs import MAX_DEPTH
from xce.resreq import expr as ex

if TYPE_CHECKING:
    from xce.cluster.hosts import HostTable

__all__ = ["CompiledSelect", "HostView", "SelectMemo", "compile_select"]

BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]
_Kind = Literal["num", "str", "any"]
_Fn = Callable[["HostView", "IndexArray | None"], Any]

_COMPARE = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
_INCREASING = frozenset({">", ">="})  # `avail > c` can only turn false as avail falls
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

LOCAL = "local"
LOCAL_NAMES = frozenset({"type", "model"})
"""The string resources for which LSF's bare word ``local`` means "the value of the host
the job was submitted from". A state never says which host that was, so xce reads it as
the value of each host itself: ``type==local`` holds on every host (also on one lacking
``type``, and on a cluster without ``type`` at all: LSF's own default requirement is
valid everywhere), ``type!=local`` on none. A cluster that defines a resource named
``local`` keeps its meaning."""


class HostView(Protocol):
    """What the evaluator reads: static columns, and availability *now*."""

    @property
    def hosts(self) -> HostTable:
        """The host table (static columns and capacities)."""
        ...

    def available(self, name: str) -> npt.NDArray[np.float64]:
        """Per-host amount of consumable ``name`` available now (NaN where lacking)."""
        ...

    def shared_available(self, name: str) -> float:
        """Cluster-wide amount of shared resource ``name`` available now."""
        ...

    def shared_total(self, name: str) -> float:
        """Cluster-wide total of shared resource ``name``."""
        ...


@dataclass(frozen=True, slots=True)
class _Bound:
    fn: _Fn
    kind: _Kind
    dynamic: bool


@dataclass(frozen=True, slots=True, eq=False)
class CompiledSelect:
    """A select bound to a catalog. ``evaluate`` returns a bool mask over ``idx`` hosts."""

    expr: ex.Expr
    dynamic: bool  # reads availability: memo entries go stale when a host is charged
    monotone: bool  # can only turn false as resources fall: safe for the unsat cache
    reads_shared: bool  # reads a cluster-wide amount: stale on every host when one is charged
    _fn: _Fn
    _arithmetic: bool = True  # has + - * /: numpy may warn of overflow or division by zero

    @property
    def id(self) -> int:
        return self.expr.id

    def evaluate(self, view: HostView, idx: IndexArray | None = None) -> BoolArray:
        """Truth of the select on hosts ``idx`` (all hosts when None)."""
        n = view.hosts.n if idx is None else len(idx)
        if self._arithmetic:
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                value = self._fn(view, idx)
        else:  # comparisons, logic and NaN tests never warn: no errstate per call
            value = self._fn(view, idx)
        truth = _truthy(value)
        if isinstance(truth, np.ndarray) and truth.shape == (n,):
            return truth  # a fresh array already
        return np.broadcast_to(truth, (n,)).copy()


def _truthy(value: Any) -> Any:
    return np.logical_and(np.not_equal(value, 0), np.logical_not(np.isnan(value)))


def _take(array: npt.NDArray[Any], idx: IndexArray | None) -> npt.NDArray[Any]:
    return array if idx is None else array[idx]


class _Compiler:
    def __init__(self, catalog: ResourceCatalog) -> None:
        self.catalog = catalog

    def fail(self, message: str, token: str | None = None) -> ResreqError:
        err = ResreqError(message)
        err.token = token
        return err

    def bind(self, node: ex.Expr, *, literal_ok: bool = False) -> _Bound:
        if isinstance(node, ex.Num):
            value = node.value
            return _Bound(lambda v, i: value, "num", False)
        if isinstance(node, ex.Str):
            s = node.value
            return _Bound(lambda v, i: s, "str", False)
        if isinstance(node, ex.Name):
            return self.name(node.name, literal_ok)
        if isinstance(node, ex.Defined):
            return self.defined(node.name)
        if isinstance(node, ex.Unary):
            return self.unary(node)
        assert isinstance(node, ex.Binary)
        if node.op in _COMPARE:
            return self.compare(node)
        if node.op in ("&&", "||"):
            return self.logical(node)
        return self.arith(node)

    def name(self, word: str, literal_ok: bool) -> _Bound:
        kind = self.catalog.kind(word)
        if kind is ResourceKind.CONSUMABLE:
            return _Bound(lambda v, i: _take(v.available(word), i), "num", True)
        if kind is ResourceKind.SHARED:
            return _Bound(lambda v, i: v.shared_available(word), "num", True)
        if kind is ResourceKind.NUMERIC:
            return _Bound(lambda v, i: _take(v.hosts.numeric[word], i), "num", False)
        if kind is ResourceKind.BOOLEAN:
            return _Bound(
                lambda v, i: _take(v.hosts.tags[word], i).astype(np.float64), "num", False
            )
        if kind is ResourceKind.STRING:
            return _Bound(lambda v, i: _take(v.hosts.strings[word], i), "str", False)
        base = word[3:] if word.startswith("max") else ""
        base_kind = self.catalog.kind(base)
        if base_kind is ResourceKind.CONSUMABLE:
            return _Bound(lambda v, i: _take(v.hosts.capacity[base], i), "num", False)
        if base_kind is ResourceKind.SHARED:
            return _Bound(lambda v, i: v.shared_total(base), "num", False)
        if literal_ok:
            return _Bound(lambda v, i: word, "any" if word == "any" else "str", False)
        raise self.fail(
            f"unknown resource {clip(word)!r} in select (no host of this cluster has it)", word
        )

    def defined(self, word: str) -> _Bound:
        kind = self.catalog.kind(word)
        if kind is None:
            raise self.fail(f"unknown resource {clip(word)!r} in defined()", word)
        if kind is ResourceKind.SHARED:
            return _Bound(lambda v, i: 1.0, "num", False)
        if kind is ResourceKind.BOOLEAN:
            return self.name(word, False)
        if kind is ResourceKind.STRING:
            return _Bound(lambda v, i: _defined_str(_take(v.hosts.strings[word], i)), "num", False)
        column = "capacity" if kind is ResourceKind.CONSUMABLE else "numeric"
        return _Bound(
            lambda v, i: (~np.isnan(_take(getattr(v.hosts, column)[word], i))).astype(np.float64),
            "num",
            False,
        )

    def unary(self, node: ex.Unary) -> _Bound:
        inner = self.number(node.operand, node.op)
        f = inner.fn
        if node.op == "-":
            return _Bound(lambda v, i: np.negative(f(v, i)), "num", inner.dynamic)
        return _Bound(
            lambda v, i: np.logical_not(_truthy(f(v, i))).astype(np.float64), "num", inner.dynamic
        )

    def number(self, node: ex.Expr, op: str) -> _Bound:
        bound = self.bind(node)
        if bound.kind != "num":
            raise self.fail(f"{clip(node.text)!r} is a string; {op!r} needs a number")
        return bound

    def logical(self, node: ex.Binary) -> _Bound:
        left, right = self.number(node.left, node.op), self.number(node.right, node.op)
        lf, rf = left.fn, right.fn
        combine = np.logical_and if node.op == "&&" else np.logical_or
        return _Bound(
            lambda v, i: combine(_truthy(lf(v, i)), _truthy(rf(v, i))).astype(np.float64),
            "num",
            left.dynamic or right.dynamic,
        )

    def arith(self, node: ex.Binary) -> _Bound:
        left, right = self.number(node.left, node.op), self.number(node.right, node.op)
        lf, rf = left.fn, right.fn
        dyn = left.dynamic or right.dynamic
        if node.op == "/":
            return _Bound(lambda v, i: _divide(lf(v, i), rf(v, i)), "num", dyn)
        op = {"+": np.add, "-": np.subtract, "*": np.multiply}[node.op]
        return _Bound(lambda v, i: op(np.asarray(lf(v, i), np.float64), rf(v, i)), "num", dyn)

    def compare(self, node: ex.Binary) -> _Bound:
        local = self.local(node)
        if local is not None:
            return local
        left = self.bind(node.left, literal_ok=_is_string_side(node.right, self.catalog))
        right = self.bind(node.right, literal_ok=_is_string_side(node.left, self.catalog))
        kinds = {left.kind, right.kind}
        if "num" in kinds and kinds != {"num"}:
            raise self.fail(f"cannot compare a string with a number in {clip(node.text)!r}")
        lf, rf, op = left.fn, right.fn, node.op
        dyn = left.dynamic or right.dynamic
        if kinds == {"num"}:
            return _Bound(lambda v, i: _compare_num(op, lf(v, i), rf(v, i)), "num", dyn)
        if "any" in kinds:
            side = rf if left.kind == "any" else lf
            if op not in ("==", "!="):
                raise self.fail(f"'any' only compares with == or != in {clip(node.text)!r}")
            if kinds == {"any"}:
                return _Bound(lambda v, i: 1.0 if op == "==" else 0.0, "num", False)
            return _Bound(lambda v, i: _any(op, side(v, i)), "num", dyn)
        return _Bound(lambda v, i: _compare_str(op, lf(v, i), rf(v, i)), "num", dyn)

    def local(self, node: ex.Binary) -> _Bound | None:
        """``type==local`` / ``type!=local`` (either side, ``model`` too): a constant,
        as the submission host is unknown (:data:`LOCAL_NAMES`); None for any other
        comparison."""
        sides = (node.left, node.right)
        if LOCAL in self.catalog or not all(isinstance(s, ex.Name) for s in sides):
            return None
        names = {s.name for s in sides if isinstance(s, ex.Name)}
        if LOCAL not in names or not names - {LOCAL} <= LOCAL_NAMES or len(names) != 2:
            return None
        if node.op not in ("==", "!="):
            raise self.fail(f"'local' only compares with == or != in {clip(node.text)!r}")
        value = 1.0 if node.op == "==" else 0.0
        return _Bound(lambda v, i: value, "num", False)


def _is_string_side(node: ex.Expr, catalog: ResourceCatalog) -> bool:
    return isinstance(node, ex.Str) or (
        isinstance(node, ex.Name) and catalog.kind(node.name) is ResourceKind.STRING
    )


def _present(values: Any) -> npt.NDArray[np.bool_]:
    """Where a string column has a value (None: the host lacks the resource)."""
    arr = np.asarray(values, dtype=object)
    return np.asarray(arr != None)  # noqa: E711 - elementwise on object arrays


def _defined_str(values: Any) -> Any:
    return _present(values).astype(np.float64)


def _divide(a: Any, b: Any) -> Any:
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return np.divide(a, b, out=np.full(a.shape, np.nan), where=b != 0)


def _compare_num(op: str, a: Any, b: Any) -> Any:
    result = _COMPARE[op](a, b)
    if op == "!=":  # NaN != x is True in IEEE; a missing resource fails every comparison
        result = result & ~np.isnan(a) & ~np.isnan(b)
    return np.asarray(result, np.float64)


def _compare_str(op: str, a: Any, b: Any) -> Any:
    a_arr, b_arr = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    ok = _present(a_arr) & _present(b_arr)
    a_arr, b_arr = np.where(ok, a_arr, ""), np.where(ok, b_arr, "")
    return np.asarray(_COMPARE[op](a_arr, b_arr) & ok, np.float64)


def _any(op: str, values: Any) -> Any:
    present = _present(values)
    return np.asarray(present if op == "==" else np.zeros_like(present), np.float64)


def _reads_availability(node: ex.Expr, catalog: ResourceCatalog) -> bool:
    return any(
        isinstance(n, ex.Name)
        and catalog.kind(n.name) in (ResourceKind.CONSUMABLE, ResourceKind.SHARED)
        for n in ex.walk(node)
    )


def _monotone(node: ex.Expr, positive: bool, catalog: ResourceCatalog) -> bool:
    """True if, as available amounts only fall, the truth of ``node`` can only fall.

    ``positive`` is False under an odd number of ``!``. Conservative: a consumable in
    arithmetic, or compared with ``==``/``!=``, or in the "wrong" direction, is unsafe.
    """
    if not _reads_availability(node, catalog):
        return True
    if isinstance(node, ex.Unary) and node.op == "!":
        return _monotone(node.operand, not positive, catalog)
    if isinstance(node, ex.Binary) and node.op in ("&&", "||"):
        return _monotone(node.left, positive, catalog) and _monotone(node.right, positive, catalog)
    if isinstance(node, ex.Name):
        return positive  # `mem` as a truth value: non-zero can only turn zero
    if isinstance(node, ex.Binary) and node.op in _COMPARE:
        left_dyn = _reads_availability(node.left, catalog)
        right_dyn = _reads_availability(node.right, catalog)
        dyn_side = node.left if left_dyn else node.right
        if (left_dyn and right_dyn) or not isinstance(dyn_side, ex.Name):
            return False
        op = node.op if left_dyn else _MIRROR[node.op]
        if op in ("==", "!="):
            return False
        return (op in _INCREASING) == positive
    return False


@lru_cache(maxsize=16384)
def compile_select(node: ex.Expr, catalog: ResourceCatalog) -> CompiledSelect:
    """Bind ``node`` to ``catalog``; raises :class:`ResreqError` (no column) when invalid."""
    if node.depth > MAX_DEPTH:  # the parser refuses such text; a tree built in Python
        raise ResreqError(f"select nests deeper than {MAX_DEPTH} levels (binding recurses)")
    bound = _Compiler(catalog).bind(node)
    if bound.kind != "num":
        raise ResreqError(f"select {clip(node.text)!r} is a string, not a condition")
    shared = any(
        isinstance(n, ex.Name) and catalog.kind(n.name) is ResourceKind.SHARED
        for n in ex.walk(node)
    )
    arithmetic = any(
        isinstance(n, ex.Binary) and n.op in ("+", "-", "*", "/") for n in ex.walk(node)
    )
    return CompiledSelect(
        node, bound.dynamic, _monotone(node, True, catalog), shared, bound.fn, arithmetic
    )


class SelectMemo:
    """Per-session memo of select results per (node id, host).

    Masks are computed for all hosts at once; :meth:`forget_host` drops one host's
    entries (the session charged it, so availability there fell), and they are
    recomputed for that host alone on the next read. :meth:`reset` starts afresh.
    """

    __slots__ = ("_charged", "_masks", "_shared_readers", "view")

    def __init__(self, view: HostView) -> None:
        self.view = view
        self._masks: dict[int, tuple[BoolArray, int]] = {}
        self._charged: list[int] = []
        self._shared_readers: set[int] = set()

    def mask(self, select: CompiledSelect) -> BoolArray:
        """The select's truth on every host (read-only by convention)."""
        entry = self._masks.get(select.id)
        if entry is None:
            mask = select.evaluate(self.view)
            if select.reads_shared:
                self._shared_readers.add(select.id)
        else:
            mask, seen = entry
            if not select.dynamic or seen == len(self._charged):
                return mask
            charged = self._charged[seen:]
            if len(charged) <= 256:  # the usual few hosts: no sort
                stale = np.fromiter(dict.fromkeys(charged), np.intp)
            else:
                stale = np.unique(np.asarray(charged, dtype=np.intp))
            mask[stale] = select.evaluate(self.view, stale)
        self._masks[select.id] = (mask, len(self._charged))
        return mask

    def matches(self, select: CompiledSelect, host: int) -> bool:
        return bool(self.mask(select)[host])

    def forget_hosts(self, hosts: list[int]) -> None:
        """:meth:`forget_host` for many hosts."""
        self._charged.extend(hosts)

    def forget_host(self, host: int) -> None:
        """The session charged ``host``: its memo entries are stale."""
        self._charged.append(host)

    def forget_shared(self) -> None:
        """A shared amount was charged: every host's entries of selects reading one are stale."""
        for key in self._shared_readers:
            self._masks.pop(key, None)

    def reset(self) -> None:
        self._masks.clear()
        self._charged.clear()
        self._shared_readers.clear()
