"""How to replay: :class:`SimOptions`, the choices of one simulation (policies by name
or object, the session grid, and one switch per exact shortcut), shared by the engine
(:mod:`xce.sim.engine`), the plain replay (:mod:`xce.sim.plain`) and the drivers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xce.alloc import AllocatorPlugin
    from xce.core.pickers import JobPicker
    from xce.predict import RuntimePredictor
    from xce.preempt import Preemptor

__all__ = ["MIN_INTERVAL", "SimOptions"]

MIN_INTERVAL = 0.001
"""The shortest ``interval`` between sessions, in seconds: finer grids only add sessions
(and, far below a time's float resolution, could not be told apart)."""


@dataclass(frozen=True, slots=True)
class SimOptions:
    """How to replay. ``picker`` and ``preemptor`` are names or objects (a researcher's
    policy needs no entry point); ``allocators`` are plugin objects tried before the
    registered ones."""

    picker: str | JobPicker | None = None  # default picker of queues that name none
    single_queue: bool = False  # every job in one queue ("normal")
    interval: float | None = None  # seconds between sessions; None: at every event time
    enforce_walltime: bool = False  # end jobs at their time limit (model.run_length)
    incremental: bool = True  # exact session shortcuts (module docstring)
    # every exact shortcut at once: off, the session shortcuts (as incremental=False) and
    # the allocator's and planner's (AllocOptions cache, shortcuts, cursors and
    # reuse_failures) are all off; a replay gives byte-identical outputs either way
    fast_paths: bool = True
    preemptor: str | Preemptor | None = None  # victim-set iterator (lowest_priority_first)
    allocators: tuple[AllocatorPlugin, ...] = ()
    backfill: str | None = None  # default backfill policy of queues that name none
    # the plain replay (xce.sim.plain): a plain workload replayed on free-slot arrays,
    # exactly as the general path decides it; also off with fast_paths off
    plain_replay: bool = True
    # its sessions that plan decided on its own arrays (xce.sim.planned), not by the
    # core, exactly as the core decides them; also off with plain_replay off
    plain_planning: bool = True
    # those sessions keep a pending job's plan from the last one where it provably
    # repeats, and a first plan on the rows when nothing started or ended since
    # (xce.sim.planned), rather than plan it again
    kept_plans: bool = True
    # a session with no start or end since the last (only new jobs), no running job at
    # or past its estimate and every plan still ahead carries the last one's profile
    # and plans on, deciding only the new jobs (xce.sim.planned.ArrayPlanning); also off
    # with kept_plans off
    kept_profile: bool = True
    # a session's first plan there, and the starts it lets by, decided from the running
    # jobs' claims without the profile (xce.sim.planned._Head) while it is the only one
    one_plan_on_rows: bool = True
    # that plan placed only once some decision, or some job that may start beside it,
    # needs its hosts (xce.sim.planned._Session.place_first); where no queue keeps
    # placements: a session in which nothing can start beside it never places it
    lazy_first_plan: bool = True
    # those sessions' profile, where instants x claims are few (GRID_CELLS), on a
    # dense grid of instants by classes of alike hosts rather than the planner's event
    # table (xce.sim.slotprofile): the same slots, windows and rises, a window one
    # numpy reduction; off, the event table always
    dense_profile: bool = True
    # the plain replay's sessions find the jobs that may start (want at most the free
    # slots) in an index of the pending jobs by task count, not by trying each
    # (xce.sim.plain._ByWidth); off, every pending job is tried, and decides alike
    width_index: bool = True
    # with an interval, sessions with nothing new to decide are neither run nor visited
    # (xce.sim.idle, an exact session shortcut); also off with incremental or fast_paths off
    idle_skip: bool = True
    # a runtime predictor (a name, NAME:OPTION, or an object) that learns as jobs end,
    # and whether backfill plans with its predictions or the requested times
    # (xce.sim.predicted); None: no predictor
    predictor: str | RuntimePredictor | None = None
    backfill_with: str = "requested"
