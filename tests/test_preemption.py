"""Preemption in the allocation engine and the session (issue 11): the spec's full
preemption flow, PREEMPT views, the decisions and the JSON of ``xce schedule``.

Expectations are worked out by hand from the clusters built here (table tests), or
recomputed from the drawn state (properties), never read back from the engine's books.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder, reserved_victim_site
from xce.alloc import AllocOptions, Dispatched, Pending, PendReason
from xce.cluster import ClusterState, state_from_dict
from xce.core import JobPreempted, JobStarted, SchedulerCore, Session, SessionResult
from xce.preempt import LowestPriorityFirst


def run(state: ClusterState, **options: bool) -> SessionResult:
    return Session(state, options=AllocOptions(**options)).run()


def decision(result: SessionResult, job: str) -> Dispatched | Pending:
    return next(d for d in result.decisions if d.job == job)


def base() -> ClusterBuilder:
    """high (50) preempts low (10) and mid (50, equal: never); other (5) is not listed."""
    return (
        ClusterBuilder()
        .queue("high", 50, preempts=["low", "mid"])
        .queue("mid", 50)
        .queue("low", 10)
        .queue("other", 5)
    )


# -- table tests --------------------------------------------------------------------------


def test_one_big_low_priority_job_rather_than_several_small_ones() -> None:
    """issue 11 (table): the preferred minimal set — one 4-slot victim on A rather than
    the two younger 2-slot victims on B, though those rank first (fewest victims)."""
    state = (
        base()
        .host("A", 4)
        .host("B", 4)
        .running("big", {"A": 4}, queue="low", start_time=0)
        .running("s1", {"B": 2}, queue="low", start_time=5)
        .running("s2", {"B": 2}, queue="low", start_time=6)
        .job("h", 4, queue="high", resreq="span[hosts=1]")
        .build()
    )
    d = decision(run(state), "h")
    assert isinstance(d, Pending)
    assert d.info.reason is PendReason.PREEMPTING
    assert d.preemption is not None
    assert d.preemption.victims == ("big",)
    assert [(c.host, c.slots) for c in d.preemption.promise.claims] == [(0, 4)]


def test_equal_priority_and_unlisted_queues_are_never_victims() -> None:
    """issue 11 (table): a job of an equal-priority queue (mid, though listed) or of a
    queue not listed (other) is never chosen; only low is, and when low is not
    enough the job pends with its normal reason."""
    state = (
        base()
        .host("A", 2)
        .host("B", 2)
        .host("C", 2)
        .running("m", {"A": 2}, queue="mid")
        .running("o", {"B": 2}, queue="other")
        .running("l", {"C": 2}, queue="low")
        .job("h2", 2, queue="high")
        .job("h4", 4, queue="high")
        .build()
    )
    result = run(state)
    h2, h4 = decision(result, "h2"), decision(result, "h4")
    assert isinstance(h2, Pending)
    assert h2.preemption is not None
    assert h2.preemption.victims == ("l",)
    assert isinstance(h4, Pending)
    assert h4.preemption is None
    assert h4.info.reason is PendReason.NOT_ENOUGH_SLOTS


def test_no_preemption_when_the_job_fits() -> None:
    """issue 11 (table): a job that the normal allocator places is dispatched; nothing
    is preempted."""
    state = (
        base().host("A", 4).running("l", {"A": 2}, queue="low").job("h", 2, queue="high").build()
    )
    result = run(state)
    assert isinstance(decision(result, "h"), Dispatched)
    assert result.stats.preemptions == 0


def test_a_failed_preemption_fills_the_cache() -> None:
    """issue 11 (table) / spec flow: the cache entry is made once preemption has failed
    too, so an identical later job is a cache hit; a job that preempts makes none."""
    state = (
        base()
        .host("A", 2)
        .running("l", {"A": 1}, queue="low")
        .running("o", {"A": 1}, queue="other")
        .job("h1", 2, queue="high", user="u")
        .job("h2", 2, queue="high", user="u")
        .build()
    )
    result = run(state)
    h1, h2 = decision(result, "h1"), decision(result, "h2")
    assert isinstance(h1, Pending)
    assert isinstance(h2, Pending)
    assert h1.preemption is None
    assert not h1.cached
    assert h2.cached
    assert result.stats.cache_inserts == 1


def test_a_preemption_makes_no_cache_entry() -> None:
    """issue 11 (spec flow): on success no cache entry; a second identical job is tried
    in full (and finds no victim left: pends with its normal reason, uncached)."""
    state = (
        base()
        .host("A", 2)
        .running("l", {"A": 2}, queue="low")
        .job("h1", 2, queue="high", user="u")
        .job("h2", 2, queue="high", user="u")
        .build()
    )
    result = run(state)
    h1, h2 = decision(result, "h1"), decision(result, "h2")
    assert isinstance(h1, Pending)
    assert h1.preemption is not None
    assert isinstance(h2, Pending)
    assert h2.preemption is None  # no job is preempted twice in one session
    assert not h2.cached
    assert h2.info.reason is PendReason.NOT_ENOUGH_SLOTS


def test_what_a_preemptor_is_promised_goes_to_no_later_job() -> None:
    """issue 11 (table): h needs 4 slots on one host; A has 2 free and a 2-slot victim,
    so h is promised all of A. The later low job of 2 tasks, which would fit in A's 2
    free slots, pends."""
    state = (
        base()
        .host("A", 4)
        .running("v", {"A": 2}, queue="low")
        .job("h", 4, queue="high", resreq="span[hosts=1]")
        .job("later", 2, queue="low")
        .build()
    )
    result = run(state)
    assert decision(result, "h").info.reason is PendReason.PREEMPTING  # type: ignore[union-attr]
    later = decision(result, "later")
    assert isinstance(later, Pending)
    assert later.info.reason is PendReason.NOT_ENOUGH_SLOTS


def _own_victim(b: ClusterBuilder) -> ClusterBuilder:
    """l (v, low) fills 2 slots of A, o (w, high) B; h (v, high, 2 tasks on one host)
    and j1 (v, 1 task) pend."""
    b.running("l", {"A": 2}, queue="low", user="v")
    b.running("o", {"B": 2}, queue="high", user="w")
    b.job("h", 2, queue="high", user="v", resreq="span[hosts=1]")
    return b.job("j1", 1, queue="high", user="v")


def _preempted_l(result: SessionResult) -> None:
    h = decision(result, "h")
    assert isinstance(h, Pending)
    assert h.preemption is not None
    assert h.preemption.victims == ("l",)


def test_a_limit_shared_by_victim_and_preemptor_counts_their_work_once() -> None:
    """v may hold 3 slots in all. h (v, high) preempts v's own low job l on A, 2 slots
    for 2: v's usage stays 2, the promise counted beyond what l gives back. So j1 (v,
    1 task) is dispatched on C (2 + 1 <= 3; it was refused, "4 of 3" counting l and
    its replacement both), and j2 (v, 1 task) pends LIMIT with 3 in use."""
    b = base().host("A", 2).host("B", 2).host("C", 1).host("D", 1)
    b.limit("v_cap", users=["v"], slots=3)
    doc = _own_victim(b).job("j2", 1, queue="high", user="v").to_dict()
    state = state_from_dict(doc, "<limit>")
    for result in _all_switches(state):
        _preempted_l(result)
        assert isinstance(decision(result, "j1"), Dispatched)
        j2 = decision(result, "j2")
        assert isinstance(j2, Pending)
        assert j2.info.reason is PendReason.LIMIT
        assert "3" in j2.info.message
        assert "4" not in j2.info.message
    _apply_session(doc, run(state))


def test_a_per_host_limit_counts_a_promise_beyond_what_its_victim_gives_back() -> None:
    """Per host the same: v may hold 3 slots on each host; l (v, low) holds 2 of A's 3.
    h (v, 2 tasks on one host) preempts l and is promised 2 of A's slots: v's usage on A
    stays 2, so j1 (v, 1 task) takes A's last slot (it pended LIMIT, 4 counted on A)."""
    b = base().host("A", 3).host("B", 2).limit("v_host", users=["v"], slots=3, per_host=True)
    doc = _own_victim(b).to_dict()
    state = state_from_dict(doc, "<limit>")
    for result in _all_switches(state):
        _preempted_l(result)
        j1 = decision(result, "j1")
        assert isinstance(j1, Dispatched), j1
        assert [c.host for c in j1.allocation.claims] == [0]  # A
    _apply_session(doc, run(state))


def test_free_slots_beyond_the_promise_stay_available() -> None:
    """issue 11: only the promise is withheld: B's free slots still go to a later job."""
    state = (
        base()
        .host("A", 4)
        .host("B", 2)
        .running("v", {"A": 4}, queue="low")
        .running("w", {"B": 1}, queue="other")
        .job("h", 4, queue="high", resreq="span[hosts=1]")
        .job("later", 1, queue="low")
        .build()
    )
    result = run(state)
    assert isinstance(decision(result, "later"), Dispatched)


def test_compound_and_alternative_requirements_preempt_as_one_job() -> None:
    """issue 11 (table): a compound job whose two terms need both victims preempts both
    in one decision; an alternative job preempts for the first alternative that fits."""
    state = (
        base()
        .host("A", 2, attributes={"type": "x"})
        .host("B", 2, attributes={"type": "y"})
        .running("va", {"A": 2}, queue="low", start_time=1)
        .running("vb", {"B": 2}, queue="low", start_time=2)
        .job("c", queue="high", resreq="2*{select[type==x]} + 2*{select[type==y]}")
        .build()
    )
    c = decision(run(state), "c")
    assert isinstance(c, Pending)
    assert c.preemption is not None
    assert sorted(c.preemption.victims) == ["va", "vb"]
    assert sorted(cl.term for cl in c.preemption.promise.claims) == [0, 1]
    alt = (
        base()
        .host("A", 2, attributes={"type": "x"})
        .host("B", 2, attributes={"type": "y"})
        .running("va", {"A": 2}, queue="other")
        .running("vb", {"B": 2}, queue="low")
        .job("a", 2, queue="high", resreq="{select[type==x]} || {select[type==y]}")
        .build()
    )
    a = decision(run(alt), "a")
    assert isinstance(a, Pending)
    assert a.preemption is not None
    assert a.preemption.victims == ("vb",)
    assert a.preemption.promise.alternative == 1


def test_resources_and_licences_of_victims_count_as_available() -> None:
    """issue 11: PREEMPT counts a victim's whole footprint: its memory and its licence,
    not just its slots."""
    state = (
        base()
        .host("A", 4, mem=1000)
        .shared("lic", 1)
        .running("v", {"A": 1}, rusage={"mem": 900}, shared={"lic": 1}, queue="low")
        .job("h", 1, queue="high", resreq="rusage[mem=500:lic=1]")
        .build()
    )
    h = decision(run(state), "h")
    assert isinstance(h, Pending)
    assert h.preemption is not None
    assert h.preemption.victims == ("v",)


# -- properties ---------------------------------------------------------------------------


@st.composite
def preemption_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A state document: 1-4 hosts with slots and mem, a licence of 2, running jobs of
    every queue (some holding mem and the licence), pending jobs of high and low with
    spans, mem, the licence; sometimes a limit on user v (aggregate or per host)."""
    n_hosts = draw(st.integers(1, 4))
    b = base().shared("lic", 2)
    slots = [draw(st.integers(1, 6)) for _ in range(n_hosts)]
    for i, s in enumerate(slots):
        b.host(f"h{i}", s, mem=100 * s)
    used = [0] * n_hosts
    lic = 0
    for r in range(draw(st.integers(0, 6))):
        h = draw(st.integers(0, n_hosts - 1))
        free = slots[h] - used[h]
        if free == 0:
            continue
        k = draw(st.integers(1, free))
        used[h] += k
        takes = draw(st.booleans()) and lic < 2
        lic += takes
        b.running(
            f"r{r}",
            {f"h{h}": k},
            rusage={"mem": draw(st.sampled_from([0, 50, 100]))},
            shared={"lic": 1} if takes else None,
            queue=draw(st.sampled_from(["low", "mid", "other", "high"])),
            user=draw(st.sampled_from("uv")),
            start_time=float(draw(st.integers(0, 9))),
        )
    for j in range(draw(st.integers(1, 5))):
        tasks = draw(st.integers(1, 8))
        parts = [draw(st.sampled_from(["", "span[hosts=1]", "span[ptile=2]"]))]
        parts.append(draw(st.sampled_from(["", "rusage[mem=50]", "rusage[mem=80:lic=1]"])))
        b.job(
            f"j{j}",
            tasks,
            queue=draw(st.sampled_from(["high", "high", "low"])),
            resreq=" ".join(p for p in parts if p),
            user=draw(st.sampled_from("uv")),
        )
    limit = draw(st.sampled_from([None, "aggregate", "per_host"]))
    if limit is not None:
        b.limit("v_cap", users=["v"], slots=3, per_host=limit == "per_host")
    return b.to_dict()


def preemption_states() -> st.SearchStrategy[ClusterState]:
    return preemption_docs().map(lambda doc: state_from_dict(doc, "<preemption>"))


def _apply_session(doc: dict[str, Any], result: SessionResult) -> SchedulerCore:
    """The session applied through the core, in decision order: the core refuses any
    event that does not fit (slots, mem, licences), which is the check."""
    core = SchedulerCore(state_from_dict(doc, "<preemption>"))
    for d in result.decisions:
        if isinstance(d, Dispatched):
            core.apply(JobStarted(d.job, d.allocation))
        elif d.preemption is not None:
            core.apply(*(JobPreempted(v) for v in d.preemption.victims))
            core.apply(JobStarted(d.job, d.preemption.promise))
    return core


@given(preemption_docs())
def test_victims_are_lower_priority_distinct_and_the_preemptor_then_fits(
    doc: dict[str, Any],
) -> None:
    """issue 11 (properties): every victim is a running job of a queue the preemptor's
    queue lists, of lower priority; no job is preempted twice in a session; the
    dispatched jobs and the promises, applied in decision order with the victims
    released, fit every host's slots and mem and the licence (the core checks each
    start); after its victims release, a preemptor alone fits; and a limit that
    applies to a preemptor is kept by its promise."""
    state = state_from_dict(doc, "<preemption>")
    result = run(state)
    queues = state.queues
    running = {r.id: r for r in state.running}
    seen: list[str] = []
    for p in result.pending:
        if p.preemption is None:
            continue
        job = next(j for j in state.jobs if j.id == p.job)
        mine = queues[job.queue]
        for v in p.preemption.victims:
            r = running[v]
            assert r.queue in mine.preempts
            assert queues[r.queue].priority < mine.priority
        seen += p.preemption.victims
        alone = dict(doc)
        alone["running"] = [
            r for r in doc.get("running", []) if r["id"] not in p.preemption.victims
        ]
        alone["jobs"] = [j for j in doc["jobs"] if j["id"] == p.job]
        again = decision(run(state_from_dict(alone, "<alone>")), p.job)
        assert isinstance(again, Dispatched), again
    assert len(seen) == len(set(seen))
    _apply_session(doc, result)  # raises EventError if anything over-allocates
    for lim in state.limits:  # the aggregate slots limit on user v holds after the session
        if lim.per_host:
            continue
        base = sum(r.slots for r in running.values() if r.user == "v" and r.id not in seen)
        new = 0
        for d in result.decisions:
            if next(j for j in state.jobs if j.id == d.job).user != "v":
                continue
            if isinstance(d, Dispatched):
                new += d.allocation.slots
            elif d.preemption is not None:
                new += d.preemption.promise.slots
        assert new == 0 or base + new <= 3, (base, new)


@given(preemption_states())
def test_switches_change_no_preemption(state: ClusterState) -> None:
    """issue 11: the cache, the shortcuts, the cursors and failure reuse (each made
    exact in PREEMPT mode by its own view) change no decision, preemptions included;
    nor does the threaded session."""

    def value(r: SessionResult) -> list[Any]:
        out: list[Any] = []
        for d in r.decisions:
            if isinstance(d, Dispatched):
                out.append((d.job, d.allocation.claims))
            else:
                pre = d.preemption
                out.append(
                    (
                        d.job,
                        d.info.reason,
                        pre.victims if pre else None,
                        pre.promise.claims if pre else None,
                    )
                )
        return out

    on = value(run(state))
    off = value(run(state, cache=False, shortcuts=False, cursors=False, reuse_failures=False))
    assert on == off
    assert value(Session(state).run(threads=True)) == on


# -- PREEMPT mode: every shortcut stays exact (one test each) ---------------------------


def _preempts(state: ClusterState, job: str, **options: bool) -> tuple[str, ...] | None:
    d = decision(run(state, **options), job)
    assert isinstance(d, Pending)
    return d.preemption.victims if d.preemption is not None else None


def test_scan_cursors_of_the_session_do_not_leak_into_a_preempt_view() -> None:
    """issue 11 (shortcut: cursors): j1 finds A full and lands on B, so the session's
    cursor for one-slot wants skips A; in the PREEMPT view A is free again and must be
    scanned: h preempts v on A."""
    state = (
        base()
        .queue("top", 90)  # picked first, preempts nothing
        .host("A", 1)
        .host("B", 1)
        .running("v", {"A": 1}, queue="low")
        .job("j1", 1, queue="top")
        .job("h", 1, queue="high")
        .build()
    )
    assert isinstance(decision(run(state), "j1"), Dispatched)
    assert _preempts(state, "h") == ("v",)
    assert _preempts(state, "h", cursors=False) == ("v",)


def test_the_select_memo_of_the_session_does_not_leak_into_a_preempt_view() -> None:
    """issue 11 (shortcut: select memo): ``select[mem>500]`` is false on A in the session
    (v holds 800 of its 1000 mem; j1 evaluated it there) and true once v is gone."""
    state = (
        base()
        .host("A", 4, mem=1000)
        .running("v", {"A": 1}, rusage={"mem": 800}, queue="low")
        .queue("top", 90)
        .job("j1", 1, queue="top", resreq="select[mem>500]")
        .job("h", 1, queue="high", resreq="select[mem>500]")
        .build()
    )
    result = run(state)
    assert decision(result, "j1").info.reason is PendReason.SELECT  # type: ignore[union-attr]
    assert _preempts(state, "h") == ("v",)


def test_the_capacity_bound_is_taken_from_the_view() -> None:
    """issue 11 (shortcut: more tasks than free slots pends at once): no slot is free in
    the session, so the bound turns h away there; the view has v's four."""
    state = (
        base().host("A", 4).running("v", {"A": 4}, queue="low").job("h", 4, queue="high").build()
    )
    assert _preempts(state, "h") == ("v",)
    assert _preempts(state, "h", shortcuts=False) == ("v",)


def test_failure_reuse_of_the_session_does_not_answer_a_preempt_attempt() -> None:
    """issue 11 (shortcut: reuse_failures): a low job of the same requirement failed on
    these very books just before; h's normal attempt reuses that failure, and its
    PREEMPT attempts still run on their own views and succeed."""
    state = (
        base()
        .host("A", 2)
        .running("v", {"A": 2}, queue="low")
        .queue("top", 90)
        .job("j1", 2, queue="top", user="a")
        .job("h", 2, queue="high", user="b")
        .build()
    )
    result = run(state)
    assert result.stats.failures_reused == 1
    assert _preempts(state, "h") == ("v",)


def test_the_unsatisfiable_cache_is_neither_read_nor_filled_in_preempt_mode() -> None:
    """issue 11 (shortcut: the unsatisfiable cache; spec flow): h1 preempts v (no entry
    made); h2, identical, is tried in full and preempts w; with the cache off, the same."""
    state = (
        base()
        .host("A", 2)
        .host("B", 2)
        .running("v", {"A": 2}, queue="low", start_time=2)
        .running("w", {"B": 2}, queue="low", start_time=1)
        .job("h1", 2, queue="high", user="u")
        .job("h2", 2, queue="high", user="u")
        .build()
    )
    for cache in (True, False):
        result = run(state, cache=cache)
        assert _victims(result, "h1") == ("v",)
        assert _victims(result, "h2") == ("w",)
        assert result.stats.cache_inserts == 0


def _victims(result: SessionResult, job: str) -> tuple[str, ...] | None:
    d = decision(result, job)
    assert isinstance(d, Pending)
    return d.preemption.victims if d.preemption is not None else None


class _Refuses:
    """A preemptor that must never be asked."""

    name = "refuses"

    def victim_sets(self, candidates: Sequence[Any], probe: Any) -> Any:
        raise AssertionError("asked to preempt with no preempting queue")


@given(preemption_states())
def test_without_preempts_the_preemptor_is_never_asked(state: ClusterState) -> None:
    """issue 11: with no ``preempts:`` anywhere nothing of preemption runs (the
    preemptor is never asked, no decision carries a preemption, the stats count none)."""
    from dataclasses import replace

    from xce.cluster.state import Queue

    plain = replace(
        state,
        queues={n: Queue(n, q.priority) for n, q in state.queues.items()},
    )
    result = Session(plain, preemptor=_Refuses()).run()  # type: ignore[arg-type]
    assert all(p.preemption is None for p in result.pending)
    assert result.stats.preemptions == 0


def test_a_dispatched_job_of_a_preempting_queue_fills_the_cache_as_usual() -> None:
    """issue 11 (spec flow): the cache entries of a normal attempt are held back only
    until the job's outcome is known; an alternative job of a preempting queue whose
    first alternative failed before the second fit makes the usual entry."""
    state = (
        base()
        .host("A", 2, attributes={"type": "x"})
        .host("B", 2, attributes={"type": "y"})
        .running("o", {"A": 2}, queue="other")
        .job("a", 2, queue="high", resreq="{select[type==x]} || {select[type==y]}")
        .build()
    )
    for queues in (state, _no_preempts(state)):
        result = run(queues)
        assert isinstance(decision(result, "a"), Dispatched)
        assert result.stats.cache_inserts == 1


def _no_preempts(state: ClusterState) -> ClusterState:
    from dataclasses import replace

    from xce.cluster.state import Queue

    return replace(state, queues={n: Queue(n, q.priority) for n, q in state.queues.items()})


def test_cli_preemptor_option_names_the_option_when_unknown(tmp_path: Any) -> None:
    """issue 11: ``--preemptor NAME`` chooses the victim-set iterator (schedule and
    simulate); an unknown name is the option's fault, exit 2, before any input is read."""
    from typer.testing import CliRunner

    from xce.cli.main import app

    missing = str(tmp_path / "missing.yaml")  # never read: the option is checked first
    for command in (["schedule", missing], ["simulate", "--workload", missing, "--hosts", "1"]):
        result = CliRunner().invoke(app, [*command, "--preemptor", "nope"])
        assert result.exit_code == 2, result.output
        assert "--preemptor: unknown preemptor 'nope' (known: lowest_priority_first)" in (
            result.stderr
        )


def test_cli_snapshot_runs_the_preemptor_instead_of_its_victims(tmp_path: Any) -> None:
    """issue 11: ``xce schedule --snapshot`` applies the session in decision order: the
    victims are preempted (gone from running work) and the preemptor runs on its
    promise; stderr says so."""
    import yaml
    from typer.testing import CliRunner

    from xce.cli.main import app
    from xce.cluster import load_state

    state = tmp_path / "s.yaml"
    doc = (
        base().host("A", 4).running("v", {"A": 4}, queue="low").job("h", 4, queue="high").to_dict()
    )
    state.write_text(yaml.safe_dump(doc), encoding="utf-8")
    after = tmp_path / "after.yaml"
    result = CliRunner().invoke(app, ["schedule", str(state), "--snapshot", str(after)])
    assert result.exit_code == 0, result.output
    assert "the 1 preempted job(s) no longer run and their preemptors do: v" in result.stderr
    snap = load_state(after)
    assert [r.id for r in snap.running] == ["h"]
    assert snap.jobs == ()


def test_random_states_reach_every_kind_of_preemption() -> None:
    """issue 11: the properties above are not vacuous: over 200 derandomized states,
    jobs preempt for slots alone, for mem, for the licence, under a limit, and with
    several victims."""
    from hypothesis import Phase, settings

    seen: Counter[str] = Counter()

    @settings(max_examples=200, derandomize=True, database=None, phases=[Phase.generate])
    @given(preemption_docs())
    def collect(doc: dict[str, Any]) -> None:
        state = state_from_dict(doc, "<preemption>")
        for p in run(state).pending:
            if p.preemption is None:
                continue
            seen["any"] += 1
            amounts = {n for c in p.preemption.promise.claims for n, _ in c.amounts}
            seen["mem"] += "mem" in amounts
            seen["licence"] += bool(p.preemption.promise.shared)
            seen["limit"] += bool(state.limits)
            seen["several victims"] += len(p.preemption.victims) > 1

    collect()
    missing = [k for k in ("any", "mem", "licence", "limit", "several victims") if not seen[k]]
    assert not missing, (missing, seen)


# -- the fewest victims (issue 26) ----------------------------------------------------------


def test_the_fewest_victims_where_both_greedy_orders_take_three() -> None:
    """issue 26 (table): a 7-task ``span[ptile=4]`` job needs a host of 4 and one of 3.
    Rank order (youngest first: Z, P, Q, R, S) reaches a sufficient prefix at Z, P, Q
    (A and B freed) and largest first (R, Z, P, Q, S) at R, Z, P (C and A), both minimal
    sets of three; R and S free C (4) and D (3 with its free slot): two suffice, and are
    the only pair that does."""
    state = (
        base()
        .host("A", 4)
        .host("B", 4)
        .host("C", 4)
        .host("D", 3)
        .running("Z", {"A": 2, "B": 2}, queue="low", start_time=9)
        .running("P", {"A": 2}, queue="low", start_time=8)
        .running("Q", {"B": 2}, queue="low", start_time=7)
        .running("R", {"C": 4}, queue="low", start_time=2)
        .running("S", {"D": 2}, queue="low", start_time=1)
        .job("h", 7, queue="high", resreq="span[ptile=4]")
        .build()
    )
    d = decision(run(state), "h")
    assert isinstance(d, Pending), d
    assert d.preemption is not None, d
    assert sorted(d.preemption.victims) == ["R", "S"]
    assert sorted((c.host, c.slots) for c in d.preemption.promise.claims) == [(2, 4), (3, 3)]
    greedy = Session(state, preemptor=LowestPriorityFirst(fewest=False)).run()
    g = decision(greedy, "h")
    assert isinstance(g, Pending)
    assert g.preemption is not None
    assert len(g.preemption.victims) == 3  # what it preempted before issue 26


@st.composite
def fewest_docs(draw: st.DrawFn) -> dict[str, Any]:
    """One pending job of high on 1-4 full-ish hosts of 1-5 slots, with a span or none;
    up to 6 running jobs of low (its only candidates, some over two hosts; up to six, the
    bounded search is always exact) or other (never candidates)."""
    n_hosts = draw(st.integers(1, 4))
    b = base()
    slots = [draw(st.integers(1, 5)) for _ in range(n_hosts)]
    for i, s in enumerate(slots):
        b.host(f"h{i}", s)
    free = list(slots)
    for r in range(draw(st.integers(1, 6))):
        hosts = draw(st.lists(st.integers(0, n_hosts - 1), min_size=1, max_size=2, unique=True))
        on = {f"h{h}": draw(st.integers(1, free[h])) for h in hosts if free[h]}
        if not on:
            continue
        for name, k in on.items():
            free[int(name[1:])] -= k
        queue = draw(st.sampled_from(["low", "low", "low", "other"]))
        b.running(f"r{r}", on, queue=queue, start_time=float(draw(st.integers(0, 9))))
    resreq = draw(st.sampled_from(["", "span[hosts=1]", "span[ptile=2]", "span[ptile=3]"]))
    b.job("j", draw(st.integers(1, 12)), queue="high", resreq=resreq)
    return b.to_dict()


def _fits_without(doc: dict[str, Any], gone: Sequence[str]) -> bool:
    alone = dict(doc)
    alone["running"] = [r for r in doc.get("running", []) if r["id"] not in gone]
    return isinstance(decision(run(state_from_dict(alone, "<alone>")), "j"), Dispatched)


@given(fewest_docs())
def test_the_victim_set_is_valid_and_never_larger_than_the_fewest(doc: dict[str, Any]) -> None:
    """issue 26 (property): on small states, the victims are candidates, the job fits once
    they are gone, and no smaller set of candidates would do (brute force over every
    smaller subset); when no set at all would do, nothing is preempted."""
    import itertools

    result = run(state_from_dict(doc, "<fewest>"))
    got = decision(result, "j")
    candidates = [r["id"] for r in doc.get("running", []) if r["queue"] == "low"]
    if isinstance(got, Dispatched):
        return
    if got.preemption is None:
        assert got.info.reason is not PendReason.PREEMPTING
        assert not _fits_without(doc, candidates)
        return
    victims = got.preemption.victims
    assert set(victims) <= set(candidates)
    assert _fits_without(doc, victims)
    for k in range(1, len(victims)):
        for smaller in itertools.combinations(candidates, k):
            assert not _fits_without(doc, smaller), (victims, smaller)


# -- advance reservations: a preemption keeps off the hosts a reservation keeps --------------


def reserved_pair(start: float = 0, end: float = 10_000, **admits: Any) -> ClusterBuilder:
    """Hosts a (2 slots, in reservation maint over [start, end)) and b (2 slots); high
    (priority 5) preempts low (1); the session at t=10."""
    return (
        ClusterBuilder()
        .queue("high", 5, preempts=["low"])
        .queue("low", 1)
        .host("a", 2)
        .host("b", 2)
        .reservation("maint", start, end, hosts=["a"], **admits)
        .at(10)
    )


def _all_switches(state: ClusterState) -> list[SessionResult]:
    return [run(state), run(state, cache=False, shortcuts=False, cursors=False)]


def test_a_preemption_never_promises_a_reserved_host() -> None:
    """docs/backfill.md, advance reservations: a job the reservation does not admit never
    uses its hosts in the window, preempting included. The only victim, r1, runs on the
    reserved host a (b is full of high work): h1 pends RESERVED naming maint, and r1 is
    not preempted (it was, on a, before). The same under every backfill policy and with
    the shortcuts and the cache off."""
    for policy in ("none", "easy", "conservative", "slurm"):
        state = (
            reserved_pair()
            .backfill(policy)
            .running("r1", {"a": 2}, queue="low", start_time=0, requested_time=50_000)
            .running("r2", {"b": 2}, queue="high", start_time=0, requested_time=50_000)
            .job("h1", 2, queue="high", requested_time=100)
            .build()
        )
        for result in _all_switches(state):
            d = decision(result, "h1")
            assert isinstance(d, Pending), (policy, d)
            assert d.preemption is None, (policy, d.preemption)
            assert d.info.reason is PendReason.RESERVED, (policy, d.info)
            assert "a preemption would give it" in d.info.message
            assert "advance reservation maint" in d.info.message


def test_a_preemption_takes_a_victim_outside_the_reservation() -> None:
    """The victim that ranks first (r1, the youngest) runs on the reserved host a; the
    other low job, r3 on b, is preempted instead."""
    doc = (
        reserved_pair()
        .backfill("easy")
        .running("r1", {"a": 2}, queue="low", start_time=5, requested_time=50_000)
        .running("r3", {"b": 2}, queue="low", start_time=0, requested_time=50_000)
        .job("h1", 2, queue="high", requested_time=100)
        .to_dict()
    )
    for result in _all_switches(state_from_dict(doc, "<rsv>")):
        d = decision(result, "h1")
        assert isinstance(d, Pending)
        assert d.preemption is not None
        assert d.preemption.victims == ("r3",)
        assert {c.host for c in d.preemption.promise.claims} == {1}  # b
    del doc["reservations"]
    d = decision(run(state_from_dict(doc, "<no reservation>")), "h1")
    assert isinstance(d, Pending)
    assert d.preemption is not None
    assert d.preemption.victims == ("r1",)  # without the reservation: the youngest


def test_a_job_the_reservation_admits_or_that_ends_before_it_preempts_there() -> None:
    """A job of a user the reservation lists, or whose estimated run ends before the
    window opens (maint from 500; h1 from 10 to 110), preempts r1 on the reserved host
    as if there were no reservation; one whose estimate reaches into it does not."""
    admitted: dict[str, Any] = {"users": ["alice"]}
    later: dict[str, Any] = {"start": 500}
    for how, user, requested, preempts in (
        (admitted, "alice", 100, True),
        (admitted, "bob", 100, False),
        (later, "bob", 100, True),
        (later, "bob", 1000, False),
    ):
        state = (
            reserved_pair(**how)
            .running("r1", {"a": 2}, queue="low", start_time=0, requested_time=50_000)
            .running("r2", {"b": 2}, queue="high", start_time=0, requested_time=50_000)
            .job("h1", 2, queue="high", user=user, requested_time=requested)
            .build()
        )
        d = decision(run(state), "h1")
        assert isinstance(d, Pending)
        assert (d.preemption is not None) == preempts, (user, requested, d)
        if preempts:
            assert d.preemption is not None
            assert d.preemption.victims == ("r1",)


def test_a_failed_preemption_under_a_reservation_makes_no_cache_entry() -> None:
    """Two jobs of one requirement, user and queue: long (its estimate reaches into
    maint, from 500) cannot preempt r1 on a; short (ends at 110) can. The first failure
    is the reservation's, not the requirement's: it makes no cache entry, so short is
    still tried and preempts r1."""
    state = (
        reserved_pair(start=500)
        .running("r1", {"a": 2}, queue="low", start_time=0, requested_time=50_000)
        .running("r2", {"b": 2}, queue="high", start_time=0, requested_time=50_000)
        .job("long", 2, queue="high", requested_time=1000)
        .job("short", 2, queue="high", requested_time=100)
        .build()
    )
    for result in _all_switches(state):
        long, short = decision(result, "long"), decision(result, "short")
        assert isinstance(long, Pending)
        assert long.preemption is None
        assert long.info.reason is PendReason.RESERVED
        assert isinstance(short, Pending)
        assert short.preemption is not None
        assert short.preemption.victims == ("r1",)


def test_a_job_naming_a_reservation_preempts_inside_it_only() -> None:
    """h1 names maint (on a): it may preempt only there. r3 on b ranks first (the
    youngest) but is outside: r1, on a, is preempted. With no victim inside (a holds high
    work), nothing is preempted, although r3 would free enough."""

    def site(on_a: str) -> ClusterState:
        """r1 of queue ``on_a`` on a (in maint), r3 (low, the youngest) on b."""
        return (
            reserved_pair()
            .running("r1", {"a": 2}, queue=on_a, start_time=0, requested_time=50_000)
            .running("r3", {"b": 2}, queue="low", start_time=5, requested_time=50_000)
            .job("h1", 2, queue="high", requested_time=100, reservation="maint")
            .build()
        )

    for result in _all_switches(site("low")):
        d = decision(result, "h1")
        assert isinstance(d, Pending)
        assert d.preemption is not None
        assert d.preemption.victims == ("r1",)
        assert {c.host for c in d.preemption.promise.claims} == {0}  # a
    for result in _all_switches(site("high")):
        d = decision(result, "h1")
        assert isinstance(d, Pending)
        assert d.preemption is None
        assert d.info.reason is not PendReason.PREEMPTING


@st.composite
def reserved_preemption_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A preemption document (above) at t=10 whose pending jobs have estimates (or
    none), with an advance reservation on some of its hosts: its window from 0, 20 or
    100, for 50 or 1000 s, open to nobody or to user u; some high jobs name it."""
    doc = draw(preemption_docs())
    hosts = [h["name"] for h in doc["hosts"]]
    start = draw(st.sampled_from([0, 20, 100]))
    rsv: dict[str, Any] = {
        "name": "maint",
        "hosts": draw(st.lists(st.sampled_from(hosts), min_size=1, unique=True)),
        "start": start,
        "end": start + draw(st.sampled_from([50, 1000])),
    }
    if draw(st.booleans()):
        rsv["users"] = ["u"]
    doc["reservations"] = [rsv]
    doc["now"] = 10
    for job in doc["jobs"]:
        requested = draw(st.sampled_from([None, 5, 50, 500]))
        if requested is not None:
            job["requested_time"] = requested
        if job["queue"] == "high" and draw(st.integers(0, 3)) == 0:
            job["reservation"] = "maint"
    return doc


def _forbidden(doc: dict[str, Any], job: dict[str, Any]) -> set[str]:
    """The hosts a job may not be placed on now (worked out from the document): those
    of maint when its run [10, 10 + estimate) overlaps the window and maint does not
    admit the job; every other host when the job names maint."""
    rsv = doc["reservations"][0]
    hosts = {h["name"] for h in doc["hosts"]}
    if job.get("reservation") == "maint":
        return hosts - set(rsv["hosts"])
    end = 10 + job.get("requested_time", float("inf"))
    admitted = job.get("user") in rsv.get("users", ())
    overlaps = rsv["start"] < end and rsv["end"] > 10
    return set(rsv["hosts"]) if overlaps and not admitted else set()


@given(reserved_preemption_docs())
def test_promises_keep_off_reserved_hosts_and_switches_change_nothing(
    doc: dict[str, Any],
) -> None:
    """Property: with an advance reservation, every promise (and every dispatch) keeps
    off the hosts the job may not use; the victims are lower-priority candidates, never
    one twice; the dispatches and promises applied in order over-allocate nothing; and
    the cache and shortcuts change no decision, preemptions included."""
    state = state_from_dict(doc, "<reserved>")
    result = run(state)
    jobs = {j["id"]: j for j in doc["jobs"]}
    seen: list[str] = []
    for d in result.decisions:
        if isinstance(d, Dispatched):
            claims = d.allocation.claims
        elif d.preemption is not None:
            claims = d.preemption.promise.claims
            seen += d.preemption.victims
        else:
            continue
        on = {doc["hosts"][c.host]["name"] for c in claims}
        assert not on & _forbidden(doc, jobs[d.job]), d
    assert len(seen) == len(set(seen))
    _apply_session(doc, result)
    off = run(state, cache=False, shortcuts=False, cursors=False, reuse_failures=False)

    def value(r: SessionResult) -> list[Any]:
        return [
            (d.job, d.allocation.claims)
            if isinstance(d, Dispatched)
            else (d.job, d.info.reason, d.preemption)
            for d in r.decisions
        ]

    assert value(result) == value(off)


def test_random_reserved_states_reach_both_sides_of_the_reservation() -> None:
    """The property above is not vacuous: over 200 derandomized states, preemptions are
    promised on reserved hosts (to admitted jobs, jobs that end before the window, jobs
    naming it) and kept off them (RESERVED after a preemption the mask stopped), and the
    shortcuts the switches turn off are taken (a failure under a mask known before, a
    could-preempt answer known before)."""
    from hypothesis import Phase, settings

    import xce.core.session as session_module
    from xce.alloc.planner import Planner

    seen: Counter[str] = Counter()
    made: list[Planner] = []

    class Recording(Planner):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    @settings(max_examples=200, derandomize=True, database=None, phases=[Phase.generate])
    @given(reserved_preemption_docs())
    def collect(doc: dict[str, Any]) -> None:
        reserved = set(doc["reservations"][0]["hosts"])
        for d in run(state_from_dict(doc, "<reserved>")).pending:
            if d.preemption is not None:
                on = {doc["hosts"][c.host]["name"] for c in d.preemption.promise.claims}
                seen["promised on a reserved host"] += bool(on & reserved)
                seen["promised elsewhere"] += not on & reserved
            elif "a preemption would give it" in d.info.message:
                seen["kept off by the reservation"] += 1

    with mock.patch.object(session_module, "Planner", Recording):
        collect()
    for planner in made:
        seen.update(planner.reached)
    wanted = (
        "promised on a reserved host",
        "promised elsewhere",
        "kept off by the reservation",
        "preemption under a mask failed before",
        "could preempt known",
    )
    assert all(seen[k] for k in wanted), seen


# -- preemption beside a plan: it takes nothing a planned job holds, and plans after it
#    plan around its promise ---------------------------------------------------------------


def test_a_job_that_fits_only_on_reserved_hosts_preempts_elsewhere() -> None:
    """b (16 slots) is free but in maint from 2000; u1 (16 tasks, to 4600) fits it now
    but would overlap the window. Preempting r2 (scav, 8 slots) on a frees a whole: u1
    pends PREEMPTING r2, promised a:16 (it pended RESERVED, preempting nobody, and was
    predicted for the window's end)."""
    for policy in ("none", "conservative"):
        state = (
            ClusterBuilder()
            .queue("urgent", 80, preempts=["scav"])
            .queue("scav", 5)
            .host("a", 16)
            .host("b", 16)
            .reservation("maint", 2000, 9000, hosts=["b"])
            .running("r2", {"a": 8}, queue="scav", start_time=500)
            .job("u1", 16, queue="urgent", requested_time=3600)
            .at(1000)
            .backfill(policy)
            .build()
        )
        for result in _all_switches(state):
            d = decision(result, "u1")
            assert isinstance(d, Pending)
            assert d.preemption is not None, (policy, d.info)
            assert d.preemption.victims == ("r2",)
            assert {c.host for c in d.preemption.promise.claims} == {0}  # a


def _planned_first(**extra: Any) -> ClusterBuilder:
    """Host a (8 slots): r1 (lo) holds 6 until 10200; 'first' (hi, 6 tasks, 1000 s) may
    begin at 10500; 'second' (hi, 7 tasks, 3600 s) could start now only by preempting r1.
    Conservative, at 10000."""
    return (
        ClusterBuilder()
        .queue("hi", 50, preempts=["lo"])
        .queue("lo", 10)
        .host("a", 8)
        .running("r1", {"a": 6}, queue="lo", start_time=7000, requested_time=3200)
        .job("first", 6, queue="hi", requested_time=1000, **extra)
        .job("second", 7, queue="hi", requested_time=3600)
        .at(10_000)
        .backfill("conservative")
    )


def test_a_preemption_never_takes_what_an_earlier_plan_holds() -> None:
    """docs/backfill.md: under conservative a later job never delays an earlier one's
    planned start, preempting included. 'first' is planned at 10500 on a; 'second''s only
    promise (a:7 until 13600) would take it: second pends RESERVED naming first, nothing
    is preempted, and it is planned after first (it preempted r1, breaking first's
    plan)."""
    doc = _planned_first().to_dict()
    doc["jobs"][0]["begin_time"] = 10_500
    for result in _all_switches(state_from_dict(doc, "<plan>")):
        first, second = decision(result, "first"), decision(result, "second")
        assert isinstance(first, Pending)
        assert first.plan is not None
        assert first.plan.start == 10_500
        assert isinstance(second, Pending)
        assert second.preemption is None
        assert second.info.reason is PendReason.RESERVED
        assert "reserved for job first" in second.info.message
        assert second.plan is not None
        assert second.plan.start >= first.plan.end


def test_plans_made_after_a_preemption_plan_around_its_promise() -> None:
    """h (hi, 4 tasks, 5000 s) preempts r1 (lo, a:4, estimated to end at 1000) and is
    promised a:4 until 5010. L (hi, 4 tasks) is planned when the promise ends, 5010 (it
    was planned at r1's estimated end, 1000, inside the promise's run)."""
    state = (
        ClusterBuilder()
        .queue("hi", 50, preempts=["lo"])
        .queue("lo", 10)
        .host("a", 4)
        .running("r1", {"a": 4}, queue="lo", start_time=0, requested_time=1000)
        .job("h", 4, queue="hi", requested_time=5000)
        .job("L", 4, queue="hi", requested_time=100)
        .at(10)
        .backfill("conservative")
        .build()
    )
    for result in _all_switches(state):
        h, late = decision(result, "h"), decision(result, "L")
        assert isinstance(h, Pending)
        assert h.preemption is not None
        assert h.preemption.victims == ("r1",)
        assert isinstance(late, Pending)
        assert late.plan is not None
        assert late.plan.start == 5010


@st.composite
def planned_preemption_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A preemption document (above) at t=10 under conservative or easy, every running
    job and pending job with an estimate (5-200 s), some pending jobs of high at a begin
    time (so planned ahead of the preemptors that follow them)."""
    doc = draw(preemption_docs())
    doc["now"] = 10
    doc["backfill"] = draw(st.sampled_from(["conservative", "easy"]))
    for run_ in doc.get("running", []):
        run_["requested_time"] = draw(st.sampled_from([5, 20, 100, 200]))
    for job in doc["jobs"]:
        job["requested_time"] = draw(st.sampled_from([5, 20, 100, 200]))
        if draw(st.integers(0, 3)) == 0:
            job["begin_time"] = draw(st.sampled_from([15, 30, 60]))
    return doc


def _held(doc: dict[str, Any], result: SessionResult) -> dict[str, list[tuple[float, float, int]]]:
    """Per host name, the slots held over time, from the document and the decisions
    alone: running jobs to their estimated end (victims: to now), dispatches and
    promises from now for their estimate, plans from their start for their estimate."""
    now, hosts = doc["now"], [h["name"] for h in doc["hosts"]]
    estimate = {j["id"]: j["requested_time"] for j in doc["jobs"]}
    victims = {v for d in result.pending if d.preemption for v in d.preemption.victims}
    out: dict[str, list[tuple[float, float, int]]] = {h: [] for h in hosts}
    for r in doc.get("running", []):
        end = now if r["id"] in victims else max(r.get("start_time", 0) + r["requested_time"], now)
        for a in r["alloc"]:
            out[a["host"]].append((now, end, a["slots"]))
    for d in result.decisions:
        claims, start = None, now
        if isinstance(d, Dispatched):
            claims = d.allocation.claims
        elif d.preemption is not None:
            claims = d.preemption.promise.claims
        elif d.plan is not None:  # a begin-time job's plan is held as any other
            claims, start = d.plan.allocation.claims, d.plan.start
        for c in claims or ():
            out[hosts[c.host]].append((start, start + estimate[d.job], c.slots))
    return out


@given(planned_preemption_docs())
def test_preemptions_promises_and_plans_never_overbook_a_host(doc: dict[str, Any]) -> None:
    """Property: with preemption under a policy that plans, what running work (victims
    gone now), dispatches, promises and held plans take never exceeds a host's slots at
    any instant (exact: checked at every interval's start); and the shortcuts (the
    failures under a plan check kept for the session among them) change no decision."""
    state = state_from_dict(doc, "<planned>")
    result = run(state)
    off = run(state, cache=False, shortcuts=False, cursors=False, reuse_failures=False)
    assert [
        (d.job, d.info.reason if isinstance(d, Pending) else None) for d in result.decisions
    ] == [(d.job, d.info.reason if isinstance(d, Pending) else None) for d in off.decisions]
    slots = {h["name"]: h["slots"] for h in doc["hosts"]}
    for host, spans in _held(doc, result).items():
        for t, _, _ in spans:
            use = sum(k for s, e, k in spans if s <= t < e)
            assert use <= slots[host], (host, t, spans)


def test_a_job_naming_a_reservation_does_not_preempt_what_gives_it_nothing() -> None:
    """R holds h1, h2; A (8 tasks, naming R) is planned on both at 1900. B (high,
    naming R) fits the free h2 now but not beside A's plan. Preempting W (on h3, outside
    R) would give it nothing, and any promise on h2 would take A's plan: B preempts
    nobody and is planned after A (it preempted W, promised h2)."""
    state = (
        ClusterBuilder()
        .queue("mid", 50)
        .queue("high", 40, preempts=["low"])
        .queue("low", 10)
        .host("h1", 4)
        .host("h2", 4)
        .host("h3", 4)
        .reservation("R", 0, 100_000, hosts=["h1", "h2"])
        .running("V", {"h1": 4}, queue="low", start_time=900, requested_time=1000)
        .running("W", {"h3": 4}, queue="low", start_time=950, requested_time=50_000)
        .job("A", 8, queue="mid", requested_time=3600, reservation="R")
        .job("B", 4, queue="high", requested_time=20_000, reservation="R")
        .at(1000)
        .backfill("easy")
        .build()
    )
    for result in _all_switches(state):
        a, b = decision(result, "A"), decision(result, "B")
        assert isinstance(a, Pending)
        assert a.plan is not None
        assert a.plan.start == 1900
        assert isinstance(b, Pending)
        assert b.preemption is None, b.preemption
        assert b.plan is not None
        assert b.plan.start >= a.plan.end


def test_identical_jobs_a_mask_keeps_from_preempting_are_decided_alike() -> None:
    """Eight identical high jobs whose only victims run on reserved hosts: each pends
    RESERVED, none preempts, with the shortcuts (the first failure under the mask spares
    the others the search: 'preemption under a mask failed before') and without."""
    import xce.core.session as session_module
    from xce.alloc.planner import Planner

    b = reserved_victim_site(slots=4)
    for k in range(8):
        b.job(f"h{k}", 4, queue="high", requested_time=100)
    state = b.build()
    made: list[Planner] = []

    class Recording(Planner):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    with mock.patch.object(session_module, "Planner", Recording):
        fast = run(state)
    slow = run(state, cache=False, shortcuts=False, cursors=False, reuse_failures=False)
    for result in (fast, slow):
        assert all(d.preemption is None for d in result.pending)
        assert {d.info.reason for d in result.pending} == {PendReason.RESERVED}
    assert [d.info for d in fast.pending] == [d.info for d in slow.pending]
    assert sum(p.reached["preemption under a mask failed before"] for p in made) == 7
