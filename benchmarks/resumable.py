"""A whole-trace replay that survives interruptions: the simulation is saved (pickled)
between two of its steps every few minutes and resumed from there when run again.

The replay of LANL-CM5 whole under conservative backfill takes hours of CPU, more than
one sitting of a shared machine gives; this runs it in pieces. The figures it prints
count only the replay: CPU seconds summed over the pieces (the saving excluded), the
highest peak RSS of any piece (a resumed piece starts from the loaded simulation, about
the size it had when saved). Decisions are those of one uninterrupted run: the state
saved is the whole simulation, and a step is what ``Simulation.run`` repeats.

    python -m benchmarks.resumable --trace LANL-CM5-1994-4.1-cln.swf.gz \
        --hosts 1024 --backfill conservative --checkpoint /tmp/lanl.pickle --log /tmp/lanl.log

Run the same command again after an interruption: it resumes from the checkpoint (run it
as ``-m benchmarks.resumable``: the pickle names this module's helpers as ``__main__``'s).
``--stop-after-saves N`` stops on purpose (exit 3) after N saves. The last line of the
log is a JSON object with the figures (tests/test_bench_resumable.py: pieces end as one
run does).
"""

from __future__ import annotations

import argparse
import copyreg
import functools
import json
import os
import pickle
import resource
import sys
import time
import types
from pathlib import Path
from typing import Any, TextIO

from xce.cluster.state import HostAlloc, HostAllocs
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, Simulation, _few_collections, verify
from xce.sim.metrics import metrics
from xce.sim.swf import read_swf

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


# --- what pickle needs told about xce's objects ---------------------------------------
def _mapping(d: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(d)


def _items(items: tuple[HostAlloc, ...]) -> tuple[HostAlloc, ...]:
    return items


def _host_allocs(items: tuple[HostAlloc, ...], count: int, slots: int) -> HostAllocs:
    return HostAllocs(functools.partial(_items, items), count, slots)


def _cached(f: Any, maxsize: int | None) -> Any:
    return functools.lru_cache(maxsize=maxsize)(f)


copyreg.pickle(types.MappingProxyType, lambda m: (_mapping, (dict(m),)))
copyreg.pickle(HostAllocs, lambda h: (_host_allocs, (tuple(h), len(h), h.slots)))
copyreg.pickle(
    functools._lru_cache_wrapper,  # a per-object cache of a bound method
    lambda w: (_cached, (w.__wrapped__, w.cache_parameters()["maxsize"])),
)


def _save(path: Path, sim: Simulation, meta: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as out:
        pickle.dump((sim, meta), out, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def _say(log: TextIO, text: str) -> None:
    print(text, file=log, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", required=True, help="an SWF file (a bare name: ../shared)")
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--slots", type=int, default=1, help="slots per host")
    ap.add_argument("--picker", default="fcfs")
    ap.add_argument("--backfill", default="none")
    ap.add_argument("--first", type=int, default=None, help="only the first N jobs")
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--every", type=float, default=600.0, help="seconds between saves")
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument(
        "--stop-after-saves", type=int, default=None, help="stop (exit 3) after N saves"
    )
    args = ap.parse_args(argv)
    trace_path = Path(args.trace)
    if not trace_path.exists():
        trace_path = TRACES / args.trace
    trace = read_swf(trace_path)
    log = args.log.open("a")
    if args.checkpoint.exists():
        with args.checkpoint.open("rb") as f:
            sim, meta = pickle.load(f)
        meta["pieces"] += 1
        _say(log, f"resumed at simulated time {sim._now:.0f}, cpu so far {meta['cpu_s']:.0f} s")
    else:
        options = SimOptions(picker=args.picker, single_queue=True, backfill=args.backfill)
        jobs = trace.jobs if args.first is None else trace.jobs[: args.first]
        sim = Simulation(uniform_cluster(args.hosts, args.slots), jobs, options)
        meta = {
            "cpu_s": 0.0,
            "pieces": 1,
            "peak_rss_mb": 0.0,
            "args": vars(args) | {"checkpoint": str(args.checkpoint), "log": str(args.log)},
        }
        sim._begin_run()
    saves = 0
    with _few_collections():
        cpu0, saved = time.process_time(), time.perf_counter()
        while sim._heap:
            sim._step()
            if sim._step_count % 256 == 0 and time.perf_counter() - saved > args.every:
                cpu = meta["cpu_s"] + time.process_time() - cpu0
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                meta |= {"cpu_s": cpu, "peak_rss_mb": max(meta["peak_rss_mb"], rss)}
                _save(args.checkpoint, sim, meta)
                _say(log, f"cpu {cpu:.0f} s, simulated time {sim._now:.0f}, ended {sim._ended}")
                cpu0, saved = time.process_time(), time.perf_counter()
                saves += 1
                if args.stop_after_saves is not None and saves >= args.stop_after_saves:
                    return 3  # stopped on purpose: run again to resume
        result = sim._end_run()
        cpu = meta["cpu_s"] + time.process_time() - cpu0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    verify(result, sim.jobs)
    m = metrics(result, trace)
    out = {
        "trace": trace_path.name,
        "policy": f"{meta['args']['picker']}+{meta['args']['backfill']}",
        "jobs": m["ran"],
        "cpu_s": round(cpu, 1),
        "jobs_per_cpu_s": round(m["ran"] / cpu, 1),
        "pieces": meta["pieces"],
        "peak_rss_mb": round(max(meta["peak_rss_mb"], rss), 1),
        "mean_wait_s": m["mean_wait_s"],
        "backfilled": m["backfilled"],
        "prediction_error_s": m["prediction_error_s"],
    }
    _say(log, json.dumps(out))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
