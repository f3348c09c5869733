"""Run every benchmark and print its figures against their targets (`make bench`)."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import (
    bench_alloc,
    bench_backfill,
    bench_core,
    bench_crowded,
    bench_interval,
    bench_predict,
    bench_reservations,
    bench_resreq,
    bench_shapes,
    bench_sim,
    bench_sweep,
)
from benchmarks.common import Result

SUITES = {
    "resreq": bench_resreq.run,
    "alloc": bench_alloc.run,
    "core": bench_core.run,
    "sim": bench_sim.run,
    "backfill": bench_backfill.run,
    "sweep": bench_sweep.run,
    "shapes": bench_shapes.run,
    "predict": bench_predict.run,
    "crowded": bench_crowded.run,
    "interval": bench_interval.run,
    "reservations": bench_reservations.run,
}


def main(argv: list[str]) -> int:
    chosen = argv or list(SUITES)
    unknown = [name for name in chosen if name not in SUITES]
    if unknown:
        print(f"unknown benchmark suite(s): {', '.join(unknown)}; have {', '.join(SUITES)}")
        return 2
    print(f"python {platform.python_version()} on {platform.machine()}, one core")
    results: list[Result] = []
    for name in chosen:
        for r in SUITES[name]():
            results.append(r)
            target = f"(target >= {r.target:,.0f})" if r.target is not None else ""
            if r.at_most is not None:
                target = f"(budget <= {r.at_most:g})"
            value = f"{r.value:,.1f}" if r.value < 100 else f"{r.value:,.0f}"
            print(f"  {r.name:<62} {value:>12} {r.unit:<10} {target} {r.verdict}", flush=True)
    out = Path(".benchmarks")
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(
        json.dumps(
            [
                {
                    "name": r.name,
                    "value": r.value,
                    "unit": r.unit,
                    "target": r.target,
                    "at_most": r.at_most,
                }
                for r in results
            ],
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
