"""Start-time prediction on archive traces (issue 27, docs/prediction.md).

A trace is replayed under conservative backfill (the scheduler: requested times). At
every K-th submission that has to wait, the replay is paused and asked "when will this
job start?" in two ways:

- the scheduler's own answer: the job's planned start in that session (conservative
  plans every job: what ``squeue --start`` gives);
- ``xce predict``'s: the replay's state at that instant replayed forward
  (:func:`xce.predict.forward.forward_replay`, the same policy) with jobs ending at the
  runtimes a predictor gives, learned from the jobs that had ended by then only.

Each answer is compared with the job's actual start in the finished replay.

    python -m benchmarks.predict_traces --trace KTH-SP2-1996-2.1-cln.swf.gz --jobs 5000
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from xce.cluster import state_from_dict
from xce.core import state_to_dict
from xce.predict import Asked, FinishedJob, default_predictors, learn
from xce.predict.forward import Policy, forward_replay
from xce.sim.clusters import header_cluster, uniform_cluster
from xce.sim.engine import SimOptions, Simulation
from xce.sim.swf import read_swf

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces"
PREDICTORS = ("limit", "fraction", "history", "history:0.5")
NAMED = ("scheduler", "oracle")


def study(
    trace: str, jobs: int, every: int, backfill: str = "conservative", enforce: bool = False
) -> list[dict[str, Any]]:
    tr = read_swf(TRACES / trace, limit=jobs)
    hosts, slots = header_cluster(tr)
    cluster = uniform_cluster(hosts, slots, None)
    options = SimOptions(backfill=backfill, plain_replay=False, enforce_walltime=enforce)
    sim = Simulation(cluster, tr.jobs, options)
    by_id = {j.id: j for j in tr.jobs}
    order = {j.id: i for i, j in enumerate(tr.jobs)}
    asked: dict[str, tuple[float, Any, float | None]] = {}  # job -> (t, state, planned)
    sim._begin_run()
    while sim._heap:
        sim._step()
        now = sim._now
        for job_id, (planned, ahead) in list(sim._planned.items()):
            if job_id in asked or not ahead or order[job_id] % every:
                continue
            if by_id[job_id].submit != now or sim.core.pending(job_id) is None:
                continue
            # a copy: the core's state view shares arrays the replay goes on changing
            frozen = state_from_dict(state_to_dict(replace(sim.core.state, now=now)), trace)
            asked[job_id] = (now, frozen, planned)
    result = sim._end_run()
    records = {r.job.id: r for r in result.records}
    ended = sorted(
        (
            FinishedJob(r.job.id, r.job.user, r.start, r.end, r.job.requested_time)
            for r in result.records
            if r.start is not None and r.end is not None
        ),
        key=lambda f: f.end,
    )
    ends = np.array([f.end for f in ended])
    errors: dict[str, list[float]] = {"scheduler": []}
    errors.update({p: [] for p in PREDICTORS})
    errors["oracle"] = []
    runtimes = {f.id: f.end - f.start for f in ended}

    def oracle(asked: Asked) -> float:
        """The job's runtime in the finished replay: the ceiling of any predictor
        (what remains of the error is the arrivals a forward replay cannot know)."""
        base = asked.id.split("[", 1)[0]
        known = runtimes.get(asked.id, runtimes.get(base, asked.limit))
        return max(asked.elapsed, min(known, asked.limit))

    started = time.perf_counter()
    policy = Policy(backfill=backfill)
    for job_id, (now, state, planned) in asked.items():
        actual = records[job_id].start
        if actual is None or planned is None:
            continue
        errors["scheduler"].append(abs(planned - actual))
        known = ended[: int(np.searchsorted(ends, now, side="right"))]
        for spec in PREDICTORS:
            predictor = learn(default_predictors().make(spec), known)
            run = forward_replay(state, predictor.predict, policy=policy, until=frozenset({job_id}))
            got = run.starts.get(job_id)
            errors[spec].append(abs(got - actual) if got is not None else math.inf)
        run = forward_replay(state, oracle, policy=policy, until=frozenset({job_id}))
        got = run.starts.get(job_id)
        errors["oracle"].append(abs(got - actual) if got is not None else math.inf)
    seconds = time.perf_counter() - started
    rows = []
    for name, values in errors.items():
        e = np.array(values, dtype=float)
        rows.append(
            {
                "trace": trace,
                "jobs": jobs,
                "enforce_walltime": enforce,
                "asked": len(e),
                "answer": name if name in NAMED else f"xce predict --predictor {name}",
                "mean_s": float(e.mean()),
                "median_s": float(np.median(e)),
                "p90_s": float(np.quantile(e, 0.9)),
                "replay_seconds_per_question": seconds / max(len(e), 1) / len(PREDICTORS),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--backfill", default="conservative")
    ap.add_argument(
        "--enforce-walltime",
        action="store_true",
        help="kill jobs at their requested time (LANL-CM5's log has 41%% of jobs past it)",
    )
    a = ap.parse_args()
    for row in study(a.trace, a.jobs, a.every, a.backfill, a.enforce_walltime):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
