"""issue 15: every exact shortcut off (``SimOptions(fast_paths=False)``) changes no
decision: a replay writes byte-identical ``jobs.csv`` and ``metrics.json`` with the fast
paths on and off, under every builtin policy, on clusters of one shape and of mixed
hosts (the bundled cluster: memory, selects, queues that preempt), over random
generated workloads. Whole traces run in the slow suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xce.cluster import ClusterState, load_state
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.generate import WorkloadModel, generate_workload
from xce.sim.metrics import metrics, write_jobs_csv, write_metrics
from xce.sim.model import SimJob
from xce.sim.workload import load_workload

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "data" / "traces"

# (picker, backfill, preemptor): every builtin picker and backfill policy, and preemption
BUSY = WorkloadModel(load=1.5)  # jobs wait: pickers order them, backfill plans them
CROWDED = WorkloadModel(load=10.0)  # on the bundled cluster: a third wait, some preempt

POLICIES = [
    ("fcfs", None, None),
    ("strict", None, None),
    ("fairshare", None, None),
    ("fcfs", "easy", None),
    ("strict", "conservative", None),
    ("fcfs", "conservative", "lowest_priority_first"),
]


def _outputs(
    state: ClusterState,
    jobs: list[SimJob],
    policy: tuple[str, str | None, str | None],
    fast: bool,
    out: Path,
    *,
    single_queue: bool = False,
) -> tuple[bytes, bytes]:
    picker, backfill, preemptor = policy
    options = SimOptions(
        picker=picker,
        backfill=backfill,
        preemptor=preemptor,
        single_queue=single_queue,
        fast_paths=fast,
    )
    sim = Simulation(state, jobs, options)
    result = sim.run()
    verify(result, sim.jobs)
    out.mkdir(parents=True, exist_ok=True)
    write_jobs_csv(result.records, out / "jobs.csv")
    write_metrics(metrics(result), out / "metrics.json")
    return (out / "jobs.csv").read_bytes(), (out / "metrics.json").read_bytes()


def _same_both_ways(
    state: ClusterState,
    jobs: list[SimJob],
    policy: tuple[str, str | None, str | None],
    tmp: Path,
    **kwargs: bool,
) -> None:
    on = _outputs(state, jobs, policy, True, tmp / "on", **kwargs)
    off = _outputs(state, jobs, policy, False, tmp / "off", **kwargs)
    assert on[0] == off[0], f"jobs.csv differs under {policy}"
    assert on[1] == off[1], f"metrics.json differs under {policy}"


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: "+".join(x for x in p if x))
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(24, 1), (6, 8), (3, 32)]))
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_one_shape_clusters_same_bytes_without_fast_paths(
    policy: tuple[str, str | None, str | None],
    seed: int,
    shape: tuple[int, int],
    tmp_path: Path,
) -> None:
    """Generated workloads on N x 1, N x 8 and N x 32 hosts (slot-only jobs, spans,
    compound requirements), busy enough that jobs wait and backfill plans."""
    state = uniform_cluster(*shape)
    jobs = generate_workload(80, seed=seed, cluster=state, model=BUSY)
    _same_both_ways(state, jobs, policy, tmp_path / str(seed))


PICKERS = [p for p in POLICIES if p[1] is None] + [("fcfs", None, "lowest_priority_first")]


@pytest.mark.parametrize("policy", PICKERS, ids=lambda p: "+".join(x for x in p if x))
@given(seed=st.integers(0, 2**31 - 1))
@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_the_bundled_cluster_same_bytes_without_fast_paths(
    policy: tuple[str, str | None, str | None], seed: int, tmp_path: Path
) -> None:
    """The bundled cluster: host types, memory, selects, queues with limits and
    preemption; the generator's jobs use them all. (Backfill on it: the slow suite; the
    planner's own shortcuts are checked on and off over random states in
    test_backfill.py.)"""
    state = load_state(ROOT / "examples" / "cluster.yaml")
    jobs = generate_workload(150, seed=seed, cluster=state, model=CROWDED)
    _same_both_ways(state, jobs, policy, tmp_path / str(seed))


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy", [p for p in POLICIES if p[1]], ids=lambda p: "+".join(x for x in p if x)
)
def test_the_bundled_cluster_under_backfill_same_bytes(
    policy: tuple[str, str | None, str | None], tmp_path: Path
) -> None:
    """As above, under backfill (a minute or two per policy: the planner over the
    bundled cluster's many hosts with every shortcut off)."""
    state = load_state(ROOT / "examples" / "cluster.yaml")
    jobs = generate_workload(150, seed=7, cluster=state, model=CROWDED)
    _same_both_ways(state, jobs, policy, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "limit"),
    [
        (("strict", None, None), None),
        (("fcfs", None, None), None),
        (("fairshare", None, None), None),
        (("fcfs", "easy", None), 10_000),
        (("fcfs", "conservative", None), 3_000),
    ],
    ids=["strict", "fcfs", "fairshare", "fcfs+easy", "fcfs+conservative"],
)
def test_kth_sp2_same_bytes_without_fast_paths(
    policy: tuple[str, str | None, str | None], limit: int | None, tmp_path: Path
) -> None:
    """KTH-SP2 (whole under the pickers alone, a prefix under backfill) on its 100 x 1
    machine: byte-identical outputs with every fast path off."""
    trace_path = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not trace_path.is_file():
        pytest.skip(f"{trace_path} is not here")
    jobs, _ = load_workload(str(trace_path), limit=limit)
    _same_both_ways(uniform_cluster(100, 1), jobs, policy, tmp_path, single_queue=True)
