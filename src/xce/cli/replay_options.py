"""The options ``xce simulate`` and ``xce compare`` share: one definition each, so the
two commands read their inputs alike."""

from __future__ import annotations

import typer

__all__ = [
    "CLUSTER",
    "FORCE",
    "HOSTS",
    "INTERVAL",
    "LENIENT",
    "LIMIT",
    "QUEUES",
    "SEED",
    "SLOTS_PER_HOST",
    "WORKLOAD",
]

WORKLOAD = typer.Option(
    "--workload",
    metavar="FILE",
    help="An SWF trace (.swf/.swf.gz), a jobs file (.yaml/.json/.jsonl) or synthetic:N.",
)
CLUSTER = typer.Option("--cluster", metavar="STATE", help="A state file: the cluster.")
QUEUES = typer.Option(
    "--queues",
    metavar="STATE",
    help="With --hosts: a state file with only queues (and limits), e.g. "
    "high: {priority: 50, preempts: [low]}, for the uniform cluster.",
)
HOSTS = typer.Option(
    "--hosts",
    metavar="N",
    help="A uniform cluster of N hosts, at most 1,000,000 (default: from the SWF header).",
)
SLOTS_PER_HOST = typer.Option("--slots-per-host", metavar="N", help="Slots of each of the --hosts.")
INTERVAL = typer.Option(
    "--interval",
    metavar="SECONDS",
    help="Seconds between sessions, at least 0.001 (default: at every event).",
)
SEED = typer.Option("--seed", metavar="N", help="Seed of a synthetic:N workload.")
LIMIT = typer.Option("--limit", metavar="N", help="Only the first N jobs of the workload.")
LENIENT = typer.Option("--lenient", help="Skip (and count) malformed trace lines.")
FORCE = typer.Option("--force", help="Let --out replace those files where they already exist.")
