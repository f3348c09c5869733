"""Plan iterators (spec Req 2): lazy, balanced, descending, stable end, checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import xce.alloc.plans as plans_mod
from xce.alloc import (
    CancelToken,
    CombinatorialPlanIterator,
    Plan,
    PlanIterator,
    PreparedPrimary,
    TrivialPlanIterator,
    balanced,
    prepare_requirement,
)
from xce.cluster.catalog import ResourceCatalog, ResourceDef, ResourceKind
from xce.errors import Cancelled

CATALOG = ResourceCatalog([ResourceDef("mem", ResourceKind.CONSUMABLE)])
FILL = Plan((), fill=True)


def primary(text: str, tasks: int) -> PreparedPrimary:
    return prepare_requirement(text, CATALOG, tasks, tasks).alternatives[0][0]


def plans(*buckets: tuple[int, ...]) -> list[Plan]:
    return [Plan(b) for b in buckets]


MakeIter = Callable[[CancelToken], PlanIterator]
ITERATORS: dict[str, MakeIter] = {
    "trivial": TrivialPlanIterator,
    "combinatorial": lambda token: CombinatorialPlanIterator(primary("", 5), token),
    "combinatorial-ptile": lambda token: CombinatorialPlanIterator(
        primary("span[ptile=2]", 5), token
    ),
}


# --- the partition ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "k", "expected"),
    [
        (7, 3, (3, 2, 2)),
        (7, 1, (7,)),
        (7, 7, (1,) * 7),
        (3, 2, (2, 1)),
        (10, 4, (3, 3, 2, 2)),
        (4, 2, (2, 2)),
        (5, 4, (2, 1, 1, 1)),
    ],
)
def test_balanced_partition_examples(n: int, k: int, expected: tuple[int, ...]) -> None:
    """Spec Req 4 AC 1 / Req 2 partition policy: N mod k buckets of ceil(N/k), the rest
    floor(N/k), largest first (N=7, k=3 -> [3,2,2])."""
    assert balanced(n, k) == expected


@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n))))
def test_balanced_partition_properties(nk: tuple[int, int]) -> None:
    """Spec Req 2 AC 2 / Req 4 AC 1: a partition of N into exactly k non-empty buckets,
    balanced (sizes differ by at most one) and descending."""
    n, k = nk
    b = balanced(n, k)
    assert (sum(b), len(b)) == (n, k)
    assert min(b) >= 1
    assert max(b) - min(b) <= 1
    assert list(b) == sorted(b, reverse=True)


# --- the plan sequence -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tasks", "expected"),
    [
        pytest.param(
            "",
            7,
            [
                *plans(
                    (7,),
                    (4, 3),
                    (3, 2, 2),
                    (2, 2, 2, 1),
                    (2, 2, 1, 1, 1),
                    (2, 1, 1, 1, 1, 1),
                    (1,) * 7,
                ),
                FILL,
            ],
            id="no span: k=1..7 then fill",
        ),
        pytest.param("", 2, [*plans((2,), (1, 1)), FILL], id="two tasks"),
        pytest.param(
            "span[hosts=-1]",
            4,
            [*plans((4,), (2, 2), (2, 1, 1), (1, 1, 1, 1)), FILL],
            id="span[hosts=-1] is no constraint: fill too",
        ),
        pytest.param("span[hosts=1]", 7, plans((7,)), id="span[hosts=1]: only [N]"),
        pytest.param("span[ptile=3]", 7, plans((3, 3, 1)), id="ptile=3: p,p,rest"),
        pytest.param("span[ptile=2]", 4, plans((2, 2)), id="ptile divides N: no rest"),
        pytest.param("span[ptile=1]", 3, plans((1, 1, 1)), id="ptile=1"),
        pytest.param("span[ptile=5]", 3, plans((3,)), id="ptile above N: one bucket"),
        pytest.param(
            "select[mem>1] rusage[mem=1] order[mem]",
            3,
            [*plans((3,), (2, 1), (1, 1, 1)), FILL],
            id="select, rusage, order do not shape plans",
        ),
    ],
)
def test_combinatorial_plan_sequence(text: str, tasks: int, expected: list[Plan]) -> None:
    """Spec Req 2 AC 1-3 / Req 4 AC 1 / design §3: plans k=1..N hosts, balanced,
    buckets descending, most consolidated first; the fill plan follows the N plans only
    without span (or with span[hosts=-1]); span[hosts=1] gives only [N];
    span[ptile=p] gives [p,...,p,rest]."""
    got = list(CombinatorialPlanIterator(primary(text, tasks), CancelToken()))
    assert got == expected
    for plan in got:
        if not plan.fill:
            assert sum(plan.buckets) == tasks
            assert list(plan.buckets) == sorted(plan.buckets, reverse=True)
            assert plan.nbuckets == len(plan.buckets)


@pytest.mark.parametrize(
    ("text", "given", "count", "expected"),
    [
        pytest.param("", 1, 3, [*plans((4, 3), (3, 2, 2)), FILL], id="stops at 3 buckets"),
        pytest.param("", 3, 1, [FILL], id="already past: the fill plan is next"),
        pytest.param("", 0, 0, [FILL], id="no host takes a task: only the fill plan"),
        pytest.param("span[hosts=1]", 0, 1, plans((7,)), id="span[hosts=1]: its one plan"),
        pytest.param("span[hosts=1]", 0, 0, [], id="span[hosts=1], no host: nothing"),
        pytest.param("span[ptile=3]", 0, 1, plans((3, 3, 1)), id="ptile: unchanged"),
    ],
)
def test_skip_buckets_beyond(text: str, given: int, count: int, expected: list[Plan]) -> None:
    """The exact shortcut of a caller that knows only ``count`` hosts can take a task:
    after ``given`` plans, the balanced plans of more buckets are left out and the fill
    plan (where the job has one) still follows, whatever was given before."""
    it = CombinatorialPlanIterator(primary(text, 7), CancelToken())
    before = [next(it) for _ in range(given)]
    it.skip_buckets_beyond(count)
    assert (
        before + list(it)
        == list(CombinatorialPlanIterator(primary(text, 7), CancelToken()))[:given] + expected
    )


def test_trivial_iterator_gives_one_plan_once() -> None:
    """Spec 'Who uses this composition' / Req 9 AC 1: the seqjob plan is [1], once."""
    it = TrivialPlanIterator(CancelToken())
    assert next(it) == Plan((1,))
    assert Plan((1,)).nbuckets == 1
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


# --- laziness --------------------------------------------------------------------------
def test_one_plan_per_next_on_a_huge_task_count() -> None:
    """Spec Req 2 AC 2: next() generates exactly one plan and materialises no other;
    with N = 10**12 an eager iterator would never return."""
    n = 10**12
    huge = prepare_requirement("", CATALOG, 1, n).alternatives[0][0]
    it = CombinatorialPlanIterator(huge, CancelToken())
    assert next(it) == Plan((n,))
    assert next(it) == Plan((n // 2, n // 2))
    third = next(it)
    assert third.nbuckets == 3
    assert sum(third.buckets) == n
    it.close()


def test_each_next_computes_exactly_one_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec Req 2 AC 2: counting the partitions computed shows one per next(), none ahead."""
    calls: list[tuple[int, int]] = []
    real = plans_mod._balanced_plan  # the (memoised) maker of each balanced plan

    def counting(n: int, k: int) -> Plan:
        calls.append((n, k))
        return real(n, k)

    monkeypatch.setattr(plans_mod, "_balanced_plan", counting)
    it = CombinatorialPlanIterator(primary("", 6), CancelToken())
    assert calls == []  # construction generates nothing
    for k in range(1, 7):
        next(it)
        assert calls == [(6, j) for j in range(1, k + 1)]


# --- end of iteration and cleanup ------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ITERATORS))
def test_stop_iteration_is_stable_after_exhaustion(name: str) -> None:
    """Spec Req 2 AC 4: after the last plan, every further next() ends the iteration."""
    it = ITERATORS[name](CancelToken())
    produced = list(it)
    assert produced
    for _ in range(5):
        with pytest.raises(StopIteration):
            next(it)
    assert list(it) == []


@pytest.mark.parametrize("name", sorted(ITERATORS))
@pytest.mark.parametrize("consumed", [0, 1, 2])
def test_close_ends_the_iteration(name: str, consumed: int) -> None:
    """Spec Req 2 AC 5: close() releases everything (also as a context manager), is
    idempotent, and is the only cleanup; next() after it raises StopIteration."""
    it = ITERATORS[name](CancelToken())
    for _ in range(consumed):
        next(it, None)
    it.close()
    it.close()
    with pytest.raises(StopIteration):
        next(it)
    with ITERATORS[name](CancelToken()) as scoped:  # type: ignore[attr-defined]
        next(scoped)
    with pytest.raises(StopIteration):
        next(scoped)


@pytest.mark.parametrize("name", sorted(ITERATORS))
def test_iterators_obey_the_protocol(name: str) -> None:
    """Spec Req 2 AC 1: every plan iterator is a PlanIterator (iter/next/close)."""
    it = ITERATORS[name](CancelToken())
    assert isinstance(it, PlanIterator)
    assert iter(it) is it


# --- cancellation ----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ITERATORS))
def test_every_next_is_a_checkpoint(name: str) -> None:
    """Spec Req 2 AC 6: each next() is a cancellation checkpoint, including the one that
    reports exhaustion."""
    token = CancelToken()
    it = ITERATORS[name](token)
    calls = 0
    while True:
        calls += 1
        try:
            next(it)
        except StopIteration:
            break
    assert token.checkpoints == calls
    next(it, None)
    assert token.checkpoints == calls + 1


@pytest.mark.parametrize("name", sorted(ITERATORS))
@pytest.mark.parametrize("after", [0, 1])
def test_cancelled_token_raises_at_next(name: str, after: int) -> None:
    """Spec Req 2 AC 6 / STYLE 6: once the token is cancelled, the next next() raises
    Cancelled (a BaseException, so `except Exception` cannot swallow it)."""
    token = CancelToken()
    it = ITERATORS[name](token)
    for _ in range(after):
        next(it)
    token.cancel()
    with pytest.raises(Cancelled):
        next(it)
    with pytest.raises(Cancelled):
        next(it)
    assert issubclass(Cancelled, BaseException)
    assert not issubclass(Cancelled, Exception)


@given(n=st.integers(1, 300), k=st.integers(1, 300), p=st.integers(1, 64))
def test_builtin_plans_describe_their_buckets_as_runs(n: int, k: int, p: int) -> None:
    """The size runs the builtin iterators attach (the allocator walks plans by them)
    are exactly the runs of their buckets."""
    plans = [plans_mod._balanced_plan(n, min(k, n)), plans_mod._ptile_plan(n, p), plans_mod._ONE]
    for plan in plans:
        assert plan.runs is not None
        assert plan.size_runs() == replace(plan, runs=None).size_runs()
        assert sum(size * count for size, count in plan.size_runs()) == sum(plan.buckets)
