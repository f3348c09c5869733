"""Parsing requirement strings (design §2): shapes, sections, precedence, normal form, errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from xce.errors import ResreqSyntaxError
from xce.inputs import MAX_TASKS
from xce.resreq import (
    AlterResreq,
    CompoundResreq,
    PrimaryResreq,
    Resreq,
    Span,
    fingerprint_text,
    parse,
)
from xce.resreq import expr as ex


def tree(node: ex.Expr | None) -> Any:
    """A select node as nested tuples: ``(op, left, right)``, ``(op, operand)``, leaves."""
    if node is None:
        return None
    if isinstance(node, ex.Num):
        return node.value
    if isinstance(node, ex.Str):
        return ("str", node.value)
    if isinstance(node, ex.Name):
        return node.name
    if isinstance(node, ex.Defined):
        return ("defined", node.name)
    if isinstance(node, ex.Unary):
        return (node.op, tree(node.operand))
    assert isinstance(node, ex.Binary)
    return (node.op, tree(node.left), tree(node.right))


def prim(p: PrimaryResreq) -> dict[str, Any]:
    """A primary as a dict of its task counts and the sections it has."""
    out: dict[str, Any] = {"tasks": (p.min_tasks, p.max_tasks)}
    if p.select is not None:
        out["select"] = tree(p.select)
    if p.order:
        out["order"] = [str(k) for k in p.order]
    if p.rusage.groups:
        out["rusage"] = p.rusage.amounts
        durations = [g.duration for g in p.rusage.groups if g.duration is not None]
        if durations:
            out["duration"] = durations
    if p.span is not None:
        out["span"] = p.span
    if p.same:
        out["same"] = p.same
    return out


def shape(r: Resreq) -> Any:
    """The whole requirement: ``prim`` for SIMPLE, lists for COMPOUND and ALTER."""
    if isinstance(r, PrimaryResreq):
        return prim(r)
    if isinstance(r, CompoundResreq):
        return [prim(t) for t in r.terms]
    return ("alter", [shape(a) for a in r.alternatives])


ONE = (1, 1)

ACCEPTED = [
    (
        "select[type==X86_64 && mem>4000] rusage[mem=2000]",
        "simple",
        {
            "tasks": ONE,
            "select": ("&&", ("==", "type", "X86_64"), (">", "mem", 4000.0)),
            "rusage": {"mem": 2000.0},
        },
        "select[type==X86_64 && mem>4000] rusage[mem=2000]",
    ),
    (
        "mem>4000 && fast order[-slots] rusage[mem=2000:swp=500:duration=10]",
        "simple",
        {
            "tasks": ONE,
            "select": ("&&", (">", "mem", 4000.0), "fast"),
            "order": ["-slots"],
            "rusage": {"mem": 2000.0, "swp": 500.0},
            "duration": [10.0],
        },
        "select[mem>4000 && fast] order[-slots] rusage[mem=2000:swp=500:duration=10]",
    ),
    (
        "select[(swp>50 && type==MIPS) || (swp>35 && type==ALPHA)]",
        "simple",
        {
            "tasks": ONE,
            "select": (
                "||",
                ("&&", (">", "swp", 50.0), ("==", "type", "MIPS")),
                ("&&", (">", "swp", 35.0), ("==", "type", "ALPHA")),
            ),
        },
        "select[swp>50 && type==MIPS || swp>35 && type==ALPHA]",
    ),
    (
        "select[((2*cpuf+3*mem)/6 < 1.0) && !fast]",
        "simple",
        {
            "tasks": ONE,
            "select": (
                "&&",
                ("<", ("/", ("+", ("*", 2.0, "cpuf"), ("*", 3.0, "mem")), 6.0), 1.0),
                ("!", "fast"),
            ),
        },
        "select[(2*cpuf+3*mem)/6<1 && !fast]",
    ),
    (
        "select[defined(lic_x) && hname!='host06-x12']",
        "simple",
        {
            "tasks": ONE,
            "select": ("&&", ("defined", "lic_x"), ("!=", "hname", ("str", "host06-x12"))),
        },
        "select[defined(lic_x) && hname!='host06-x12']",
    ),
    (
        "span[ptile=4] rusage[mem=100]",
        "simple",
        {"tasks": ONE, "rusage": {"mem": 100.0}, "span": Span(ptile=4)},
        "rusage[mem=100] span[ptile=4]",
    ),
    (
        "span[hosts=1] same[type:model]",
        "simple",
        {"tasks": ONE, "span": Span(hosts=1), "same": ("type", "model")},
        "span[hosts=1] same[type:model]",
    ),
    (
        "2*{select[type==X86_64] rusage[mem=100]} + 4*{select[mem>1000]}",
        "compound",
        [
            {"tasks": (2, 2), "select": ("==", "type", "X86_64"), "rusage": {"mem": 100.0}},
            {"tasks": (4, 4), "select": (">", "mem", 1000.0)},
        ],
        "2*{select[type==X86_64] rusage[mem=100]} + 4*{select[mem>1000]}",
    ),
    (
        "2*{span[ptile=1]} + 3*{-}",
        "compound",
        [{"tasks": (2, 2), "span": Span(ptile=1)}, {"tasks": (3, 3)}],
        "2*{span[ptile=1]} + 3*{-}",
    ),
    (
        "{select[type==X86_64] rusage[mem=1000]} || {select[type==ARM] rusage[mem=2000]}",
        "alter",
        (
            "alter",
            [
                {"tasks": ONE, "select": ("==", "type", "X86_64"), "rusage": {"mem": 1000.0}},
                {"tasks": ONE, "select": ("==", "type", "ARM"), "rusage": {"mem": 2000.0}},
            ],
        ),
        "{select[type==X86_64] rusage[mem=1000]} || {select[type==ARM] rusage[mem=2000]}",
    ),
    (
        "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}",
        "alter",
        (
            "alter",
            [
                [{"tasks": (2, 2), "select": "fast"}, {"tasks": (2, 2)}],
                [{"tasks": (4, 4), "select": (">", "mem", 100.0)}],
            ],
        ),
        "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}",
    ),
    ("", "simple", {"tasks": ONE}, ""),
]


@pytest.mark.parametrize(("text", "kind", "expected", "normalized"), ACCEPTED)
def test_acceptance_strings_parse(text: str, kind: str, expected: Any, normalized: str) -> None:
    """Issue 2 acceptance: these parse, with the expected kind, structure and normal form."""
    r = parse(text)
    assert r.kind == kind
    assert shape(r) == expected
    assert str(r) == normalized


def test_compound_and_alter_expose_primaries() -> None:
    """A compound's total is the sum of its multipliers; primaries list every leaf in order."""
    c = parse("2*{select[type==X86_64] rusage[mem=100]} + 4*{select[mem>1000]}")
    assert isinstance(c, CompoundResreq)
    assert c.total_tasks == 6
    assert c.primaries == c.terms
    a = parse("{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}")
    assert isinstance(a, AlterResreq)
    assert [p.max_tasks for p in a.primaries] == [2, 2, 4]
    assert a.alternatives[0].primaries[1].is_empty


def test_empty_requirement_is_any_host() -> None:
    """The empty string (and blanks) is a SIMPLE requirement with no section."""
    for text in ("", "   ", "\t"):
        r = parse(text)
        assert isinstance(r, PrimaryResreq)
        assert r.is_empty
        assert r.select is None
        assert r.sections() == []


def test_kept_sections_and_rusage_extras() -> None:
    """affinity[] and cu[] bodies are kept verbatim; duration/decay live on the group."""
    r = parse(
        "select[mem>1] affinity[ core(1, same=socket) ] cu[type=enclosure] rusage[mem=1:decay=1]"
    )
    assert isinstance(r, PrimaryResreq)
    assert r.affinity == "core(1, same=socket)"
    assert r.cu == "type=enclosure"
    assert r.rusage.groups[0].decay == 1.0
    assert str(r) == (
        "select[mem>1] rusage[mem=1:decay=1] affinity[core(1, same=socket)] cu[type=enclosure]"
    )


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("rusage[mem=1]", [{"mem": 1.0}]),
        ("rusage[mem=1:swp=2]", [{"mem": 1.0, "swp": 2.0}]),
        ("rusage[mem=1:duration=5, swp=2]", [{"mem": 1.0}, {"swp": 2.0}]),
        ("rusage[duration=5]", [{}]),
    ],
)
def test_rusage_groups(text: str, groups: list[dict[str, float]]) -> None:
    """Comma groups stay separate; colon items share a group; keywords are not amounts."""
    r = parse(text)
    assert isinstance(r, PrimaryResreq)
    assert [dict(g.amounts) for g in r.rusage.groups] == groups


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("span[hosts=1]", Span(hosts=1)),
        ("span[hosts=-1]", Span(hosts=-1)),
        ("span[ptile=8]", Span(ptile=8)),
        ("span[hosts=-1:ptile=2]", Span(ptile=2)),
    ],
)
def test_span_forms(text: str, span: Span) -> None:
    """The span forms of design §2; hosts=-1 with a ptile is just the ptile."""
    r = parse(text)
    assert isinstance(r, PrimaryResreq)
    assert r.span == span


@pytest.mark.parametrize(
    ("text", "column", "at", "message"),
    [
        ("select[mem>]", 12, "]", "unexpected ']'"),
        ("select[mem>1] select[swp>1]", 15, "select[swp", "select[] given twice"),
        ("rusage[mem=1:mem=2]", 14, "mem=2", "mem given twice"),
        ("span[ptile=0]", 12, "0]", "ptile must be at least 1"),
        ("2*{select[fast]} +", 19, "", "unexpected end of input"),
        ("{select[fast]} || select[mem>1]", 19, "select[mem>1]", "unexpected 'select['"),
        ("0*{-}", 1, "0*{", "multiplier must be at least 1"),
        ("rusage[mem=-5]", 12, "-5", "negative amount -5 for mem"),
    ],
)
def test_acceptance_strings_rejected(text: str, column: int, at: str, message: str) -> None:
    """Issue 2 acceptance: these are syntax errors whose column points at the offending token."""
    with pytest.raises(ResreqSyntaxError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert message in err.message
    assert err.text == text
    assert err.line is None  # one-line requirements give a column only
    assert err.column == column
    assert text[column - 1 :].startswith(at)  # the offending token (nothing: end of input)


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("select[]", 8, "unexpected ']'"),
        ("select[mem>1", 13, "unexpected end of input"),
        ("select[mem>1]]", 14, "unexpected ']'"),
        ("select[mem>1] #", 15, "unexpected character '#'"),
        ("order[]", 7, "unexpected ']'"),
        ("span[hosts=2]", 12, "hosts must be 1 or -1"),
        ("span[ptile=1.5]", 12, "whole number"),
        ("span[width=2]", 6, "unknown key width"),
        ("span[ptile=2:ptile=3]", 14, "ptile given twice"),
        ("span[hosts=1:ptile=2]", 1, "cannot be combined"),
        ("rusage[mem=1:duration=1:duration=2]", 25, "duration given twice"),
        ("rusage[mem=1:duration=-5]", 23, "negative duration -5"),
        ("rusage[mem=1:decay=-1]", 20, "negative decay -1"),
        ("{select[fast]}", 15, "unexpected end of input"),
        ("select[mem>1e999]", 12, "out of range"),
        ("2*{-} || 3*{-}", 7, "unexpected '||'"),
        ("mem>1 mem>2", 7, "unexpected 'mem'"),
        ("select[type=='X86_64]", 14, "unexpected character"),
    ],
)
def test_more_syntax_errors(text: str, column: int, message: str) -> None:
    """Other string-only errors: each a ResreqSyntaxError at the right 1-based column."""
    with pytest.raises(ResreqSyntaxError) as info:
        parse(text)
    assert info.value.column == column
    assert message in info.value.message


def test_expected_tokens_are_named() -> None:
    """A syntax error says what would have been accepted, in the user's words."""
    with pytest.raises(ResreqSyntaxError) as info:
        parse("select[mem>]")
    assert "expected one of" in info.value.message
    assert "a name" in info.value.message
    assert "a number" in info.value.message


def test_error_str_shows_caret_under_column() -> None:
    """str(error) is the message, then the text, then a caret under the column."""
    with pytest.raises(ResreqSyntaxError) as info:
        parse("select[mem>]")
    head, shown, caret = str(info.value).split("\n")
    assert head.startswith("unexpected ']'")
    assert shown == "  select[mem>]"
    assert caret == "  " + " " * 11 + "^"
    assert shown[caret.index("^")] == "]"


def test_error_on_second_line_names_line_and_column() -> None:
    """In a multi-line requirement the error names the line, and the caret is on that line."""
    with pytest.raises(ResreqSyntaxError) as info:
        parse("select[mem>1]\nrusage[mem=]")
    err = info.value
    assert (err.line, err.column) == (2, 12)
    assert err.text == "rusage[mem=]"
    assert str(err).startswith("line 2, column 12: ")
    assert str(err).endswith("  rusage[mem=]\n  " + " " * 11 + "^")


def test_error_caret_with_lone_carriage_return() -> None:
    """The caret's text is the text the column counts in, even with a lone CR in it."""
    with pytest.raises(ResreqSyntaxError) as info:
        parse("select[mem>1]\rrusage[mem=]")
    err = info.value
    assert err.text is not None
    assert err.column is not None
    assert err.column <= len(err.text)
    assert err.text[err.column - 1] == "]"


def test_huge_multiplier_is_a_syntax_error() -> None:
    """Any string that does not parse raises ResreqSyntaxError, however long its numbers."""
    with pytest.raises(ResreqSyntaxError):
        parse("9" * 5000 + "*{-}")


PRECEDENCE = [
    # (written, canonical select text, tree)
    ("a || b && c", "a || b && c", ("||", "a", ("&&", "b", "c"))),
    ("(a || b) && c", "(a || b) && c", ("&&", ("||", "a", "b"), "c")),
    ("a || b || c", "a || b || c", ("||", ("||", "a", "b"), "c")),
    ("a || (b || c)", "a || (b || c)", ("||", "a", ("||", "b", "c"))),
    ("a && b == c", "a && b==c", ("&&", "a", ("==", "b", "c"))),
    ("a == b && c != d", "a==b && c!=d", ("&&", ("==", "a", "b"), ("!=", "c", "d"))),
    ("a == b < c", "a==b<c", ("==", "a", ("<", "b", "c"))),
    ("(a == b) < c", "(a==b)<c", ("<", ("==", "a", "b"), "c")),
    ("a <= b + c", "a<=b+c", ("<=", "a", ("+", "b", "c"))),
    ("a + b >= c", "a+b>=c", (">=", ("+", "a", "b"), "c")),
    ("a + b * c", "a+b*c", ("+", "a", ("*", "b", "c"))),
    ("(a + b) * c", "(a+b)*c", ("*", ("+", "a", "b"), "c")),
    ("a - b - c", "a-b-c", ("-", ("-", "a", "b"), "c")),
    ("a - (b - c)", "a-(b-c)", ("-", "a", ("-", "b", "c"))),
    ("a / b / c", "a/b/c", ("/", ("/", "a", "b"), "c")),
    ("a / (b * c)", "a/(b*c)", ("/", "a", ("*", "b", "c"))),
    ("-a * b", "-a*b", ("*", ("-", "a"), "b")),
    ("-(a * b)", "-(a*b)", ("-", ("*", "a", "b"))),
    ("!a == b", "!a==b", ("==", ("!", "a"), "b")),
    ("!(a == b)", "!(a==b)", ("!", ("==", "a", "b"))),
    ("!a && b", "!a && b", ("&&", ("!", "a"), "b")),
    ("!!a", "!!a", ("!", ("!", "a"))),
    ("- -a", "--a", ("-", ("-", "a"))),
    ("a - -b", "a-(-b)", ("-", "a", ("-", "b"))),
    ("a - -1", "a-(-1)", ("-", "a", -1.0)),
    ("a + -1", "a+-1", ("+", "a", -1.0)),
    ("a = b", "a==b", ("==", "a", "b")),
    ("a=b=c", "a==b==c", ("==", ("==", "a", "b"), "c")),
    ("a > b > c", "a>b>c", (">", (">", "a", "b"), "c")),
]


@pytest.mark.parametrize(("written", "canonical", "expected"), PRECEDENCE)
def test_operator_precedence(written: str, canonical: str, expected: Any) -> None:
    """Unary > * / > + - > relational > == != > && > ||, left-associative; `=` is `==`."""
    r = parse(f"select[{written}]")
    assert isinstance(r, PrimaryResreq)
    assert tree(r.select) == expected
    assert r.select is not None
    assert r.select.text == canonical
    assert parse(f"select[{canonical}]") == r


@pytest.mark.parametrize(
    ("written", "canonical", "value"),
    [
        ("1.50", "1.5", 1.5),
        ("1e3", "1000", 1000.0),
        ("1E+3", "1000", 1000.0),
        (".5", "0.5", 0.5),
        ("-0", "0", 0.0),
        ("-(5)", "-5", -5.0),
        ("- 5", "-5", -5.0),
        ("1e20", "1e+20", 1e20),
    ],
)
def test_number_literals_normalise(written: str, canonical: str, value: float) -> None:
    """A number is printed in its shortest form; a negated literal is a negative number."""
    r = parse(f"select[{written}]")
    assert isinstance(r, PrimaryResreq)
    assert isinstance(r.select, ex.Num)
    assert r.select.value == value
    assert r.select.text == canonical


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("hname=='a b'", "hname=='a b'"),
        ('hname=="x"', "hname=='x'"),
        ('hname=="it\'s"', 'hname=="it\'s"'),
        ("hname=='say \"hi\"'", "hname=='say \"hi\"'"),
    ],
)
def test_string_literals_normalise(written: str, canonical: str) -> None:
    """Strings print single-quoted unless they hold a single quote."""
    r = parse(f"select[{written}]")
    assert isinstance(r, PrimaryResreq)
    assert r.select is not None
    assert r.select.text == canonical


SAME_REQUIREMENT = [
    ("select[mem>1]", "select [ mem > 1 ]", "\tmem>1\t", "select[((mem)>(1))]", "mem>1.0"),
    ("select[type==X86_64]", "select[type=X86_64]", "type = X86_64", "(type)==(X86_64)"),
    (
        "select[mem>1] rusage[mem=1] span[ptile=2]",
        "span[ptile=2] rusage[mem=1] select[mem>1]",
        "mem>1 span[ ptile = 2 ] rusage[ mem = 1 ]",
        "rusage[mem=1.0] select[mem>1] span [ptile=2]",
    ),
    ("order[-slots:mem]", "order[ -slots : mem ]", "order [- slots:mem]"),
    ("same[type:model] span[hosts=1]", "span[hosts=1]same[type:model]"),
    ("2*{select[fast]} + 3*{-}", "2 * { fast } + 3*{ }", "2\t*\t{select [fast]}+3*{-}"),
    ("{select[fast]} || {select[mem>1]}", "{ fast }||{ mem > 1 }", "{(fast)} || {select[(mem>1)]}"),
]


@pytest.mark.parametrize("spellings", SAME_REQUIREMENT)
def test_normalisation(spellings: tuple[str, ...]) -> None:
    """Spacing, redundant parentheses, `=`, section order and select[] vs a bare
    leading expression do not matter: equal objects, one normal form, one fingerprint."""
    parsed = [parse(s) for s in spellings]
    first = parsed[0]
    for r in parsed[1:]:
        assert r == first
        assert str(r) == str(first)
        assert fingerprint_text(r) == fingerprint_text(first)
        for p, q in zip(r.primaries, first.primaries, strict=True):
            assert p.select is q.select


def test_rusage_amount_order_normalises() -> None:
    """`rusage[swp=1:mem=2]` and `rusage[mem=2:swp=1]` are the same requirement object."""
    a = parse("rusage[swp=1:mem=2]")
    assert str(a) == "rusage[mem=2:swp=1]"
    assert a == parse(str(a))


def test_newline_before_section_bracket() -> None:
    """A newline is whitespace like a space, also between a section word and its `[`."""
    assert parse("select\n[mem>1]") == parse("select [mem>1]")


def test_parse_is_memoised() -> None:
    """The same string gives the same object (a trace holds a handful of distinct strings)."""
    assert parse("select[mem>1] rusage[mem=1]") is parse("select[mem>1] rusage[mem=1]")


def test_sections_differ_in_fingerprint() -> None:
    """rusage, span, same and task counts are part of a primary's fingerprint."""
    base = parse("select[mem>1]")
    assert isinstance(base, PrimaryResreq)
    others = [
        "select[mem>1] rusage[mem=1]",
        "select[mem>1] span[ptile=2]",
        "select[mem>1] span[hosts=1]",
        "select[mem>1] same[type]",
        "select[mem>2]",
    ]
    prints = {str(base.fingerprint)} | {fingerprint_text(parse(s)) for s in others}
    prints.add(str(base.with_tasks(2, 2).fingerprint))
    assert len(prints) == len(others) + 2


# -- limits (issue 10) ------------------------------------------------------------------------

DEEP = [
    # (requirement, the character the caret must point at)
    ("!" * 10_000 + "x", "!"),
    ("select[" + "!" * 10_000 + "fast]", "!"),
    ("-" * 10_000 + "x", "-"),
    (" || ".join(["a"] * 20_000), "|"),
    ("||".join(["a==1"] * 20_000), "|"),
    (" && ".join(["a"] * 150), "&"),
    ("+".join(["a"] * 20_000) + " > 1", "+"),
    ("(" * 10_000 + "x" + ")" * 10_000, "("),
    ("(" * 101 + "x" + ")" * 101, "("),
    ("a || (" * 200 + "a" + ")" * 200, "("),
    ("x == 1 && " + "!" * 99 + "y", "&"),
]


@pytest.mark.parametrize(("text", "at"), DEEP, ids=lambda v: v[:12] if isinstance(v, str) else v)
def test_deep_expressions_are_refused_where_too_deep(text: str, at: str) -> None:
    """Issue 10 (Deep nesting): 10,000 ``!``, a 20,000-term ``||`` or 10,000 parentheses
    gave RecursionError in the checks and evaluation; the parser refuses an expression
    nested deeper than MAX_DEPTH (100, as the state loader's) with a located error whose
    caret is under the operator or parenthesis that goes too deep."""
    with pytest.raises(ResreqSyntaxError, match="nests deeper than 100 levels") as caught:
        parse(text)
    err = caught.value
    assert err.column is not None
    assert err.text is not None
    assert err.text[err.column - 1] == at
    shown, caret = err.context().split("\n")
    assert shown[caret.index("^")] == at
    assert len(str(err)) < 500


@pytest.mark.parametrize(
    "text",
    [
        "!" * 99 + "x",
        " || ".join(["a"] * 100),
        "(" * 100 + "x" + ")" * 100,
        "select[" + "(" * 100 + "mem > 1" + ")" * 100 + "]",
        "select[name == '" + "(" * 500 + "']",  # parentheses inside a string do not count
        "{" + " || ".join(["a"] * 99) + "} || {b}",
    ],
)
def test_expressions_up_to_the_limit_parse(text: str) -> None:
    """Issue 10 (Deep nesting): exactly MAX_DEPTH levels is still a requirement."""
    resreq = parse(text)
    assert all(p.select is None or p.select.depth <= 100 for p in resreq.primaries)


def test_depth_counts_levels() -> None:
    assert parse("a").primaries[0].select.depth == 1  # type: ignore[union-attr]
    assert parse("!a || b && c").primaries[0].select.depth == 3  # type: ignore[union-attr]
    assert parse("- - 5").primaries[0].select.depth == 1  # type: ignore[union-attr]


def test_deep_parenthesis_on_a_later_line_is_located() -> None:
    text = "select[x]\norder[y] " + "(" * 101 + "x" + ")" * 101
    with pytest.raises(ResreqSyntaxError, match="nests deeper") as caught:
        parse(text)
    assert (caught.value.line, caught.value.column) == (2, 110)


@pytest.mark.parametrize(
    ("text", "message", "at"),
    [
        (f"{MAX_TASKS + 1}*{{-}}", f"multiplier is too large (at most {MAX_TASKS})", 1),
        ("9223372036854775808*{-}", "multiplier is too large", 1),
        (f"{MAX_TASKS}*{{-}}", None, None),
        (f"{MAX_TASKS}*{{-}} + 1*{{-}}", f"totals more than {MAX_TASKS} tasks", 22),
        (
            f"{MAX_TASKS // 2}*{{-}}+{MAX_TASKS // 2}*{{-}}+{MAX_TASKS // 2}*{{-}}",
            f"totals more than {MAX_TASKS}",
            42,
        ),
        ("span[ptile=1e30]", f"ptile must be at most {MAX_TASKS}", 12),
        (f"span[ptile={MAX_TASKS}]", None, None),
        ("10000000000*{-}", None, None),  # 10**10 tasks: allowed (it pends, issue 9)
    ],
)
def test_task_counts_in_a_requirement_are_bounded(
    text: str, message: str | None, at: int | None
) -> None:
    """Issue 10 (Huge numbers): task counts in a requirement (multipliers, a compound's
    total, ptile) are at most MAX_TASKS = 2**53-1, refused at the term beyond it."""
    if message is None:
        parse(text)
        return
    with pytest.raises(ResreqSyntaxError, match=re.escape(message)) as caught:
        parse(text)
    assert caught.value.column == at
