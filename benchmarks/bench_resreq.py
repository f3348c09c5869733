"""Requirement parsing: cold parsing of distinct strings, memoised ingest of a trace."""

from __future__ import annotations

import random

from benchmarks.common import Result, best_of
from xce.cluster.catalog import ResourceCatalog, ResourceDef, ResourceKind
from xce.resreq import parse, requirement_for_job
from xce.resreq.parser import _parser

TYPES = ("X86_64", "ARM", "MIPS", "ALPHA")


def distinct_requirements(n: int, seed: int = 1) -> list[str]:
    """``n`` distinct, realistic requirement strings of every shape."""
    rng = random.Random(seed)
    shapes = (
        lambda i: f"select[type=={rng.choice(TYPES)} && mem>{i}] rusage[mem={i % 5000}]",
        lambda i: f"mem>{i} && fast order[-slots] rusage[mem={i}:swp=500:duration=10]",
        lambda i: f"2*{{select[type==X86_64] rusage[mem={i}]}} + 4*{{select[mem>{i}]}}",
        lambda i: f"select[((2*cpuf+3*mem)/{i + 1} < 1.0) && !fast] span[ptile={1 + i % 8}]",
        lambda i: (
            f"{{select[type==X86_64] rusage[mem={i}]}} || {{select[type==ARM] rusage[mem={2 * i}]}}"
        ),
        lambda i: f"select[(swp>{i} && type==MIPS) || (swp>35 && type==ALPHA)] same[type]",
    )
    return [shapes[i % len(shapes)](i) for i in range(n)]


def catalog() -> ResourceCatalog:
    kinds = {
        "mem": ResourceKind.CONSUMABLE,
        "swp": ResourceKind.CONSUMABLE,
        "type": ResourceKind.STRING,
        "fast": ResourceKind.BOOLEAN,
        "cpuf": ResourceKind.NUMERIC,
    }
    return ResourceCatalog(ResourceDef(n, k) for n, k in kinds.items())


def bench_cold_parse(n: int = 20_000) -> Result:
    texts = distinct_requirements(n)
    _parser()  # grammar construction is a one-time cost, not part of parsing

    def run() -> None:
        parse.cache_clear()
        for t in texts:
            parse(t)

    seconds = best_of(3, run)
    return Result("cold parse, distinct strings", n / seconds, "strings/s", target=5_000)


def bench_memoised_ingest(jobs: int = 1_000_000, distinct: int = 100) -> Result:
    cat = catalog()
    rng = random.Random(7)
    pool = distinct_requirements(distinct, seed=3)
    stream = [
        (rng.choice(pool), t, t) for t in (rng.choice((1, 1, 1, 2, 4, 16)) for _ in range(jobs))
    ]
    for text in pool:  # the compound strings fix their own total; make the stream consistent
        if parse(text).kind == "compound":
            total = parse(text).total_tasks  # type: ignore[union-attr]
            stream = [(s, total, total) if s == text else (s, a, b) for s, a, b in stream]

    def run() -> None:
        requirement_for_job.cache_clear()
        for text, lo, hi in stream:
            requirement_for_job(text, cat, lo, hi).primaries[0].fingerprint  # noqa: B018

    seconds = best_of(3, run)
    return Result(
        f"memoised ingest, {jobs:,} jobs / {distinct} strings", jobs / seconds, "jobs/s", 500_000
    )


def run() -> list[Result]:
    return [bench_cold_parse(), bench_memoised_ingest()]
