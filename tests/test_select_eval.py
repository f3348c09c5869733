"""Evaluating select expressions on hosts (design §2): semantics, subsets, memo, monotonicity.

Hosts are a hand-built HostTable read through a tiny fake HostView, so availability can
be set directly. A property test checks the vectorised evaluator against a per-host
reference evaluator written here from the documented semantics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from xce.cluster.catalog import ResourceCatalog, ResourceDef, ResourceKind
from xce.cluster.hosts import HostTable
from xce.resreq import CompiledSelect, PrimaryResreq, SelectMemo, compile_select, parse

NAN = math.nan

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


@dataclass
class FakeView:
    """A HostView whose availability is whatever the test says."""

    hosts: HostTable
    avail: dict[str, npt.NDArray[np.float64]]
    shared: dict[str, float] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    reads: int = 0

    def available(self, name: str) -> npt.NDArray[np.float64]:
        self.reads += 1
        return self.avail[name]

    def shared_available(self, name: str) -> float:
        self.reads += 1
        return self.shared[name]

    def shared_total(self, name: str) -> float:
        return self.totals[name]


def make_view(
    hosts: list[dict[str, Any]], lic_avail: float = 2.0, lic_total: float = 4.0
) -> FakeView:
    """Hosts given as dicts: capacities ``slots/mem/swp`` (NaN: lacks it), ``avail`` per
    consumable, ``type``/``model`` (None: lacks it), ``fast``, ``cpuf`` (NaN: lacks it)."""
    n = len(hosts)
    names = [h.get("name", f"h{i}") for i, h in enumerate(hosts)]
    cap = {k: np.array([h.get(k, NAN) for h in hosts], float) for k in ("slots", "mem", "swp")}
    avail = {
        k: np.array([h.get("avail", {}).get(k, h.get(k, NAN)) for h in hosts], float)
        for k in ("slots", "mem", "swp")
    }
    table = HostTable(
        names,
        np.zeros(n, np.int8),
        cap,
        {"cpuf": np.array([h.get("cpuf", NAN) for h in hosts], float)},
        {
            "hname": np.array(names, object),
            "type": np.array([h.get("type") for h in hosts], object),
            "model": np.array([h.get("model") for h in hosts], object),
        },
        {"fast": np.array([h.get("fast", False) for h in hosts], bool)},
    )
    return FakeView(table, avail, {"lic_x": float(lic_avail)}, {"lic_x": float(lic_total)})


HOSTS = [
    # h0: a typical host, part of its memory in use
    {"slots": 4, "mem": 8000, "swp": 100, "avail": {"mem": 3000}, "type": "X86_64",
     "model": "A", "fast": True, "cpuf": 1.0},
    # h1: lacks swp and model
    {"slots": 8, "mem": 16000, "type": "ARM", "fast": False, "cpuf": 2.0},
    # h2: lacks mem, type and cpuf
    {"slots": 2, "swp": 50, "model": "B", "fast": True},
    # h3: all its memory handed out
    {"slots": 1, "mem": 4000, "swp": 0, "avail": {"mem": 0}, "type": "X86_64",
     "model": "A", "cpuf": 0.5},
]  # fmt: skip


def compiled(text: str) -> CompiledSelect:
    r = parse(f"select[{text}]")
    assert isinstance(r, PrimaryResreq)
    assert r.select is not None
    return compile_select(r.select, CATALOG)


T, F = True, False

SEMANTICS = [
    # availability vs capacity
    ("mem>2000", [T, T, F, F]),
    ("mem>5000", [F, T, F, F]),
    ("maxmem>5000", [T, T, F, F]),
    ("maxmem>=4000 && mem<1", [F, F, F, T]),
    ("slots>=4", [T, T, F, F]),
    ("maxslots==2", [F, F, T, F]),
    # strings, including `any`, quoted values and hname
    ("type==X86_64", [T, F, F, T]),
    ("type=='X86_64'", [T, F, F, T]),
    ("X86_64==type", [T, F, F, T]),
    ("type!=X86_64", [F, T, F, F]),
    ("type==any", [T, T, F, T]),
    ("any==type", [T, T, F, T]),
    ("type!=any", [F, F, F, F]),
    ("model<'B'", [T, F, F, T]),
    ("model>=B", [F, F, T, F]),
    ("type==model", [F, F, F, F]),
    ("hname=='h1'", [F, T, F, F]),
    ("hname!=h1", [T, F, T, T]),
    # tags are 1 or 0
    ("fast", [T, F, T, F]),
    ("fast==1", [T, F, T, F]),
    ("fast==0", [F, T, F, T]),
    ("!fast", [F, T, F, T]),
    ("fast+fast==2", [T, F, T, F]),
    # a host lacking a resource fails every comparison on it, != included
    ("swp!=5", [T, F, T, T]),
    ("mem!=0", [T, T, F, F]),
    ("cpuf!=1", [F, T, F, T]),
    ("cpuf>=0", [T, T, F, T]),
    ("cpuf<100", [T, T, F, T]),
    ("mem+swp>=0", [T, F, F, T]),
    ("model!='zzz'", [T, F, T, T]),
    ("!(mem>2000)", [F, F, T, T]),  # the comparison fails; its negation holds
    # non-zero is true; NaN is not
    ("cpuf", [T, T, F, T]),
    ("mem", [T, T, F, F]),
    ("1", [T, T, T, T]),
    ("0", [F, F, F, F]),
    ("2>1 && 0", [F, F, F, F]),
    ("-mem<-1000", [T, T, F, F]),
    ("(2*cpuf+3)/5>=1", [T, T, F, F]),
    # division by zero is false (and so is everything compared with it)
    ("mem/0>1", [F, F, F, F]),
    ("mem/0<1", [F, F, F, F]),
    ("mem/0!=1", [F, F, F, F]),
    ("1/0==1/0", [F, F, F, F]),
    ("cpuf/(cpuf-1)>0", [F, T, F, F]),
    ("1/0", [F, F, F, F]),
    # shared resources are cluster-wide: the same on every host
    ("lic_x>=2", [T, T, T, T]),
    ("lic_x>2", [F, F, F, F]),
    ("maxlic_x==4", [T, T, T, T]),
    # defined()
    ("defined(mem)", [T, T, F, T]),
    ("defined(swp)", [T, F, T, T]),
    ("defined(type)", [T, T, F, T]),
    ("defined(model)", [T, F, T, T]),
    ("defined(cpuf)", [T, T, F, T]),
    ("defined(fast)", [T, F, T, F]),
    ("defined(lic_x)", [T, T, T, T]),
    ("defined(hname)", [T, T, T, T]),
    # combinations
    ("type==X86_64 && mem>2000 || type==ARM", [T, T, F, F]),
    ("(swp>50 && type==X86_64) || (swp>35 && model==B)", [T, F, T, F]),
]


@pytest.mark.parametrize(("text", "expected"), SEMANTICS)
def test_semantics(text: str, expected: list[bool]) -> None:
    """Design §2 semantics of each kind of resource, missing values, `any`, division."""
    mask = compiled(text).evaluate(make_view(HOSTS))
    assert mask.dtype == np.bool_
    assert mask.tolist() == expected


@pytest.mark.parametrize(("text", "expected"), SEMANTICS)
@pytest.mark.parametrize("idx", [[], [2], [3, 0], [1, 1, 2], [0, 1, 2, 3]])
def test_subset_equals_full_mask(text: str, expected: list[bool], idx: list[int]) -> None:
    """evaluate(view, idx) is the full mask at idx, for every kind of expression."""
    sel = compiled(text)
    view = make_view(HOSTS)
    got = sel.evaluate(view, np.array(idx, dtype=np.intp))
    assert got.tolist() == [expected[i] for i in idx]


def test_availability_is_read_now() -> None:
    """A consumable reads the view's availability at evaluation time, not the capacity."""
    view = make_view(HOSTS)
    sel = compiled("mem>2000")
    view.avail["mem"] = np.array([0, 0, NAN, 4000], float)
    assert sel.evaluate(view).tolist() == [F, F, F, T]
    assert compiled("maxmem>2000").evaluate(view).tolist() == [T, T, F, T]


def test_shared_availability() -> None:
    """A shared resource compares its cluster-wide availability; max<name> its total."""
    sel = compiled("lic_x>=1 && maxlic_x>3")
    assert sel.evaluate(make_view(HOSTS, lic_avail=1)).tolist() == [T] * 4
    assert sel.evaluate(make_view(HOSTS, lic_avail=0)).tolist() == [F] * 4
    assert sel.evaluate(make_view(HOSTS, lic_avail=4, lic_total=3)).tolist() == [F] * 4


# --- memo ----------------------------------------------------------------------------


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[int] | None]]:
    """Every CompiledSelect.evaluate call as (select text, hosts or None for all)."""
    calls: list[tuple[str, list[int] | None]] = []
    real = CompiledSelect.evaluate

    def spy(self: CompiledSelect, view: Any, idx: Any = None) -> Any:
        calls.append((self.expr.text, None if idx is None else [int(i) for i in idx]))
        return real(self, view, idx)

    monkeypatch.setattr(CompiledSelect, "evaluate", spy)
    return calls


def test_memo_computes_once(evaluations: list[tuple[str, list[int] | None]]) -> None:
    """A select is evaluated once for all hosts; later reads come from the memo."""
    memo = SelectMemo(make_view(HOSTS))
    sel = compiled("mem>2000")
    assert memo.mask(sel).tolist() == [T, T, F, F]
    assert memo.matches(sel, 1) is True
    assert memo.matches(sel, 3) is False
    assert evaluations == [("mem>2000", None)]


def test_memo_forget_host_recomputes_only_that_host(
    evaluations: list[tuple[str, list[int] | None]],
) -> None:
    """After the session charges a host, only that host's entry is recomputed."""
    view = make_view(HOSTS)
    memo = SelectMemo(view)
    sel = compiled("mem>2000")
    memo.mask(sel)
    view.avail["mem"] = np.array([1000, 1000, NAN, 9000], float)  # h0 charged; h1, h3 not
    memo.forget_host(0)
    memo.forget_host(0)
    assert memo.mask(sel).tolist() == [F, T, F, F]  # h1 and h3 keep their memo entries
    assert evaluations == [("mem>2000", None), ("mem>2000", [0])]
    memo.mask(sel)
    assert len(evaluations) == 2  # caught up: nothing stale any more


def test_memo_keeps_static_selects(evaluations: list[tuple[str, list[int] | None]]) -> None:
    """A select that reads no availability is not recomputed when a host is charged."""
    memo = SelectMemo(make_view(HOSTS))
    sel = compiled("type==X86_64 && maxmem>1000")
    assert not sel.dynamic
    first = memo.mask(sel)
    memo.forget_host(0)
    assert memo.mask(sel) is first
    assert evaluations == [("type==X86_64 && maxmem>1000", None)]


def test_memo_entries_are_per_node(evaluations: list[tuple[str, list[int] | None]]) -> None:
    """Memo entries are keyed by node id: two spellings of one select share an entry."""
    memo = SelectMemo(make_view(HOSTS))
    a, b = compiled("mem > 2000"), compiled("(mem)>2000.0")
    assert a.id == b.id
    memo.mask(a)
    memo.mask(b)
    memo.mask(compiled("mem>1"))
    assert [text for text, _ in evaluations] == ["mem>2000", "mem>1"]


def test_memo_select_first_read_after_charge(
    evaluations: list[tuple[str, list[int] | None]],
) -> None:
    """A select first read after a charge is computed fresh and not recomputed later."""
    view = make_view(HOSTS)
    memo = SelectMemo(view)
    memo.forget_host(1)
    sel = compiled("mem>2000")
    assert memo.mask(sel).tolist() == [T, T, F, F]
    memo.mask(sel)
    assert evaluations == [("mem>2000", None)]


def test_memo_reset(evaluations: list[tuple[str, list[int] | None]]) -> None:
    """reset() forgets everything: the next read evaluates every host afresh."""
    view = make_view(HOSTS)
    memo = SelectMemo(view)
    sel = compiled("mem>2000")
    memo.mask(sel)
    view.avail["mem"] = np.array([0, 0, NAN, 9000], float)
    memo.reset()
    assert memo.mask(sel).tolist() == [F, F, F, T]
    assert evaluations == [("mem>2000", None), ("mem>2000", None)]


# --- dynamic / monotone -----------------------------------------------------------------

FLAGS = [
    # (select, dynamic, monotone)
    ("mem>5", T, T),
    ("mem>=5", T, T),
    ("mem<5", T, F),
    ("mem<=5", T, F),
    ("5<mem", T, T),
    ("5>mem", T, F),
    ("!(mem<5)", T, T),
    ("!(mem>5)", T, F),
    ("!!(mem>5)", T, T),
    ("mem*2>5", T, F),
    ("mem+0>5", T, F),
    ("-mem<-5", T, F),
    ("mem==5", T, F),
    ("mem!=5", T, F),
    ("mem", T, T),
    ("!mem", T, F),
    ("mem>swp", T, F),
    ("mem>5 && swp>1", T, T),
    ("mem>5 || swp<1", T, F),
    ("!(mem<5 || swp<1)", T, T),
    ("mem>5 && type==X86_64", T, T),
    ("slots>=4", T, T),
    ("lic_x>1", T, T),
    ("lic_x<1", T, F),
    ("type==X86_64", F, T),
    ("type==any", F, T),
    ("maxmem>5", F, T),
    ("maxmem<5", F, T),
    ("maxlic_x>1", F, T),
    ("defined(mem)", F, T),
    ("cpuf>1", F, T),
    ("cpuf<1", F, T),
    ("fast", F, T),
    ("!fast", F, T),
    ("1", F, T),
]


@pytest.mark.parametrize(("text", "dynamic", "monotone"), FLAGS)
def test_dynamic_and_monotone(text: str, dynamic: bool, monotone: bool) -> None:
    """dynamic: reads availability; monotone: can only turn false as availability falls."""
    sel = compiled(text)
    assert (sel.dynamic, sel.monotone) == (dynamic, monotone)


# --- property: vectorised evaluator == per-host reference ---------------------------------

CONSUMABLES = ["slots", "mem", "swp"]
NUMBER_NAMES = [*CONSUMABLES, "cpuf", "fast", "lic_x", "maxslots", "maxmem", "maxswp", "maxlic_x"]
STRING_RESOURCES = ["type", "model", "hname"]
WORDS = ["X86_64", "ARM", "A", "B", "h0", "h1"]
DEFINABLE = [*CONSUMABLES, "cpuf", "fast", "lic_x", "type", "model", "hname"]


@st.composite
def tables(draw: st.DrawFn) -> FakeView:
    n = draw(st.integers(1, 6))
    maybe = st.one_of(st.just(NAN), st.integers(0, 100).map(float))
    hosts = []
    for _ in range(n):
        h: dict[str, Any] = {"slots": draw(st.integers(1, 8)), "mem": draw(maybe)}
        h["swp"] = draw(maybe)
        h["avail"] = {
            k: h[k] if math.isnan(h[k]) else draw(st.integers(0, int(h[k]))) for k in CONSUMABLES
        }
        h["type"] = draw(st.sampled_from(["X86_64", "ARM", None]))
        h["model"] = draw(st.sampled_from(["A", "B", None]))
        h["fast"] = draw(st.booleans())
        h["cpuf"] = draw(st.sampled_from([NAN, 0.0, 0.5, 1.0, 2.0]))
        hosts.append(h)
    return make_view(hosts, lic_avail=draw(st.integers(0, 4)), lic_total=4)


def _string_compare(draw: st.DrawFn) -> Any:
    side = st.sampled_from(STRING_RESOURCES).map(lambda w: ("name", w)) | st.sampled_from(
        WORDS
    ).map(lambda w: ("str", w))
    left = draw(side)  # a string side, so the other may be a bare word or `any`
    right = draw(
        side | st.sampled_from(WORDS).map(lambda w: ("word", w)) | st.just(("word", "any"))
    )
    ops = ["==", "!="] if right == ("word", "any") else ["==", "!=", "<", "<=", ">", ">="]
    op = draw(st.sampled_from(ops))
    return ("bin", op, right, left) if draw(st.booleans()) else ("bin", op, left, right)


@st.composite
def num_leaf(draw: st.DrawFn) -> Any:
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return ("num", draw(st.sampled_from([0, 1, 2, 5, 0.5, 50, 100])))
    if choice == 1:
        return ("name", draw(st.sampled_from(NUMBER_NAMES)))
    if choice == 2:
        return ("defined", draw(st.sampled_from(DEFINABLE)))
    return _string_compare(draw)


selects = st.recursive(
    num_leaf(),
    lambda sub: st.one_of(
        st.tuples(st.just("un"), st.sampled_from(["!", "-"]), sub),
        st.tuples(
            st.just("bin"),
            st.sampled_from(["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/"]),
            sub,
            sub,
        ),
    ),
    max_leaves=10,
)


def write(t: Any) -> str:
    """Fully parenthesised text of a tree."""
    if t[0] == "num":
        return repr(float(t[1]))
    if t[0] in ("name", "word"):
        return t[1]
    if t[0] == "str":
        return f"'{t[1]}'"
    if t[0] == "defined":
        return f"defined({t[1]})"
    if t[0] == "un":
        return f"{t[1]}({write(t[2])})"
    return f"({write(t[2])}{t[1]}{write(t[3])})"


ANY = object()


def reference(t: Any, view: FakeView, h: int) -> Any:
    """Design §2 for one host: a float (NaN when lacking), a str (None when lacking) or ANY."""
    hosts = view.hosts
    kind = t[0]
    if kind == "num":
        return float(t[1])
    if kind == "str":
        return t[1]
    if kind == "word":
        return ANY if t[1] == "any" else t[1]
    if kind == "name":
        word = t[1]
        if word in CONSUMABLES:
            return float(view.avail[word][h])
        if word == "lic_x":
            return view.shared["lic_x"]
        if word == "maxlic_x":
            return view.totals["lic_x"]
        if word.startswith("max"):
            return float(hosts.capacity[word[3:]][h])
        if word == "cpuf":
            return float(hosts.numeric["cpuf"][h])
        if word == "fast":
            return 1.0 if hosts.tags["fast"][h] else 0.0
        return hosts.strings[word][h]
    if kind == "defined":
        word = t[1]
        if word == "lic_x":
            return 1.0
        if word == "fast":
            return 1.0 if hosts.tags["fast"][h] else 0.0
        if word in STRING_RESOURCES:
            return 0.0 if hosts.strings[word][h] is None else 1.0
        column = hosts.capacity if word in CONSUMABLES else hosts.numeric
        return 0.0 if math.isnan(column[word][h]) else 1.0
    if kind == "un":
        x = reference(t[2], view, h)
        return -x if t[1] == "-" else (0.0 if truthy(x) else 1.0)
    op, a, b = t[1], reference(t[2], view, h), reference(t[3], view, h)
    if op == "&&":
        return 1.0 if truthy(a) and truthy(b) else 0.0
    if op == "||":
        return 1.0 if truthy(a) or truthy(b) else 0.0
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return 1.0 if compare(op, a, b) else 0.0
    with np.errstate(all="ignore"):
        x, y = np.float64(a), np.float64(b)
        if op == "/":
            return NAN if y == 0 else float(x / y)
        return float({"+": x + y, "-": x - y, "*": x * y}[op])


def truthy(x: float) -> bool:
    return not math.isnan(x) and x != 0


def compare(op: str, a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return False  # a missing resource fails every comparison
    elif a is None or b is None:
        return False
    elif a is ANY or b is ANY:
        return op == "=="
    return bool(
        {
            "==": a == b,
            "!=": a != b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
        }[op]
    )


@given(tables(), selects, st.data())
def test_vectorised_equals_reference(view: FakeView, tree: Any, data: st.DataObject) -> None:
    """For random hosts and selects, evaluate() equals the per-host reference, on all hosts
    and on any subset of them."""
    sel = compiled(write(tree))
    expected = [truthy(reference(tree, view, h)) for h in range(view.hosts.n)]
    assert sel.evaluate(view).tolist() == expected
    idx = data.draw(st.lists(st.integers(0, view.hosts.n - 1), max_size=8))
    got = sel.evaluate(view, np.array(idx, dtype=np.intp)).tolist()
    assert got == [expected[i] for i in idx]


@given(tables(), selects, st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=6))
def test_memo_follows_charges(view: FakeView, tree: Any, charges: list[tuple[int, int]]) -> None:
    """Charging hosts (availability falls, then forget_host) keeps the memo equal to a
    fresh evaluation; a monotone select never turns true on a charged host."""
    sel = compiled(write(tree))
    memo = SelectMemo(view)
    before = memo.mask(sel).copy()
    for host, amount in charges:
        host %= view.hosts.n
        for k in CONSUMABLES:
            view.avail[k][host] = max(view.avail[k][host] - amount, 0)
        view.shared["lic_x"] = max(view.shared["lic_x"] - amount, 0)
        memo.forget_host(host)
        for h in range(view.hosts.n):  # a shared charge is felt on every host
            memo.forget_host(h)
        assert memo.mask(sel).tolist() == sel.evaluate(view).tolist()
    if sel.monotone:
        assert not (memo.mask(sel) & ~before).any()
