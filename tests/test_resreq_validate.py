"""Submission-time checks (design §2): names against a cluster's catalog, and task counts."""

from __future__ import annotations

import re

import pytest

from xce.cluster.catalog import ResourceCatalog, ResourceDef, ResourceKind
from xce.errors import InputError, ResreqError, ResreqSyntaxError
from xce.resreq import (
    AlterResreq,
    CompoundResreq,
    PrimaryResreq,
    bind_tasks,
    check,
    parse,
    requirement_for_job,
)

CATALOG = ResourceCatalog(
    [
        ResourceDef("mem", ResourceKind.CONSUMABLE),
        ResourceDef("swp", ResourceKind.CONSUMABLE),
        ResourceDef("type", ResourceKind.STRING),
        ResourceDef("model", ResourceKind.STRING),
        ResourceDef("fast", ResourceKind.BOOLEAN),
        ResourceDef("cpuf", ResourceKind.NUMERIC),
        ResourceDef("lic_x", ResourceKind.SHARED),
    ]
)

VALID = [
    "select[type==X86_64 && mem>4000] rusage[mem=2000]",
    "mem>4000 && fast order[-slots] rusage[mem=2000:swp=500:duration=10]",
    "select[(swp>50 && type==MIPS) || (swp>35 && type==ALPHA)]",
    "select[((2*cpuf+3*mem)/6 < 1.0) && !fast]",
    "select[defined(lic_x) && hname!='host06-x12']",
    "span[hosts=1] same[type:model]",
    # max<name> is the capacity of a consumable (or a shared total)
    "select[maxmem>1000 && maxswp>1 && maxslots>=4 && maxlic_x>1]",
    # `any` matches every value of a string resource
    "select[type==any]",
    "select[any!=model]",
    # a bare word compared with a string resource is a value, on either side
    "select[type==X86_64]",
    "select[X86_64==type]",
    "select[hname==node01 || hname=='node02']",
    "select[type==model]",
    "select[defined(type) && defined(fast) && defined(cpuf) && defined(mem)]",
    "rusage[mem=1:swp=2,lic_x=1]",
    "order[-slots:mem:cpuf:fast:lic_x]",
    "same[type:model:cpuf:fast:hname]",
    "2*{select[type==X86_64] rusage[mem=100]} + 4*{select[mem>1000]}",
    "{select[fast]} || {select[!fast] rusage[lic_x=1]}",
    "",
]


@pytest.mark.parametrize("text", VALID)
def test_valid_against_catalog(text: str) -> None:
    """These fit the catalog: check() passes, requirement_for_job() returns the model."""
    check(parse(text), CATALOG, text)
    assert requirement_for_job(text, CATALOG) == bind_tasks(parse(text))


REJECTED = [
    # (text, words the message must contain, the token the column points at or None)
    ("select[foo>1]", ["unknown resource", "'foo'"], "foo>1"),
    ("select[fast && bar]", ["unknown resource", "'bar'"], "bar]"),
    ("select[defined(foo)]", ["unknown resource", "'foo'", "defined()"], "foo)"),
    ("select[maxfoo>1]", ["unknown resource", "'maxfoo'"], "maxfoo"),
    ("select[mem==X86_64]", ["unknown resource", "'X86_64'"], "X86_64"),
    ("select[any]", ["unknown resource", "'any'"], "any]"),
    ("rusage[type=1]", ["'type'", "not consumable", "string"], "type=1"),
    ("rusage[cpuf=1]", ["'cpuf'", "not consumable", "numeric"], "cpuf=1"),
    ("rusage[fast=1]", ["'fast'", "not consumable", "boolean"], "fast=1"),
    ("rusage[bar=1]", ["unknown resource", "'bar'"], "bar=1"),
    ("select[type==X86_64] rusage[type=1]", ["not consumable"], "type=1"),
    ("select[mem>1] rusage[mem=1:type=1]", ["not consumable"], "type=1"),
    ("order[type]", ["order[]", "'type'", "string resource"], "type]"),
    ("order[-hname]", ["order[]", "'hname'"], "hname]"),
    ("order[foo]", ["order[]", "'foo'", "unknown resource"], "foo]"),
    ("same[mem]", ["same[]", "'mem'", "consumable"], "mem]"),
    ("same[lic_x]", ["same[]", "'lic_x'", "shared"], "lic_x]"),
    ("same[type:foo]", ["same[]", "'foo'", "unknown resource"], "foo]"),
    ("2*{select[mem>1]} + 2*{select[foo>1]}", ["'foo'"], "foo>1"),
    ("{select[fast]} || {rusage[swp=1:type=1]}", ["not consumable"], "type=1"),
    # type mismatches: no single word is at fault, so no column
    ("select[type==1]", ["cannot compare a string with a number"], None),
    ("select[type<5]", ["cannot compare a string with a number"], None),
    ("select[fast==type]", ["cannot compare a string with a number"], None),
    ("select[type]", ["is a string, not a condition"], None),
    ("select['X86_64']", ["is a string, not a condition"], None),
    ("select[!type]", ["is a string", "'!' needs a number"], None),
    ("select[type+1>0]", ["is a string", "'+' needs a number"], None),
    ("select[type && fast]", ["is a string", "'&&' needs a number"], None),
    ("select[type>any]", ["'any' only compares with == or !="], None),
]


@pytest.mark.parametrize(("text", "words", "at"), REJECTED)
def test_rejected_against_catalog(text: str, words: list[str], at: str | None) -> None:
    """Unknown names, rusage on non-consumables, order/same on the wrong kind and type
    mismatches are ResreqErrors naming the problem, the column on the word at fault."""
    with pytest.raises(ResreqError) as info:
        check(parse(text), CATALOG, text)
    err = info.value
    assert isinstance(err, InputError)
    assert isinstance(err, ValueError)
    assert not isinstance(err, ResreqSyntaxError)
    for word in words:
        assert word in err.message
    if at is None:
        assert err.column is None
    else:
        assert err.column is not None
        assert err.text == text
        assert text[err.column - 1 :].startswith(at)
        assert str(err).endswith("\n  " + text + "\n  " + " " * (err.column - 1) + "^")


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("select[hname=='foo' || foo>1]", "foo>1"),
        ("select[type==foo && foo>1]", "foo>1"),
        ("{rusage[mem=1]} || {select[type==X] rusage[type=1]}", "type=1]"),
    ],
)
def test_column_points_at_the_offending_word(text: str, at: str) -> None:
    """The caret is under the word at fault, not under an earlier occurrence of it."""
    with pytest.raises(ResreqError) as info:
        check(parse(text), CATALOG, text)
    assert info.value.column == text.index(at) + 1


def test_check_without_text_has_no_column() -> None:
    """Checking a parsed model without its text still names the word, with no caret."""
    with pytest.raises(ResreqError) as info:
        check(parse("select[foo>1]"), CATALOG)
    assert info.value.column is None
    assert "'foo'" in str(info.value)


def test_tag_missing_from_catalog_is_an_error() -> None:
    """`select[fast]` with no `fast` tag anywhere is a submission error, not a silent false."""
    bare = ResourceCatalog([ResourceDef("mem", ResourceKind.CONSUMABLE)])
    with pytest.raises(ResreqError, match="unknown resource 'fast'"):
        requirement_for_job("select[fast]", bare)


def test_requirement_for_job() -> None:
    """Parse, check and bind in one memoised call; syntax errors stay syntax errors."""
    r = requirement_for_job("select[mem>1] rusage[mem=1]", CATALOG, 2, 4)
    assert isinstance(r, PrimaryResreq)
    assert (r.min_tasks, r.max_tasks) == (2, 4)
    assert requirement_for_job("select[mem>1] rusage[mem=1]", CATALOG, 2, 4) is r
    assert requirement_for_job("select[foo>1]", None) == parse("select[foo>1]")
    with pytest.raises(ResreqSyntaxError):
        requirement_for_job("select[mem>]", CATALOG)
    with pytest.raises(ResreqError) as info:
        requirement_for_job("rusage[type=1]", CATALOG)
    assert info.value.column == 8


# --- issue 9: order[max<name>] and rusage[slots] ----------------------------------------

ORDER_BY_CAPACITY = [
    "order[maxslots]",
    "order[-maxmem]",
    "order[maxslots:-maxmem:slots]",
    "order[maxlic_x]",  # a shared total: the same on every host, accepted as in select
    "select[maxslots>=2] order[-maxslots]",
    "2*{order[maxmem]} + 1*{order[-maxswp]}",
]


@pytest.mark.parametrize("text", ORDER_BY_CAPACITY)
def test_order_accepts_capacities(text: str) -> None:
    """issue 9: `order[maxslots]` / `order[maxmem]` are accepted, as `select` accepts
    `max<name>` of a consumable (or shared) resource: its capacity."""
    check(parse(text), CATALOG, text)
    assert requirement_for_job(text, CATALOG) == bind_tasks(parse(text))


ORDER_BY_CAPACITY_REJECTED = [
    # (text, words of the message, where the caret points)
    ("order[maxfoo]", ["order[]", "'maxfoo'", "unknown resource"], "maxfoo]"),
    ("order[maxtype]", ["order[]", "'maxtype'", "unknown resource"], "maxtype]"),
    ("order[maxcpuf]", ["order[]", "'maxcpuf'", "unknown resource"], "maxcpuf]"),
    ("order[-maxfast]", ["order[]", "'maxfast'", "unknown resource"], "maxfast]"),
    ("order[max]", ["order[]", "'max'", "unknown resource"], "max]"),
]


@pytest.mark.parametrize(("text", "words", "at"), ORDER_BY_CAPACITY_REJECTED)
def test_order_by_capacity_needs_a_consumable(text: str, words: list[str], at: str) -> None:
    """issue 9: `max<name>` in order[] is a capacity only for a consumable or shared
    resource (as in select); anything else stays an unknown name, with a caret."""
    with pytest.raises(ResreqError) as info:
        check(parse(text), CATALOG, text)
    for word in words:
        assert word in info.value.message
    assert info.value.column == text.index(at) + 1


RUSAGE_SLOTS = [
    # (text, where the caret points)
    ("rusage[slots=2]", "slots=2"),
    ("rusage[mem=100:slots=1]", "slots=1"),
    ("rusage[mem=100, slots=1:duration=5]", "slots=1"),
    ("select[slots>=2] rusage[slots=2]", "slots=2"),
    ("order[slots] rusage[mem=1:slots=0]", "slots=0"),
    ("3*{rusage[mem=1]} + 1*{rusage[slots=1]}", "slots=1"),
    ("{select[fast]} || {select[slots>1] rusage[slots=4]}", "slots=4"),
]


@pytest.mark.parametrize(("text", "at"), RUSAGE_SLOTS)
def test_rusage_slots_is_a_submission_error(text: str, at: str) -> None:
    """issue 9: rusage[slots=...] meant different things on different allocation paths;
    it is refused, with a caret under `slots` in rusage (not under select's or order's)."""
    with pytest.raises(ResreqError) as info:
        requirement_for_job(text, CATALOG)
    err = info.value
    assert err.message == (
        "rusage[]: slots are requested by the job's task count (tasks / -n), not by rusage"
    )
    assert err.text == text
    assert err.column == text.index(at) + 1
    assert str(err).endswith("\n  " + text + "\n  " + " " * (err.column - 1) + "^")


@pytest.mark.parametrize(
    "text", ["select[slots>=2]", "slots>=2 order[-slots]", "select[maxslots>1 && slots>0]"]
)
def test_slots_in_select_and_order_stay_valid(text: str) -> None:
    """issue 9: only rusage[slots] is refused; slots in select and order stay valid."""
    check(parse(text), CATALOG, text)


# --- bind_tasks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [((None, None), (1, 1)), ((1, 1), (1, 1)), ((4, 4), (4, 4)), ((2, 8), (2, 8))],
)
def test_simple_takes_the_jobs_tasks(
    tasks: tuple[int | None, int | None], expected: tuple[int, int]
) -> None:
    """A SIMPLE requirement takes the job's task counts (1 when the job does not say)."""
    r = bind_tasks(parse("select[mem>1] rusage[mem=1]"), *tasks)
    assert isinstance(r, PrimaryResreq)
    assert (r.min_tasks, r.max_tasks) == expected
    assert (r.fingerprint.min_tasks, r.fingerprint.max_tasks) == expected


def test_tasks_are_part_of_the_fingerprint() -> None:
    """The same requirement for 1 and for 4 tasks has different fingerprints, same select."""
    one, four = bind_tasks(parse("select[mem>1]")), bind_tasks(parse("select[mem>1]"), 4, 4)
    assert isinstance(one, PrimaryResreq)
    assert isinstance(four, PrimaryResreq)
    assert one.fingerprint != four.fingerprint
    assert str(one.fingerprint) != str(four.fingerprint)
    assert one.select is four.select


COMPOUND = "2*{select[type==X86_64] rusage[mem=100]} + 4*{select[mem>1000]}"


@pytest.mark.parametrize("tasks", [(None, None), (6, 6), (4, 8), (1, 6), (6, 100)])
def test_compound_keeps_its_own_total(tasks: tuple[int | None, int | None]) -> None:
    """A COMPOUND requirement fixes its terms' counts; the job's counts must admit the total."""
    r = bind_tasks(parse(COMPOUND), *tasks)
    assert isinstance(r, CompoundResreq)
    assert r == parse(COMPOUND)
    assert [(t.min_tasks, t.max_tasks) for t in r.terms] == [(2, 2), (4, 4)]


@pytest.mark.parametrize(
    ("tasks", "asked"), [((4, 4), "asks for 4 tasks"), ((7, 9), "asks for 7,9 tasks")]
)
def test_compound_total_contradicting_job_is_rejected(tasks: tuple[int, int], asked: str) -> None:
    """A job whose tasks contradict its compound total is rejected at submission."""
    with pytest.raises(ResreqError) as info:
        bind_tasks(parse(COMPOUND), *tasks)
    assert asked in info.value.message
    assert "totals 6" in info.value.message


def _alt_tasks(text: str, tasks: tuple[int | None, int | None]) -> list[list[tuple[int, int]]]:
    r = bind_tasks(parse(text), *tasks)
    assert isinstance(r, AlterResreq)
    return [[(p.min_tasks, p.max_tasks) for p in a.primaries] for a in r.alternatives]


@pytest.mark.parametrize(
    ("text", "tasks", "expected"),
    [
        # simple alternatives take the job's counts
        ("{select[fast]} || {select[mem>1]}", (None, None), [[(1, 1)], [(1, 1)]]),
        ("{select[fast]} || {select[mem>1]}", (4, 4), [[(4, 4)], [(4, 4)]]),
        ("{select[fast]} || {select[mem>1]}", (2, 6), [[(2, 6)], [(2, 6)]]),
        # unsaid: simple alternatives take the compound alternatives' total
        ("{select[fast]} || {4*{-}}", (None, None), [[(4, 4)], [(4, 4)]]),
        (
            "{select[fast]} || {4*{-}} || {1*{-} + 3*{-}}",
            (None, None),
            [[(4, 4)], [(4, 4)], [(1, 1), (3, 3)]],
        ),
        # said: the job's counts, which each compound alternative must admit
        ("{select[fast]} || {4*{-}}", (4, 4), [[(4, 4)], [(4, 4)]]),
        ("{select[fast]} || {4*{-}}", (2, 6), [[(2, 6)], [(4, 4)]]),
        (
            "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}",
            (None, None),
            [[(2, 2), (2, 2)], [(4, 4)]],
        ),
    ],
)
def test_alter_rules(
    text: str, tasks: tuple[int | None, int | None], expected: list[list[tuple[int, int]]]
) -> None:
    """ALTER: simple alternatives take the job's counts (unsaid: the compound total);
    compound alternatives keep theirs."""
    assert _alt_tasks(text, tasks) == expected


@pytest.mark.parametrize(
    ("text", "tasks"),
    [
        ("{select[fast]} || {4*{-}}", (2, 2)),
        ("{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}", (3, 3)),
        ("{4*{-}} || {5*{-}}", (4, 4)),
    ],
)
def test_alter_with_contradicting_compound_is_rejected(text: str, tasks: tuple[int, int]) -> None:
    """An alternative whose compound total the job's explicit counts do not admit is an error."""
    with pytest.raises(ResreqError, match="compound requirement totals"):
        bind_tasks(parse(text), *tasks)


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ((2, None), "give both"),
        ((None, 2), "give both"),
        ((0, 0), "1 <= min <= max"),
        ((3, 2), "1 <= min <= max"),
        ((-1, 4), "1 <= min <= max"),
    ],
)
def test_bad_task_counts(tasks: tuple[int | None, int | None], message: str) -> None:
    """Task counts are both given or both unsaid, with 1 <= min <= max."""
    with pytest.raises(ResreqError, match=re.escape(message)):
        bind_tasks(parse("select[mem>1]"), *tasks)


RUSAGE_OFF_GRID = [
    # (text, a catalog resolution for mem or None for the default, the error's words or None)
    ("rusage[mem=0.0000001]", None, "finer than its resolution 1e-06"),
    ("rusage[mem=333.3]", None, None),
    ("rusage[mem=0.5]", 1.0, "finer than its resolution 1"),
    ("rusage[swp=1:mem=2.25]", 0.1, "finer than its resolution 0.1"),
    ("rusage[mem=2.5]", 0.1, None),
    ("rusage[mem=1e13]", None, "too large to count exactly"),
    ("2*{-} + 1*{rusage[mem=0.01]}", 1.0, "finer than its resolution 1"),
]


@pytest.mark.parametrize(("text", "resolution", "words"), RUSAGE_OFF_GRID)
def test_rusage_amounts_must_fit_the_resolution(
    text: str, resolution: float | None, words: str | None
) -> None:
    """issue 9: an rusage amount finer than its resource's resolution (or too large for
    it) is refused at submission, located with a caret under the resource, so a state
    file names the job (and ``--lenient`` can set it aside) instead of the session
    failing later without a location."""
    mem = ResourceDef("mem", ResourceKind.CONSUMABLE)
    if resolution is not None:
        mem = ResourceDef("mem", ResourceKind.CONSUMABLE, resolution=resolution)
    catalog = ResourceCatalog([mem, ResourceDef("swp", ResourceKind.CONSUMABLE)])
    if words is None:
        check(parse(text), catalog, text)
        return
    with pytest.raises(ResreqError) as info:
        check(parse(text), catalog, text)
    err = info.value
    assert err.message.startswith("rusage[]: mem: ")
    assert words in err.message
    assert err.column == text.index("mem=") + 1


def test_a_select_tree_built_in_python_is_bounded_too() -> None:
    """Issue 10 (Deep nesting): the parser refuses text nested deeper than 100 levels;
    a tree built in Python as deep is refused by compile_select (binding recurses)
    instead of raising RecursionError."""
    from xce.resreq import compile_select
    from xce.resreq import expr as ex

    catalog = ResourceCatalog([ResourceDef("fast", ResourceKind.BOOLEAN)])
    node = ex.name("fast")
    for _ in range(100):
        node = ex.unary("!", node)
    with pytest.raises(ResreqError, match="deeper than 100 levels"):
        compile_select(node, catalog)
    node = ex.name("fast")
    for _ in range(99):
        node = ex.unary("!", node)
    compile_select(node, catalog)
