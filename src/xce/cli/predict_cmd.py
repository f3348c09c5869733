"""``xce predict``: when will each pending job start? A forward replay of the state
(:mod:`xce.predict.forward`), jobs ending at predicted runtimes, beside the scheduler's
own estimate when the state was imported."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli.conventions import (
    BACKFILL_OPTION,
    PREEMPTOR_OPTION,
    check_backfill,
    check_now,
    check_picker,
    check_preemptor,
    note_started_after,
)
from xce.cli.outputs import plain
from xce.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from xce.cluster import ClusterState
    from xce.predict.forward import Forecast, JobForecast

MAX_RUNS = 1000
MAX_WORKERS = 256


def predict(
    state_file: Annotated[
        Path, typer.Argument(metavar="STATE", help="A state file (.yaml, .yml or .json).")
    ],
    history: Annotated[
        Path | None,
        typer.Option(
            "--history",
            metavar="FILE",
            help="Finished jobs to learn runtimes from: sacct --json, qstat -x -f -F json, "
            "bjobs -a -json, or an SWF trace (.swf, .swf.gz). Only jobs that ended by the "
            "state's time are used.",
        ),
    ] = None,
    predictor: Annotated[
        str,
        typer.Option(
            "--predictor",
            metavar="NAME[:OPTION]",
            help="How long jobs run: history (the user's last two runtimes; history:Q, "
            "a calibrated quantile), fraction[:F] (F of the limit, default 0.5), limit "
            "(to their limits, as squeue --start assumes), or a plugin's.",
        ),
    ] = "history",
    runs: Annotated[
        int,
        typer.Option(
            "--runs",
            metavar="N",
            help="Sampled replays for each job's interval (10th-90th percentile); 0: none.",
        ),
    ] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampled replays.")] = 0,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            metavar="N",
            help="Processes for the sampled replays (default: the CPUs; the result does "
            "not depend on it).",
        ),
    ] = None,
    picker: Annotated[
        str | None,
        typer.Option("--picker", metavar="NAME", help="Default job picker, as xce schedule."),
    ] = None,
    preemptor: Annotated[str | None, PREEMPTOR_OPTION] = None,
    backfill: Annotated[str | None, BACKFILL_OPTION] = None,
    now: Annotated[
        float | None,
        typer.Option(
            "--now",
            metavar="SECONDS",
            help="When the replay starts (default: the state's now, else its latest "
            "start or submit time).",
        ),
    ] = None,
    timezone: Annotated[
        str | None,
        typer.Option(
            "--timezone",
            metavar="ZONE",
            help="Zone of the local times in a PBS or LSF history (default: the state's, "
            "else UTC).",
        ),
    ] = None,
    job: Annotated[
        str | None, typer.Option("--job", metavar="ID", help="Show this job only.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    timing: Annotated[
        bool,
        typer.Option(
            "--timing", help='With --json, add "timing"; without it the JSON is reproducible.'
        ),
    ] = False,
) -> None:
    """Predict when each pending job starts: the state replayed forward, jobs ending at
    predicted runtimes, planning with their requested times as the scheduler does."""
    from rich.console import Console

    from xce import timefmt
    from xce.cluster import load_state
    from xce.predict import default_predictors, learn
    from xce.predict.forward import Policy, predict_starts
    from xce.predict.history import read_history

    if not 0 <= runs <= MAX_RUNS:
        raise InputError(f"--runs: expected 0 to {MAX_RUNS}, not {runs}")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise InputError(f"--workers: expected 1 to {MAX_WORKERS}, not {workers}")
    processes = workers if workers is not None else max(1, len(os.sched_getaffinity(0)))
    check_now(now)
    if timezone is not None:
        try:
            timefmt.check_zone(timezone)
        except ValueError as err:
            raise InputError(f"--timezone: {err}") from None
    pickers = check_picker(picker)
    chosen = check_preemptor(preemptor)
    check_backfill(backfill)
    learner = default_predictors().make(predictor)
    state = load_state(state_file)
    if now is not None:
        state = state.seen_at(now)  # a job submitted after --now waits for it
        note_started_after(state, now)
    if job is not None and not any(j.id == job for j in state.jobs):
        raise InputError(f"--job {plain(job)}: no pending job of that id in the state")
    start = state.session_time() if now is None else now
    learned = 0
    if history is not None:
        zone = timezone if timezone is not None else state.timezone
        past = read_history(history, timezone=zone).before(start)
        learn(learner, past.jobs)
        learned = len(past.jobs)
    policy = Policy(picker=picker, backfill=backfill, preemptor=chosen, registry=pickers)
    until = frozenset((job,)) if job is not None else None  # --job: only until it starts
    forecast = predict_starts(
        state,
        learner,
        runs=runs,
        seed=seed,
        policy=policy,
        now=now,
        until=until,
        workers=processes,
    )
    info = forecast_json(forecast, state, learner.name, learned, job)
    if as_json:
        if timing:
            info["timing"] = {"elapsed_s": round(forecast.seconds, 6)}
        typer.echo(json.dumps(info, indent=2))
        return
    _render(info, forecast, state, Console(highlight=False), history is not None, learned)


def _after(t: float, now: float) -> str:
    from xce import timefmt

    return timefmt.duration(t - now) if t > now else "now"


def forecast_json(
    forecast: Forecast, state: ClusterState, predictor: str, learned: int, only: str | None
) -> dict[str, Any]:
    """What ``--json`` prints (docs/prediction.md)."""
    jobs = [_job_json(j, state) for j in forecast.jobs if only is None or j.job == only]
    return {
        "now": forecast.now,
        "predictor": predictor,
        "runs": forecast.runs,
        "history_jobs": learned,
        "sessions": forecast.point.sessions,
        "jobs": jobs,
    }


def _job_json(j: JobForecast, state: ClusterState) -> dict[str, Any]:
    from xce import timefmt

    tz = state.timezone
    out: dict[str, Any] = {
        "job": j.job,
        "start": j.start,
        "start_iso": timefmt.iso(j.start, tz),
        "low": j.low,
        "high": j.high,
        "scheduler_start": j.scheduler_start,
    }
    if j.last_start is not None:
        out["last_start"] = j.last_start
    if j.reason is not None:
        out["reason"] = j.reason.reason.value
        out["message"] = j.reason.message
    else:
        out["reason"] = None
    return out


def _render(
    info: dict[str, Any],
    forecast: Forecast,
    state: ClusterState,
    console: Console,
    given: bool,
    learned: int,
) -> None:
    from xce import timefmt
    from xce.cli.tables import print_table

    tz, now = state.timezone, forecast.now
    rows = []
    for j in info["jobs"]:
        start, low, high, own = j["start"], j["low"], j["high"], j["scheduler_start"]
        interval = (
            f"{_after(low, now)} - {_after(high, now)}"
            if low is not None and high is not None
            else ("-" if not info["runs"] else "not in most runs")
        )
        rows.append(
            (
                j["job"],
                timefmt.absolute(start, tz) if start is not None else "never",
                _after(start, now) if start is not None else "-",
                interval,
                _after(own, now) if own is not None else "-",
                j.get("message") or "",
            )
        )
    print_table(
        console,
        f"Predicted starts ({info['predictor']}, from {timefmt.absolute(now, tz)})",
        ("job", "predicted start", "in", "10-90 %", "scheduler says", "why never"),
        rows,
    )
    started = sum(1 for j in info["jobs"] if j["start"] is not None)
    console.print(
        f"{started} of {len(info['jobs'])} job(s) start in the replay; "
        f"{forecast.point.sessions:,} sessions, {info['runs']} sampled run(s), "
        f"{timefmt.duration(forecast.seconds)}",
        soft_wrap=True,  # one line, whatever the width: the terminal wraps it
    )
    if not learned and info["predictor"] == "history":
        why = "--history holds no job ended by then" if given else "no --history"
        console.print(
            f"note: {why}: with nothing learned, every job is predicted to run to its "
            "limit (as squeue --start assumes)"
        )
