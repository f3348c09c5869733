"""Regression tests for the exactness repros (issue 9): every file of
``tests/data/repros/engine/`` (copied from ``../shared/repros/exactness/engine/``, whose
README says what each one showed) with the expectation that README gives.

Each state is decided with the unsatisfiable cache, the exact shortcuts and the host-scan
cursors each on and off, single-threaded and threaded (16 runs, as
``../shared/repros/exactness/run_nocache.py`` does for the first two switches): the runs
must agree (:func:`decide_on_every_switch`), and then the file's own expectation must
hold on them.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from xce.alloc import AllocOptions, Decision, Dispatched, Pending, PendReason
from xce.cli.main import app
from xce.cluster import ClusterState, load_state, state_from_dict
from xce.core import Session, SessionResult
from xce.errors import InputError

REPROS = Path(__file__).resolve().parent / "data" / "repros" / "engine"
SWITCHES = ("cache", "shortcuts", "cursors", "threads")
COMBINATIONS = tuple(
    dict(zip(SWITCHES, values, strict=True))
    for values in itertools.product((True, False), repeat=len(SWITCHES))
)
FINE = 1e-11  # a resolution fine enough for every amount of eps_bounds / eps_truthy
HUGE_TIMEOUT_S = 120.0  # a guard against a hang, not a timing assertion


# -- helpers ---------------------------------------------------------------------------


def _outcome(d: Decision, state: ClusterState) -> tuple[Any, ...]:
    """What must not depend on any switch: dispatched where (claims by host name,
    slots, amounts, term; shared amounts; the winning alternative), or pending."""
    if isinstance(d, Dispatched):
        a = d.allocation
        claims = tuple(
            (state.hosts.names[c.host], c.slots, tuple(sorted(c.amounts)), c.term) for c in a.claims
        )
        return ("dispatched", d.job, claims, tuple(sorted(a.shared)), a.alternative)
    return ("pending", d.job)


def _why(d: Decision) -> tuple[Any, ...]:
    """A pend's reason, message and per-host breakdown (() for a dispatched job)."""
    if isinstance(d, Pending):
        return (d.info.reason.value, d.info.message, tuple(sorted(d.info.hosts.items())))
    return ()


def _cached(d: Decision) -> bool:
    return isinstance(d, Pending) and d.cached


def _table(runs: dict[tuple[bool, ...], SessionResult], state: ClusterState) -> str:
    lines = []
    for key, r in runs.items():
        switches = " ".join(
            f"{n}={'on' if v else 'off'}" for n, v in zip(SWITCHES, key, strict=True)
        )
        shown = [
            (*_outcome(d, state), *_why(d)[:1], *(("cached",) if _cached(d) else ()))
            for d in r.decisions
        ]
        lines.append(f"  {switches}: {shown}")
    return "decisions differ between switches:\n" + "\n".join(lines)


def decide_on_every_switch(state: ClusterState) -> SessionResult:
    """Run a session under every combination of the switches; assert that every run
    dispatches the same jobs on the same hosts with the same amounts and pends the same
    jobs; that the cache-off runs agree on every pend's reason, message and breakdown,
    and the cache-on runs too (``cached`` flag included); and that a cache-on pend not
    answered by the cache is the cache-off pend (a hit keeps its original reason).
    Returns the run with every switch on, single-threaded (what ``xce schedule`` does)."""
    runs: dict[tuple[bool, ...], SessionResult] = {}
    for c in COMBINATIONS:
        options = AllocOptions(cache=c["cache"], shortcuts=c["shortcuts"], cursors=c["cursors"])
        runs[tuple(c.values())] = Session(state, options=options).run(threads=c["threads"])
    message = _table(runs, state)
    off = runs[(False, False, False, False)].decisions
    on = runs[(True, False, False, False)].decisions
    for (cache, *_), r in runs.items():
        got = r.decisions
        assert [_outcome(d, state) for d in got] == [_outcome(d, state) for d in off], message
        if not cache:
            assert [_why(d) for d in got] == [_why(d) for d in off], message
            assert not any(_cached(d) for d in got), message
            continue
        assert [(_why(d), _cached(d)) for d in got] == [(_why(d), _cached(d)) for d in on], message
        for a, b in zip(got, off, strict=True):
            if not _cached(a):
                assert _why(a) == _why(b), message
    return runs[(True, True, True, False)]


def _state(name: str) -> ClusterState:
    return load_state(REPROS / name)


def _decision(result: SessionResult, job: str) -> Decision:
    return next(d for d in result.decisions if d.job == job)


def _placed(result: SessionResult, job: str, state: ClusterState) -> list[tuple[str, int]]:
    d = _decision(result, job)
    assert isinstance(d, Dispatched), d
    return [(state.hosts.names[c.host], c.slots) for c in d.allocation.claims]


def _pending(result: SessionResult, job: str) -> Pending:
    d = _decision(result, job)
    assert isinstance(d, Pending), d
    return d


def _schedule_cli(path: Path) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, ["schedule", str(path), "--json"])


# -- float drift and tolerance ----------------------------------------------------------


def test_e2_float_drift_in_select() -> None:
    """issue 9: E2_float_drift_in_select.json — 4000 − 2000 − 3×333.3 − 0.1 is exactly
    1000, so ``select[mem>=1000]`` holds and j4 is dispatched (on every switch)."""
    state = _state("E2_float_drift_in_select.json")
    result = decide_on_every_switch(state)
    for job in ("j1", "j2", "j3", "j4"):
        assert _placed(result, job, state)[0][0] == "h"


def test_e_float_tolerance() -> None:
    """issue 9: E_float_tolerance.json — 3 tasks of 0.1 mem fit a host with 0.3: j is
    dispatched on a:3 (on every switch)."""
    state = _state("E_float_tolerance.json")
    result = decide_on_every_switch(state)
    assert _placed(result, "j", state) == [("a", 3)]


def _with_resolution(name: str, resolution: float) -> tuple[dict[str, Any], ClusterState]:
    """The repro's document with ``mem`` declared at ``resolution``, and its state."""
    doc = yaml.safe_load((REPROS / name).read_text())
    doc.setdefault("resources", {})["mem"] = {"kind": "consumable", "resolution": resolution}
    return doc, state_from_dict(doc, f"{name} (mem resolution {resolution:g})")


def _loads_or_refuses_finer_than_resolution(name: str) -> ClusterState | None:
    """The repro as written: either it loads (returned), or loading refuses an amount
    finer than mem's resolution with a located input error (None)."""
    try:
        return _state(name)
    except InputError as err:
        refused = err
    text = str(refused)
    assert name in text, text  # the file ...
    assert refused.path or refused.line is not None, text  # ... and where in it
    assert "mem" in text, text
    assert "resolution" in text, text
    return None


def test_eps_bounds() -> None:
    """issue 9: eps_bounds.yaml — the shortcuts' capacity bound and the exact try must
    agree: identical decisions with shortcuts (and cache, cursors, threads) on and off;
    or the file is refused at load (mem 0.99999999925 is finer than the default
    resolution). Declared at resolution 1e-11 it loads, decides identically on every
    switch, and exactly: h1 (0.99999999925 mem) takes one 0.5 task, h2 and h3 one
    each, so the 4-task job pends."""
    state = _loads_or_refuses_finer_than_resolution("eps_bounds.yaml")
    if state is not None:
        decide_on_every_switch(state)
    _, fine = _with_resolution("eps_bounds.yaml", FINE)
    result = decide_on_every_switch(fine)
    _pending(result, "j1")


def test_eps_truthy() -> None:
    """issue 9: eps_truthy.yaml — availability never goes below 0, so ``select[mem]``
    cannot turn true within a session: identical decisions with cache, shortcuts,
    cursors and threads on and off; or the file is refused at load (5e-10 mem is finer
    than the default resolution). Declared at resolution 1e-11 it loads, decides
    identically on every switch, and exactly: h1 has 0 mem, so nothing fits and
    ``select[mem]`` stays false (every job pends)."""
    state = _loads_or_refuses_finer_than_resolution("eps_truthy.yaml")
    if state is not None:
        decide_on_every_switch(state)
    _, fine = _with_resolution("eps_truthy.yaml", FINE)
    result = decide_on_every_switch(fine)
    for job in ("b1", "a", "b2"):
        _pending(result, job)


# -- the unsatisfiable cache and order[] / per-job resources ----------------------------


def test_cache_order() -> None:
    """issue 9: cache_order.yaml — a per-job resource makes the fill plan depend on host
    order, and ``order[mem]`` is dynamic: j2 must decide the same with the cache on and
    off (and every other switch)."""
    decide_on_every_switch(_state("cache_order.yaml"))


def test_cache_order_static() -> None:
    """issue 9: cache_order_static.yaml — same fingerprint, another ``order[]``: j2 must
    decide the same with the cache on and off (and every other switch)."""
    decide_on_every_switch(_state("cache_order_static.yaml"))


def test_triage_state() -> None:
    """issue 9: triage_state.yaml — the state in which the simulator called j1 never
    runnable: identical on every switch, and j1 runs (by ``order[mem]`` hB comes first
    and takes the per-job scratch, hA the other 2 tasks)."""
    state = _state("triage_state.yaml")
    result = decide_on_every_switch(state)
    assert sorted(_placed(result, "j1", state)) == [("hA", 2), ("hB", 1)]


def test_triage_state3() -> None:
    """issue 9: triage_state3.yaml — ``select[mem<500]`` holds once running work took
    800 of 1000 mem: identical on every switch, and the job runs on h1."""
    state = _state("triage_state3.yaml")
    result = decide_on_every_switch(state)
    assert _placed(result, "small", state) == [("h1", 1)]


# -- same[] group order -----------------------------------------------------------------


def test_a1_same_groups_follow_order() -> None:
    """issue 9: A1_same_groups_ignore_order.json — ``order[-slots] same[type]`` with one
    task: the groups are tried in the job's host order (``order[-slots]``: fewest free
    slots first, h1 before h0), so the job lands on h1, the first matching host."""
    state = _state("A1_same_groups_ignore_order.json")
    result = decide_on_every_switch(state)
    assert _placed(result, "j", state) == [("h1", 1)]


def test_a2_same_groups_ordered_by_first_eligible_host() -> None:
    """issue 9: A2_same_groups_ordered_by_ineligible_host.json — the closed host a does
    not put group X first: the 1-task ``same[type]`` job lands on b, the first matching
    host in host order."""
    state = _state("A2_same_groups_ordered_by_ineligible_host.json")
    result = decide_on_every_switch(state)
    assert _placed(result, "j", state) == [("b", 1)]


# -- pend reasons -----------------------------------------------------------------------


def test_f_limit_before_shared() -> None:
    """issue 9: F_limit_before_shared.json — the shared total (0) is below the request
    and the limit allows 0 slots: the job can never run here, so it pends
    NEVER_RUNNABLE; by the documented precedence (SHARED_RESOURCE before LIMIT) the
    cause is the licence, which the message names."""
    result = decide_on_every_switch(_state("F_limit_before_shared.json"))
    p = _pending(result, "j")
    assert p.info.reason is PendReason.NEVER_RUNNABLE, p
    assert p.info.cause is PendReason.SHARED_RESOURCE, p
    assert "lic" in p.info.message, p


def _failing_constraint(p: Pending) -> PendReason | None:
    """What a pend names as failing: its reason, or for NEVER_RUNNABLE (which ranks
    first, docs/allocation.md) the reason it fails even on the empty cluster."""
    if p.info.reason is PendReason.NEVER_RUNNABLE:
        return p.info.cause
    return p.info.reason


def test_h1_span_fails() -> None:
    """issue 9: H1_span_fails_xce_says_SAME.json — ``span[ptile=1] same[model]`` with 2
    tasks on one 2-slot host: the span is what fails, so the reason is SPAN (as the
    cause of NEVER_RUNNABLE: the cluster can never run it)."""
    result = decide_on_every_switch(_state("H1_span_fails_xce_says_SAME.json"))
    p = _pending(result, "j")
    assert _failing_constraint(p) is PendReason.SPAN, p


def test_h2_same_fails() -> None:
    """issue 9: H2_same_fails_ref_says_SPAN.json — ``span[hosts=1] same[type:model]``:
    no host has both type and model, so the reason is SAME (as the cause of
    NEVER_RUNNABLE: the cluster can never run it)."""
    result = decide_on_every_switch(_state("H2_same_fails_ref_says_SPAN.json"))
    p = _pending(result, "j")
    assert _failing_constraint(p) is PendReason.SAME, p


def test_j_hosts_breakdown() -> None:
    """issue 9: J_hosts_breakdown.json — ``span[hosts=1]`` with 2 tasks on a 1-slot host:
    NEVER_RUNNABLE, and the breakdown says why the host fails the job's real bucket
    (2 slots): ``{"NOT_ENOUGH_SLOTS": 1}``."""
    result = decide_on_every_switch(_state("J_hosts_breakdown.json"))
    p = _pending(result, "j")
    assert p.info.reason is PendReason.NEVER_RUNNABLE, p
    assert p.info.cause is PendReason.NOT_ENOUGH_SLOTS, p
    assert dict(p.info.hosts) == {"NOT_ENOUGH_SLOTS": 1}, p


# -- rusage[slots=...] is a submission error --------------------------------------------


@pytest.mark.parametrize("name", ["slots_rusage.yaml", "slots_rusage_seq.yaml"])
def test_slots_rusage_is_refused(name: str) -> None:
    """issue 9: slots_rusage.yaml, slots_rusage_seq.yaml — ``rusage[slots=...]`` has one
    meaning on no path, so loading refuses it with a located input error, and
    ``xce schedule`` exits 2 naming the file, printing nothing on stdout."""
    with pytest.raises(InputError) as caught:
        _state(name)
    err = caught.value
    assert name in str(err)
    assert err.path is not None
    assert "jobs[0]" in err.path
    assert "slots" in str(err)
    result = _schedule_cli(REPROS / name)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert name in result.stderr
    assert "slots" in result.stderr


# -- a job of 10^10 tasks ---------------------------------------------------------------

_ONE_GIB = 1 << 30

_HUGE_SWITCHES = """
import itertools, json, sys
from xce.alloc import AllocOptions, Dispatched
from xce.cluster import load_state
from xce.core import Session
state = load_state(sys.argv[1])
out = []
for cache, shortcuts, cursors, threads in itertools.product((True, False), repeat=4):
    options = AllocOptions(cache=cache, shortcuts=shortcuts, cursors=cursors)
    result = Session(state, options=options).run(threads=threads)
    out.append([
        [d.job, True, None] if isinstance(d, Dispatched) else [d.job, False, d.info.reason.value]
        for d in result.decisions
    ])
print(json.dumps(out))
"""

_CLI = "import sys; from xce.cli.main import main; sys.argv = ['xce', *sys.argv[1:]]; main()"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_ONE_GIB, _ONE_GIB))


def _run_limited(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", *args],
        capture_output=True,
        text=True,
        timeout=HUGE_TIMEOUT_S,
        check=False,
        preexec_fn=_limit_memory,
        env=env,
    )


def test_huge_tasks_pends_in_constant_memory() -> None:
    """issue 9: huge_tasks.json — a job of 10^10 tasks on a 16-slot host: under a 1 GiB
    address-space limit (RLIMIT_AS) and a timeout, ``xce schedule --json`` exits 0 with
    job ok dispatched and job j pending; so does every switch combination."""
    path = REPROS / "huge_tasks.json"
    run = _run_limited(_CLI, "schedule", str(path), "--json")
    assert run.returncode == 0, run.stderr[-2000:]
    info = json.loads(run.stdout)
    assert [d["job"] for d in info["dispatched"]] == ["ok"]
    assert [p["job"] for p in info["pending"]] == ["j"]
    run = _run_limited(_HUGE_SWITCHES, str(path))
    assert run.returncode == 0, run.stderr[-2000:]
    runs = json.loads(run.stdout)
    assert len(runs) == 16
    for decisions in runs:
        assert [(job, dispatched) for job, dispatched, _ in decisions] == [
            ("ok", True),
            ("j", False),
        ]
    assert len({decisions[1][2] for decisions in runs}) == 1, runs  # one reason for j
