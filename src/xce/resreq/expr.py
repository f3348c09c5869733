"""Select expressions: immutable, interned nodes.

Every node is built through the constructors below, which intern it by its canonical
text: two expressions with the same structure are the *same object* with the same
``id`` (the spec's CSE ``select_node_id``), whatever spacing or redundant parentheses
they were written with. ``id`` is process-local and small (for memo keys); ``digest`` is
a stable 64-bit hash of the canonical text, identical across processes.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "BINARY_OPS",
    "Binary",
    "Defined",
    "Expr",
    "Name",
    "Num",
    "Str",
    "Unary",
    "binary",
    "defined",
    "name",
    "num",
    "stable_hash",
    "string",
    "unary",
]

BinaryOp = Literal["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/"]
UnaryOp = Literal["!", "-"]

# Precedence, low to high; used to print the canonical form with minimal parentheses.
BINARY_OPS: Final[dict[str, int]] = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
}
UNARY_PREC: Final = 7
ATOM_PREC: Final = 8


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (unlike ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True, slots=True, eq=False)
class Expr:
    """Base of every select node. Equality is identity: nodes are interned."""

    id: int
    text: str  # canonical text, minimal parentheses
    prec: int
    digest: int  # stable 64-bit structural hash
    depth: int  # levels of the tree: 1 for a leaf (the parser refuses beyond MAX_DEPTH)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True, eq=False)
class Num(Expr):
    value: float


@dataclass(frozen=True, slots=True, eq=False)
class Str(Expr):
    value: str


@dataclass(frozen=True, slots=True, eq=False)
class Name(Expr):
    """A bare word: a resource name, or a string value when compared with a string resource."""

    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Defined(Expr):
    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Unary(Expr):
    op: UnaryOp
    operand: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Binary(Expr):
    op: BinaryOp
    left: Expr
    right: Expr


_table: dict[str, Expr] = {}
_ids = itertools.count(1)
_lock = threading.Lock()


def _intern(key: str, make: type[Expr], *fields: object, prec: int, depth: int = 1) -> Expr:
    node = _table.get(key)
    if node is not None:
        return node
    with _lock:
        node = _table.get(key)
        if node is None:
            node = make(next(_ids), key, prec, stable_hash(key), depth, *fields)
            _table[key] = node
        return node


def format_number(value: float) -> str:
    """Shortest text that reads back as ``value`` (``4000``, ``2.5``, ``1e+20``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def num(value: float) -> Expr:
    v = float(value) + 0.0  # folds -0.0 into 0.0
    return _intern(format_number(v), Num, v, prec=ATOM_PREC)


def string(value: str) -> Expr:
    quote = '"' if "'" in value else "'"
    return _intern(f"{quote}{value}{quote}", Str, value, prec=ATOM_PREC)


def name(word: str) -> Expr:
    return _intern(word, Name, word, prec=ATOM_PREC)


def defined(word: str) -> Expr:
    return _intern(f"defined({word})", Defined, word, prec=ATOM_PREC)


def unary(op: UnaryOp, operand: Expr) -> Expr:
    if op == "-" and isinstance(operand, Num):
        return num(-operand.value)  # a negative literal is a number, however written
    inner = operand.text if operand.prec >= UNARY_PREC else f"({operand.text})"
    return _intern(f"{op}{inner}", Unary, op, operand, prec=UNARY_PREC, depth=operand.depth + 1)


def binary(op: BinaryOp, left: Expr, right: Expr) -> Expr:
    prec = BINARY_OPS[op]
    lt = left.text if left.prec >= prec else f"({left.text})"
    rt = right.text if right.prec > prec else f"({right.text})"
    if op in ("&&", "||"):
        key = f"{lt} {op} {rt}"
    elif op == "-" and rt.startswith("-"):
        key = f"{lt}-({rt})"  # never print `a--b`
    else:
        key = f"{lt}{op}{rt}"
    depth = max(left.depth, right.depth) + 1
    return _intern(key, Binary, op, left, right, prec=prec, depth=depth)


def walk(node: Expr) -> list[Expr]:
    """Every node of the tree, parents before children."""
    out: list[Expr] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, Unary):
            stack.append(n.operand)
        elif isinstance(n, Binary):
            stack.extend((n.right, n.left))
    return out
