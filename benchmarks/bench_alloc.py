"""Allocation throughput: one session over a generated cluster and queue (issue 3)."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.common import Result, best_of
from xce.alloc import AllocOptions
from xce.cluster import ClusterState, state_from_dict
from xce.core import Session

TYPES = ("X86_64", "ARM", "POWER")
TAGS = ("fast", "ssd", "ib")


def cluster(n_hosts: int, seed: int = 11) -> dict[str, Any]:
    """Hosts of 16-128 slots, 2-8 GB per slot, three types, a few tags; one licence."""
    rng = random.Random(seed)
    hosts = []
    for i in range(n_hosts):
        slots = rng.choice((16, 32, 48, 64, 128))
        attrs: dict[str, Any] = {"type": rng.choices(TYPES, (6, 3, 1))[0]}
        attrs.update({t: True for t in TAGS if rng.random() < 0.3})
        hosts.append(
            {
                "name": f"n{i:05d}",
                "slots": slots,
                "resources": {"mem": slots * rng.choice((2000, 4000, 8000))},
                "attributes": attrs,
            }
        )
    return {"hosts": hosts, "shared": {"lic": {"total": 200}}}


def _sequential(rng: random.Random) -> tuple[str, int]:
    return rng.choice(
        (
            "",
            "rusage[mem=1000]",
            "select[type==X86_64] rusage[mem=2000]",
            "select[type==ARM && mem>4000] rusage[mem=4000]",
            "select[fast] rusage[mem=500]",
            "select[ssd && type==X86_64]",
            "select[mem>64000] rusage[mem=32000]",
            "rusage[mem=1000:lic=1]",
            "select[type==POWER] order[-slots]",
        )
    ), 1


def _parallel(rng: random.Random) -> tuple[str, int]:
    tasks = rng.choice((2, 4, 8, 16, 32, 64, 128, 256))
    return rng.choice(
        (
            "rusage[mem=1000]",
            "select[type==X86_64] rusage[mem=2000]",
            "select[ib] rusage[mem=1000]",
            "span[ptile=16] rusage[mem=1000]",
            "span[hosts=1] rusage[mem=500]",
            "select[type==X86_64 && fast]",
            "same[type] rusage[mem=1000]",
        )
    ), tasks


def _composite(rng: random.Random) -> tuple[str, int | None]:
    return rng.choice(
        (
            ("2*{select[type==X86_64] rusage[mem=2000]} + 6*{select[mem>8000]}", None),
            ("1*{select[fast] rusage[mem=8000]} + 15*{rusage[mem=1000]}", None),
            ("{select[type==ARM] rusage[mem=2000]} || {select[type==X86_64] rusage[mem=4000]}", 8),
            ("{4*{select[ssd]} + 4*{-}} || {8*{select[type==POWER]}}", None),
        )
    )


def jobs(n_jobs: int, seed: int = 5) -> list[dict[str, Any]]:
    """70 % sequential, 25 % parallel of 2-256 tasks, 5 % compound or alternative."""
    rng = random.Random(seed)
    out = []
    for i in range(n_jobs):
        r = rng.random()
        shape = _sequential if r < 0.70 else _parallel if r < 0.95 else _composite
        resreq, tasks = shape(rng)
        job: dict[str, Any] = {
            "id": i,
            "user": f"u{rng.randrange(40)}",
            "queue": rng.choice(("normal", "normal", "normal", "high", "low")),
            "project": f"p{rng.randrange(5)}",
            "resreq": resreq,
            "submit_time": i,
        }
        if tasks is not None:
            job["tasks"] = tasks
        out.append(job)
    return out


def state(n_hosts: int, n_jobs: int) -> ClusterState:
    data = cluster(n_hosts)
    data["queues"] = {"high": {"priority": 50}, "normal": {"priority": 30}, "low": {"priority": 10}}
    data["jobs"] = jobs(n_jobs)
    return state_from_dict(data, f"<bench {n_hosts} hosts>")


def bench_session(n_hosts: int, n_jobs: int = 20_000, target: float | None = None) -> Result:
    st = state(n_hosts, n_jobs)
    session = Session(st)
    result = session.run()  # warm: parse and prepare the requirement strings once
    seconds = best_of(3, session.run)  # each run is a whole session from the same state
    s = result.stats
    name = f"session, {n_hosts:,} hosts x {n_jobs:,} jobs ({s.dispatched:,} dispatched)"
    return Result(name, n_jobs / seconds, "jobs/s", target)


def bench_cache(n_jobs: int = 10_000, n_hosts: int = 5_000) -> list[Result]:
    """Identical jobs no host can take (256 tasks on one host; hosts have <= 128 slots)."""
    data = cluster(n_hosts)
    job = {"tasks": 256, "resreq": "select[type==POWER] span[hosts=1]"}
    data["jobs"] = [{"id": i, **job} for i in range(n_jobs)]
    st = state_from_dict(data, "<bench cache>")
    out = []
    for shortcuts in (True, False):
        rates = []
        for cache in (True, False):
            # failure reuse off: it would answer these identical jobs with the cache off
            # too (same books), and this figure is about the cache (spec Req 7)
            options = AllocOptions(cache=cache, shortcuts=shortcuts, reuse_failures=False)
            session = Session(st, options=options)
            session.run()
            # best of 3: one session with the cache on lasts ~60 ms, and a single garbage
            # collection pause of the benchmark process can triple it
            rates.append(n_jobs / best_of(3, session.run))
        on, off = rates
        how = "shortcuts on" if shortcuts else "shortcuts off"
        out += [
            Result(f"{n_jobs:,} identical unsatisfiable jobs, cache on, {how}", on, "jobs/s"),
            Result(f"{n_jobs:,} identical unsatisfiable jobs, cache off, {how}", off, "jobs/s"),
            Result(f"unsatisfiable cache speed-up (on / off), {how}", on / off, "x"),
        ]
    return out


def preempt_state(n_hosts: int = 5_000, per_host: int = 10, tasks: int = 64) -> ClusterState:
    """A full cluster: ``n_hosts`` hosts of ``per_host`` slots, each slot held by a
    one-task job of queue ``low`` (50,000 running jobs by default, started one second
    apart); one pending job of ``tasks`` tasks in ``high``, which preempts ``low``."""
    hosts = [{"name": f"n{i:05d}", "slots": per_host} for i in range(n_hosts)]
    running = [
        {
            "id": f"r{i}_{k}",
            "queue": "low",
            "start_time": float(i * per_host + k),
            "alloc": [{"host": f"n{i:05d}", "slots": 1}],
        }
        for i in range(n_hosts)
        for k in range(per_host)
    ]
    data = {
        "hosts": hosts,
        "queues": {"high": {"priority": 50, "preempts": ["low"]}, "low": {"priority": 10}},
        "running": running,
        "jobs": [{"id": "h", "tasks": tasks, "queue": "high"}],
    }
    return state_from_dict(data, "<bench preempt>")


def bench_preempt() -> list[Result]:
    """Issue 11: the time to decide preemption for a 64-task high-priority job on 5,000
    hosts holding 50,000 running low-priority jobs (a whole session of that one job,
    best of 3), and the 5,000-host session with one preempting queue added."""
    st = preempt_state()
    session = Session(st)
    result = session.run()
    seconds = best_of(3, session.run)
    (pending,) = result.pending
    assert pending.preemption is not None, pending
    victims = len(pending.preemption.victims)
    out = [
        Result(
            f"preempt: 64-task job, 5,000 hosts, 50,000 running ({victims} victims)",
            seconds * 1000,
            "ms",
        )
    ]
    data = cluster(5_000)
    data["queues"] = {
        "high": {"priority": 50, "preempts": ["low"]},
        "normal": {"priority": 30},
        "low": {"priority": 10},
    }
    data["jobs"] = jobs(20_000)
    st = state_from_dict(data, "<bench 5000 hosts, preempting queue>")
    session = Session(st)
    session.run()
    rate = 20_000 / best_of(3, session.run)
    out.append(Result("session, 5,000 hosts x 20,000 jobs, high preempts low", rate, "jobs/s"))
    return out


def fewest_state(n_hosts: int = 5_000, pair: bool = True) -> ClusterState:
    """Issue 26: a 7-task ``span[ptile=4]`` job of ``high`` on ``n_hosts`` hosts of 4
    slots, all full. ``pair``: the greedy orders take three victims of ``low`` where two
    suffice (tests/test_preemption.py's case, on four of the hosts; the rest held by
    ``other``, which is not preempted). Else the worst case of the bounded search: 40
    one-slot ``low`` jobs fill ten hosts, ``other`` holds 3 of the 4 slots of every other
    host: seven victims are needed, but the free slots let every pair past the cheap
    bound, so the search spends its whole probe budget on pairs and gives up."""
    hosts = [{"name": f"n{i:05d}", "slots": 4} for i in range(n_hosts)]
    running: list[dict[str, object]] = []
    if pair:
        low = [
            ("Z", {"n00000": 2, "n00001": 2}, 9.0),
            ("P", {"n00000": 2}, 8.0),
            ("Q", {"n00001": 2}, 7.0),
            ("R", {"n00002": 4}, 2.0),
            ("S", {"n00003": 2}, 1.0),
        ]
        hosts[3]["slots"] = 3
        first = 4
    else:
        low = [(f"v{i}", {f"n{i // 4:05d}": 1}, float(i)) for i in range(40)]
        first = 10
    for name, on, start in low:
        alloc = [{"host": h, "slots": k} for h, k in on.items()]
        running.append({"id": name, "queue": "low", "start_time": start, "alloc": alloc})
    for i in range(first, n_hosts):
        held = 4 if pair else 3
        running.append(
            {"id": f"o{i}", "queue": "other", "alloc": [{"host": f"n{i:05d}", "slots": held}]}
        )
    data = {
        "hosts": hosts,
        "queues": {
            "high": {"priority": 50, "preempts": ["low"]},
            "low": {"priority": 10},
            "other": {"priority": 5},
        },
        "running": running,
        "jobs": [{"id": "h", "tasks": 7, "queue": "high", "resreq": "span[ptile=4]"}],
    }
    return state_from_dict(data, "<bench fewest>")


def bench_fewest() -> list[Result]:
    """Issue 26: the cost of the bounded search for the fewest victims, on 5,000 hosts:
    where it finds a pair the greedy orders miss, and in its worst case (no smaller set,
    the probe budget spent); each against the greedy alone (the search switched off),
    a whole session of the one job, best of 3."""
    from xce.preempt import LowestPriorityFirst

    out = []
    for pair, what in ((True, "finds 2 where greedy takes 3"), (False, "worst case, none fewer")):
        st = fewest_state(pair=pair)
        session = Session(st)
        (pending,) = session.run().pending
        assert pending.preemption is not None, pending
        victims = len(pending.preemption.victims)
        seconds = best_of(3, session.run)
        session = Session(st, preemptor=LowestPriorityFirst(fewest=False))
        (alone,) = session.run().pending
        greedy = best_of(3, session.run)
        assert alone.preemption is not None
        before = len(alone.preemption.victims)
        out += [
            Result(
                f"preempt fewest, {what}: 7-task ptile=4 job, 5,000 hosts "
                f"({victims} victims; greedy alone {before})",
                seconds * 1000,
                "ms",
            ),
            Result(f"  the same, greedy alone ({what})", greedy * 1000, "ms"),
        ]
    return out


def run() -> list[Result]:
    results = [bench_session(5_000, target=20_000)]
    results += [bench_session(n) for n in (1_000, 20_000, 50_000)]
    return results + bench_cache() + bench_preempt() + bench_fewest()
