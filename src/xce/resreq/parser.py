"""Parsing requirement strings into the model (lark LALR, transformed while parsing).

:func:`parse` is memoised by string: a million-job trace holds a handful of distinct
requirements. Everything that can be judged from the string alone (syntax, a section
twice, ``span[ptile=0]``, ``0*{-}``, a negative rusage amount, a resource twice in
rusage) is a :class:`~xce.errors.ResreqSyntaxError` with the 1-based column.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any, NoReturn

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from xce.errors import ResreqSyntaxError, clip
from xce.inputs import MAX_DEPTH, MAX_TASKS
from xce.resreq import expr as ex
from xce.resreq.model import (
    RUSAGE_METHODS,
    AlterResreq,
    CompoundResreq,
    OrderKey,
    PrimaryResreq,
    Resreq,
    Rusage,
    RusageGroup,
    Span,
)

__all__ = ["parse"]

_TOKEN_NAMES = {
    "TERM_OPEN": "'n*{'",
    "SELECT_OPEN": "'select['",
    "ORDER_OPEN": "'order['",
    "RUSAGE_OPEN": "'rusage['",
    "SPAN_OPEN": "'span['",
    "SAME_OPEN": "'same['",
    "DEFINED_OPEN": "'defined('",
    "AFFINITY": "'affinity[...]'",
    "CU": "'cu[...]'",
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a quoted string",
    "OROR": "'||'",
    "ANDAND": "'&&'",
    "EQOP": "'=='",
    "RELOP": "a comparison",
    "EQ": "'='",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "BANG": "'!'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "RSQB": "']'",
    "COLON": "':'",
    "COMMA": "','",
}
_RUSAGE_KEYWORDS = ("duration", "decay")
_Section = tuple[str, Token, Any]


class _Fail(Exception):
    """Raised inside the transformer; turned into a located ResreqSyntaxError."""

    def __init__(self, message: str, token: Token) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


class _Build(Transformer[Token, Any]):
    """Builds model objects bottom-up while the LALR parser reduces."""

    def start(self, c: list[Any]) -> Resreq:
        result: Resreq = c[0]
        return result

    # --- expressions -------------------------------------------------------------
    def number(self, c: list[Token]) -> ex.Expr:
        value = float(c[0])
        if not math.isfinite(value):
            raise _Fail(f"number {clip(str(c[0]))} is out of range", c[0])
        return ex.num(value)

    def string(self, c: list[Token]) -> ex.Expr:
        return ex.string(str(c[0])[1:-1])

    def name(self, c: list[Token]) -> ex.Expr:
        return ex.name(str(c[0]))

    def defined(self, c: list[Token]) -> ex.Expr:
        return ex.defined(str(c[1]))

    def paren(self, c: list[Any]) -> ex.Expr:
        inner: ex.Expr = c[1]
        return inner

    def unop(self, c: list[Any]) -> ex.Expr:
        return _shallow(ex.unary("!" if c[0] == "!" else "-", c[1]), c[0])

    def binop(self, c: list[Any]) -> ex.Expr:
        op = str(c[1])
        node = ex.binary("==" if op == "=" else op, c[0], c[2])  # type: ignore[arg-type]
        return _shallow(node, c[1])

    # --- sections ----------------------------------------------------------------
    def select_section(self, c: list[Any]) -> _Section:
        return ("select", c[0], c[1])

    def order_section(self, c: list[Any]) -> _Section:
        return ("order", c[0], tuple(k for k in c[1:-1] if isinstance(k, OrderKey)))

    def order_key(self, c: list[Token]) -> OrderKey:
        return OrderKey(str(c[-1]), ascending=len(c) == 2)

    def signed_number(self, c: list[Token]) -> tuple[float, Token]:
        value = float(c[-1])
        if not math.isfinite(value):
            raise _Fail(f"number {clip(str(c[-1]))} is out of range", c[-1])
        return (-value if len(c) == 2 else value, c[0])

    def rusage_item(self, c: list[Any]) -> tuple[Token, float, Token, Token | None]:
        value, at = c[2]
        method = c[4] if len(c) == 5 else None
        if method is not None and str(method) not in RUSAGE_METHODS:
            choices = ", ".join(f"/{m}" for m in RUSAGE_METHODS)
            raise _Fail(
                f"rusage: unknown reservation method /{clip(str(method))} (expected {choices})",
                method,
            )
        return (c[0], value, at, method)

    def rusage_group(self, c: list[Any]) -> tuple[RusageGroup, list[Token]]:
        amounts: list[tuple[str, float]] = []
        methods: list[tuple[str, str]] = []
        names: list[Token] = []
        extra: dict[str, float] = {}
        for item in c:
            if not isinstance(item, tuple):
                continue
            tok, value, at, method = item
            key = str(tok)
            if key in _RUSAGE_KEYWORDS:
                if method is not None:
                    raise _Fail(f"rusage: {clip(key)} takes no reservation method", method)
                if key in extra:
                    raise _Fail(f"rusage: {clip(key)} given twice", tok)
                if value < 0:
                    raise _Fail(f"rusage: negative {key} {value:g}", at)
                extra[key] = value
                continue
            if value < 0:
                raise _Fail(f"rusage: negative amount {value:g} for {clip(key)}", at)
            amounts.append((key, value))
            if method is not None:
                methods.append((key, str(method)))
            names.append(tok)
        group = RusageGroup(
            tuple(sorted(amounts)),
            extra.get("duration"),
            extra.get("decay"),
            tuple(sorted(methods)),
        )
        return group, names

    def rusage_section(self, c: list[Any]) -> _Section:
        built = [g for g in c[1:-1] if isinstance(g, tuple)]
        seen: set[str] = set()
        for tok in (t for _, names in built for t in names):
            if str(tok) in seen:
                raise _Fail(f"rusage: resource {clip(str(tok))} given twice", tok)
            seen.add(str(tok))
        return ("rusage", c[0], Rusage(tuple(g for g, _ in built)))

    def span_item(self, c: list[Any]) -> tuple[Token, float, Token]:
        value, at = c[2]
        return (c[0], value, at)

    def span_section(self, c: list[Any]) -> _Section:
        values: dict[str, int] = {}
        for tok, value, at in (i for i in c[1:-1] if isinstance(i, tuple)):
            key = str(tok)
            if key not in ("hosts", "ptile"):
                raise _Fail(f"span: unknown key {clip(key)} (expected hosts or ptile)", tok)
            if key in values:
                raise _Fail(f"span: {key} given twice", tok)
            if value != int(value):
                raise _Fail(f"span: {key} must be a whole number", at)
            if key == "ptile" and value < 1:
                raise _Fail(f"span: ptile must be at least 1, got {value:g}", at)
            if key == "ptile" and value > MAX_TASKS:
                raise _Fail(f"span: ptile must be at most {MAX_TASKS}, got {value:g}", at)
            if key == "hosts" and value not in (1, -1):
                raise _Fail(f"span: hosts must be 1 or -1, got {value:g}", at)
            values[key] = int(value)
        if "ptile" in values and values.get("hosts") == 1:
            raise _Fail("span: hosts=1 and ptile cannot be combined", c[0])
        ptile = values.get("ptile")
        hosts = None if ptile is not None else values.get("hosts")
        return ("span", c[0], Span(hosts=hosts, ptile=ptile))

    def same_section(self, c: list[Any]) -> _Section:
        return ("same", c[0], tuple(str(t) for t in c[1:-1] if t.type == "NAME"))

    def affinity_section(self, c: list[Token]) -> _Section:
        return ("affinity", c[0], _bracket_body(c[0]))

    def cu_section(self, c: list[Token]) -> _Section:
        return ("cu", c[0], _bracket_body(c[0]))

    # --- shapes ------------------------------------------------------------------
    def simple(self, c: list[Any]) -> PrimaryResreq:
        found: dict[str, Any] = {}
        for item in c:
            if isinstance(item, ex.Expr):
                found["select"] = item  # the implicit leading select comes first
                continue
            section, tok, value = item
            if section in found:
                raise _Fail(f"section {section}[] given twice", tok)
            found[section] = value
        if "rusage" not in found:
            found["rusage"] = Rusage()
        return PrimaryResreq(**found)

    def term(self, c: list[Any]) -> PrimaryResreq:
        n = _multiplier(c[0])
        primary: PrimaryResreq = c[1]
        return primary.with_tasks(n, n)

    def empty_term(self, c: list[Token]) -> PrimaryResreq:
        n = _multiplier(c[0])
        return PrimaryResreq(min_tasks=n, max_tasks=n)

    def compound(self, c: list[Any]) -> CompoundResreq:
        total = 0
        for item, before in zip(c, [None, *c], strict=False):
            if isinstance(item, PrimaryResreq):
                total += item.max_tasks
                if total > MAX_TASKS and isinstance(before, Token):
                    raise _Fail(
                        f"the compound requirement totals more than {MAX_TASKS} tasks", before
                    )
        return CompoundResreq(tuple(t for t in c if isinstance(t, PrimaryResreq)))

    def alt_item(self, c: list[Any]) -> PrimaryResreq | CompoundResreq:
        body: PrimaryResreq | CompoundResreq = c[1]
        return body

    def alter(self, c: list[Any]) -> AlterResreq:
        return AlterResreq(tuple(a for a in c if not isinstance(a, Token)))


_MAX_MULTIPLIER = MAX_TASKS

TOO_DEEP = (
    f"the expression nests deeper than {MAX_DEPTH} levels "
    "(operators inside operators, or parentheses inside parentheses)"
)


def _shallow(node: ex.Expr, at: Token) -> ex.Expr:
    """``node``, unless it nests deeper than MAX_DEPTH: evaluation recurses on the tree."""
    if node.depth > MAX_DEPTH:
        raise _Fail(TOO_DEEP, at)
    return node


_PAREN_SCAN = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|[()]")


def _check_parentheses(text: str) -> None:
    """Refuse parentheses nested deeper than MAX_DEPTH (outside quoted strings), at the
    first one too deep, before the parser reads the text."""
    depth = 0
    for m in _PAREN_SCAN.finditer(text):
        if m[0] == "(":
            depth += 1
            if depth > MAX_DEPTH:
                lines = text[: m.start()].split("\n")
                line = len(lines)
                multi = "\n" in text
                raise ResreqSyntaxError(
                    TOO_DEEP,
                    line=line if multi else None,
                    column=len(lines[-1]) + 1,
                    text=text.split("\n")[line - 1],
                )
        elif m[0] == ")":
            depth = max(depth - 1, 0)


def _multiplier(tok: Token) -> int:
    digits = str(tok).split("*", 1)[0].strip()
    if len(digits.lstrip("0")) > len(str(_MAX_MULTIPLIER)):
        raise _Fail(f"compound term multiplier is too large (at most {_MAX_MULTIPLIER})", tok)
    n = int(digits)
    if n > _MAX_MULTIPLIER:
        raise _Fail(f"compound term multiplier is too large (at most {_MAX_MULTIPLIER})", tok)
    if n < 1:
        raise _Fail(f"compound term multiplier must be at least 1, got {n}", tok)
    return n


def _bracket_body(tok: Token) -> str:
    text = str(tok)
    return text[text.index("[") + 1 : -1].strip()


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("xce.resreq").joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", transformer=_Build(), cache=False)


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return repr(clip(str(tok)))


def _raise(text: str, err: UnexpectedInput) -> NoReturn:
    line = max(err.line, 1) if isinstance(err.line, int) else 1
    column = err.column if isinstance(err.column, int) and err.column > 0 else None
    lines = text.split("\n")
    line_text = lines[min(line, len(lines)) - 1]
    if isinstance(err, UnexpectedToken):
        expected = sorted({_TOKEN_NAMES.get(t, t) for t in err.expected if not t.startswith("$")})
        message = f"unexpected {_describe(err.token)}"
        if err.token.type == "$END":
            column = len(line_text) + 1
    elif isinstance(err, UnexpectedCharacters):
        message = f"unexpected character {text[err.pos_in_stream or 0]!r}"
        expected = sorted({_TOKEN_NAMES.get(t, t) for t in err.allowed})
    else:
        assert isinstance(err, UnexpectedEOF)
        message, expected, column = "unexpected end of input", [], len(line_text) + 1
    if expected:
        message += "; expected " + (
            expected[0] if len(expected) == 1 else "one of " + ", ".join(expected)
        )
    raise ResreqSyntaxError(
        message, line=line if len(lines) > 1 else None, column=column, text=line_text
    )


_EMPTY = PrimaryResreq()


@lru_cache(maxsize=65536)
def parse(text: str) -> Resreq:
    """Parse a requirement string; memoised. Raises :class:`ResreqSyntaxError`."""
    if not text:
        return _EMPTY  # what the grammar makes of it, without building the parser
    _check_parentheses(text)
    try:
        result: Resreq = _parser().parse(text)  # type: ignore[assignment]  # the transformer's
    except UnexpectedInput as err:
        _raise(text, err)
    except _Fail as fail:
        lines = text.split("\n")
        line = fail.token.line or 1
        raise ResreqSyntaxError(
            fail.message,
            line=line if len(lines) > 1 else None,
            column=fail.token.column,
            text=lines[min(line, len(lines)) - 1],
        ) from None
    return result
