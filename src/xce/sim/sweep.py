"""Sweeps: many replays over a grid of workloads, clusters, policies and options
(``xce sweep``, issue 14; docs/sweep.md).

A grid file (YAML) lists workloads, cluster variants, policies (``xce compare``'s
``PICKER[+MODIFIER...]``), option sets and a number of repetitions; their product is a
list of :class:`Cell`. A cell is run by :func:`run_cell` exactly as ``xce simulate``
runs it alone, and its result is the ``metrics.json`` object, nothing bigger.

A cell's :attr:`Cell.id` is a hash of its whole definition: the workload (a file by its
name and the SHA-256 of its bytes, or a generated count and seed), the cluster (the same
for its files), the policy and the options. It does not depend on where the files are,
on the grid's order, or on the other cells, so a changed grid keeps the ids of the cells
it still has.

Workers read each (workload, cluster) pair once: :func:`run_cell` keeps what it loaded in
a small per-process cache, so the tasks carry only cell definitions.

With a jobs directory (``xce sweep --keep-jobs``), :func:`run_cell` also writes the cell's
per-job records where :func:`cell_jobs` says, ``OUT/cells/<cell id>/jobs.csv`` (the
columns of ``xce simulate``'s ``jobs.csv``), whole, on the worker, before it returns:
a cell whose row is in the results table has its ``jobs.csv``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Generator, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import yaml

from xce.cluster.yaml_stream import Loader
from xce.errors import InputError
from xce.sim.files import SYNTHETIC

if TYPE_CHECKING:
    from distributed import Client

    from xce.cluster import ClusterState
    from xce.sim.model import JobRecord, SimJob
    from xce.sim.swf import SwfTrace

__all__ = [
    "CELLS",
    "Cell",
    "ClusterVariant",
    "Options",
    "Workload",
    "cell_jobs",
    "clear_cache",
    "cluster_state",
    "load_grid",
    "run_cell",
    "run_cells",
    "workload_jobs",
]

MAX_GRID_BYTES = 1 << 20
"""A grid file is a short hand-written list: at most 1 MiB."""
MAX_SCALE = 1000
MAX_REPETITIONS = 10_000
MAX_CELLS = 100_000
"""A grid spans at most this many cells (a study of a few hundred replays is large):
counted before any is made, so a short file of long lists or YAML aliases cannot keep
the sweep enumerating for hours."""
CELLS = "cells"
"""The directory of ``xce sweep --out`` holding one directory per cell (``--keep-jobs``)."""
_SEED_MAX = 2**63 - 1
_NUMBER_MAX = 1e15

# -- the grid file's schema -------------------------------------------------------------


class _Entry(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class WorkloadEntry(_Entry):
    """``trace: FILE`` (SWF, gzipped or not, or a jobs file) or ``generated: N`` jobs."""

    trace: str | None = None
    generated: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)] | None = None
    seeds: Annotated[
        list[Annotated[int, msgspec.Meta(ge=0, le=_SEED_MAX)]], msgspec.Meta(min_length=1)
    ] = msgspec.field(default_factory=lambda: [0])
    limit: Annotated[int, msgspec.Meta(ge=0, le=10**15)] | None = None
    lenient: bool = False


class ClusterEntry(_Entry):
    """``file: STATE`` (with ``scale: K``, K copies of its hosts) or ``hosts: N`` of
    ``slots_per_host`` (with ``queues: STATE``, a state file of queues and limits)."""

    file: str | None = None
    scale: Annotated[int, msgspec.Meta(ge=1, le=MAX_SCALE)] = 1
    hosts: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None
    slots_per_host: Annotated[int, msgspec.Meta(ge=1, le=10**6)] = 1
    queues: str | None = None


class OptionsEntry(_Entry):
    """The options of ``xce simulate`` that change a replay."""

    interval: Annotated[float, msgspec.Meta(ge=0.001, le=_NUMBER_MAX)] | None = None
    enforce_walltime: bool = False
    single_queue: bool = False


class GridSpec(_Entry):
    """The whole grid file."""

    workloads: Annotated[list[WorkloadEntry], msgspec.Meta(min_length=1)]
    clusters: Annotated[list[ClusterEntry], msgspec.Meta(min_length=1)]
    policies: Annotated[list[str], msgspec.Meta(min_length=1)]
    options: Annotated[list[OptionsEntry], msgspec.Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: [OptionsEntry()]
    )
    repetitions: Annotated[int, msgspec.Meta(ge=1, le=MAX_REPETITIONS)] = 1


# -- resolved cells ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    """One workload: ``spec`` is an absolute file path or ``synthetic:N``; ``digest``
    the SHA-256 of the file ("" when generated)."""

    spec: str
    name: str
    digest: str = ""
    seed: int = 0
    limit: int | None = None
    lenient: bool = False

    @property
    def generated(self) -> bool:
        return self.spec.startswith(SYNTHETIC)

    def definition(self) -> dict[str, Any]:
        if self.generated:
            return {"generated": self.spec, "seed": self.seed}
        return {
            "trace": self.name,
            "sha256": self.digest,
            "limit": self.limit,
            "lenient": self.lenient,
        }


@dataclass(frozen=True, slots=True)
class ClusterVariant:
    """A cluster file (``scale`` copies of its hosts) or ``hosts`` x ``slots_per_host``
    (with the queues of ``queues``); paths absolute, digests their SHA-256."""

    name: str
    file: str | None = None
    digest: str = ""
    scale: int = 1
    hosts: int | None = None
    slots_per_host: int = 1
    queues: str | None = None
    queues_digest: str = ""

    def definition(self) -> dict[str, Any]:
        if self.file is not None:
            return {"file": Path(self.file).name, "sha256": self.digest, "scale": self.scale}
        queues = None if self.queues is None else Path(self.queues).name
        return {
            "hosts": self.hosts,
            "slots_per_host": self.slots_per_host,
            "queues": queues,
            "queues_sha256": self.queues_digest,
        }


@dataclass(frozen=True, slots=True)
class Options:
    """``--interval``, ``--enforce-walltime`` and ``--single-queue`` of one replay."""

    interval: float | None = None
    enforce_walltime: bool = False
    single_queue: bool = False

    @property
    def text(self) -> str:
        parts = [f"interval={self.interval:g}"] if self.interval is not None else []
        parts += ["enforce_walltime"] if self.enforce_walltime else []
        parts += ["single_queue"] if self.single_queue else []
        return ",".join(parts) or "-"


@dataclass(frozen=True, slots=True)
class Cell:
    """One replay of a sweep; ``repetition`` is which repetition drew the seed."""

    workload: Workload
    cluster: ClusterVariant
    policy: str
    options: Options
    repetition: int = 0

    def definition(self) -> dict[str, Any]:
        """Everything that decides the cell's result, and nothing else."""
        return {
            "workload": self.workload.definition(),
            "cluster": self.cluster.definition(),
            "policy": self.policy,
            "options": asdict(self.options),
        }

    @property
    def text(self) -> str:
        """``workload seed S, cluster, policy, options`` as a person reads a cell."""
        w = self.workload
        seed = f" seed {w.seed}" if w.generated else ""
        return f"{w.name}{seed}, {self.cluster.name}, {self.policy}, {self.options.text}"

    @property
    def id(self) -> str:
        text = json.dumps(self.definition(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


# -- loading a grid file: every problem located in it ------------------------------------


def load_grid(path: str | os.PathLike[str]) -> list[Cell]:
    """The cells of the grid file ``path``, or an InputError naming the file, the path in
    the document (``clusters[1].hosts``) and its line and column."""
    from xce.inputs import read_input_text

    source = os.fspath(path)
    text = read_input_text(source, max_bytes=MAX_GRID_BYTES, compressed=False, what="grid file")
    try:
        node = yaml.compose(text, Loader=Loader)  # YAML 1.2 floats, as state files: 1e3
        data = yaml.load(text, Loader=Loader)  # Loader: safe, YAML 1.2 floats
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        raise InputError(
            f"not valid YAML: {err.problem}", source=source, line=line, column=col
        ) from None
    where = _Locator(source, text, node)
    if not isinstance(data, dict):
        raise where.error("expected a mapping with workloads, clusters, policies", ())
    try:
        spec = msgspec.convert(data, GridSpec)
    except msgspec.ValidationError as err:
        raise where.validation(str(err)) from None
    return _grid_cells(spec, where)


class _Locator:
    """Turns a path in the grid document into file, line, column and the line's text."""

    def __init__(self, source: str, text: str, node: yaml.Node | None) -> None:
        self.source = source
        self.base = Path(source).resolve().parent
        self.lines = text.splitlines()
        self.node = node

    def error(self, message: str, path: tuple[str | int, ...], at_key: bool = False) -> InputError:
        node = _walk(self.node, path, at_key)
        line = column = None
        shown = None
        if node is not None:
            line, column = node.start_mark.line + 1, node.start_mark.column + 1
            shown = self.lines[line - 1] if line <= len(self.lines) else None
        dotted = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        return InputError(
            message, source=self.source, path=dotted or None, line=line, column=column, text=shown
        )

    def validation(self, text: str) -> InputError:
        """msgspec's ``message - at `$.a[0].b``` as an error at that path."""
        m = re.fullmatch(r"(.*?)(?: - at `\$(.*)`)?", text, re.S)
        assert m is not None  # the pattern matches any text
        path: list[str | int] = []
        for name, index in re.findall(r"\.(\w+)|\[(\d+)\]", m[2] or ""):
            path.append(name if name else int(index))
        message = m[1]
        if (unknown := re.fullmatch(r"Object contains unknown field `(.+)`", message)) is not None:
            path.append(unknown[1])
            return self.error(f"unknown key {unknown[1]!r}", tuple(path), at_key=True)
        return self.error(message[:1].lower() + message[1:], tuple(path))

    def file(self, given: str, path: tuple[str | int, ...]) -> Path:
        """``given`` (relative to the grid file's directory) as an absolute path to an
        existing regular file."""
        found = (self.base / os.path.expanduser(given)).resolve()
        if not found.is_file():
            what = "does not exist" if not found.exists() else "is not a regular file"
            raise self.error(f"{given!r} {what}", path)
        return found


def _walk(
    node: yaml.Node | None, path: tuple[str | int, ...], at_key: bool = False
) -> yaml.Node | None:
    """The node at ``path`` (``at_key``: the last key's node; a missing key: its mapping)."""
    for i, seg in enumerate(path):
        if isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
            node = node.value[seg]
        elif isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if getattr(k, "value", None) == seg]
            if not match:
                return node
            key, value = match[0]
            node = key if at_key and i == len(path) - 1 else value
        else:
            return node
    return node


def _grid_cells(spec: GridSpec, where: _Locator) -> list[Cell]:
    """The grid's cells in grid order (workload, cluster, policy, options, repetition),
    each distinct cell once; policies are checked against the registries."""
    policies = [_policy(text, i, where) for i, text in enumerate(spec.policies)]
    first: dict[str, int] = {}
    for i, text in enumerate(policies):  # as xce compare: a policy once (not merged)
        if text in first:
            raise where.error(
                f"policy {text!r} is given twice (also policies[{first[text]}])",
                ("policies", i),
            )
        first[text] = i
    clusters = [_cluster(c, i, where) for i, c in enumerate(spec.clusters)]
    options = [Options(o.interval, o.enforce_walltime, o.single_queue) for o in spec.options]
    runs = sum(
        1 if e.trace is not None else len(e.seeds) * spec.repetitions for e in spec.workloads
    )
    count = runs * len(clusters) * len(policies) * len(options)
    if count > MAX_CELLS:
        raise where.error(
            f"the grid spans {count:,} cells (workload runs x clusters x policies x options), "
            f"more than {MAX_CELLS:,} (the limit)",
            (),
        )
    cells: dict[str, Cell] = {}
    for i, entry in enumerate(spec.workloads):
        for workload, rep in _workloads(entry, i, spec.repetitions, where):
            for cluster, policy, option in itertools.product(clusters, policies, options):
                cell = Cell(workload, cluster, policy, option, rep)
                cells.setdefault(cell.id, cell)
    return list(cells.values())


def _policy(text: str, i: int, where: _Locator) -> str:
    from xce.core import default_pickers
    from xce.preempt import default_preemptors
    from xce.sim.compare import parse_policy

    try:
        parse_policy(text, default_pickers(), default_preemptors())
    except InputError as err:
        raise where.error(err.message.replace("--policy ", "policy ", 1), ("policies", i)) from None
    return text


def _workloads(
    entry: WorkloadEntry, i: int, repetitions: int, where: _Locator
) -> Iterator[tuple[Workload, int]]:
    """Generated: each seed s drawn ``repetitions`` times as seeds s, s+1, ...; a trace
    replays the same way every time, so it is run once."""
    at: tuple[str | int, ...] = ("workloads", i)
    if (entry.trace is None) == (entry.generated is None):
        raise where.error("give either trace: FILE or generated: N jobs", at)
    if entry.trace is not None:
        if entry.seeds != [0]:
            raise where.error("seeds go with generated workloads", (*at, "seeds"))
        found = where.file(entry.trace, (*at, "trace"))
        yield Workload(str(found), found.name, _digest(found), 0, entry.limit, entry.lenient), 0
        return
    if entry.limit is not None or entry.lenient:
        raise where.error("limit and lenient go with trace workloads", at)
    spec = f"{SYNTHETIC}{entry.generated}"
    for seed in entry.seeds:
        for rep in range(repetitions):
            yield Workload(spec, spec, seed=min(seed + rep, _SEED_MAX)), rep


def _cluster(entry: ClusterEntry, i: int, where: _Locator) -> ClusterVariant:
    at: tuple[str | int, ...] = ("clusters", i)
    if (entry.file is None) == (entry.hosts is None):
        raise where.error("give either file: STATE or hosts: N (and slots_per_host: C)", at)
    if entry.file is not None:
        if entry.queues is not None or entry.slots_per_host != 1:
            raise where.error("queues and slots_per_host go with hosts: N, not file:", at)
        found = where.file(entry.file, (*at, "file"))
        name = found.name if entry.scale == 1 else f"{found.name} x{entry.scale}"
        return ClusterVariant(name, str(found), _digest(found), entry.scale)
    if entry.scale != 1:
        raise where.error("scale goes with file: STATE", (*at, "scale"))
    name = f"{entry.hosts}x{entry.slots_per_host}"
    queues = None if entry.queues is None else where.file(entry.queues, (*at, "queues"))
    if queues is None:
        return ClusterVariant(name, hosts=entry.hosts, slots_per_host=entry.slots_per_host)
    return ClusterVariant(
        f"{name} {queues.name}",
        hosts=entry.hosts,
        slots_per_host=entry.slots_per_host,
        queues=str(queues),
        queues_digest=_digest(queues),
    )


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- running a cell: as ``xce simulate`` runs it alone -----------------------------------

Loaded = tuple["ClusterState", list["SimJob"], "SwfTrace | None"]

_CACHE: OrderedDict[tuple[Workload, ClusterVariant], Loaded] = OrderedDict()
_CACHE_SIZE = 8
"""(workload, cluster) pairs a worker keeps loaded: cells are submitted in grid order, so
the cells of one pair mostly follow one another; a 20,000-job workload is ~20 MB."""
_CACHE_LOCK = threading.Lock()  # threaded workers: one load per pair, not one per thread
runs = 0
"""How many cells this process has replayed (the tests count executions with it)."""


def run_cell(cell: Cell, jobs_dir: str | None = None) -> dict[str, Any]:
    """The ``metrics.json`` object of ``cell``'s replay: the cluster and jobs read as
    ``xce simulate`` reads them, the policy applied as ``xce compare`` applies it.
    ``jobs_dir`` (a sweep's ``--out``): the replay's ``jobs.csv`` is written first, at
    ``cell_jobs(jobs_dir, cell.id)``."""
    global runs
    from xce.core import default_pickers
    from xce.preempt import default_preemptors
    from xce.sim.compare import compare, parse_policy
    from xce.sim.options import SimOptions

    o = cell.options
    options = SimOptions(
        interval=o.interval, enforce_walltime=o.enforce_walltime, single_queue=o.single_queue
    )
    try:
        state, jobs, trace = _loaded(cell.workload, cell.cluster)
        policy = parse_policy(cell.policy, default_pickers(), default_preemptors())
        runs += 1
        done = compare(state, jobs, [policy], options, trace)[0]
    except InputError as err:  # the whole text: pickling to the client keeps only args
        raise InputError(f"cell {cell.text}: {err}") from None
    if jobs_dir is not None:
        _write_jobs(done.result.records, cell_jobs(jobs_dir, cell.id))
    return done.metrics


def cell_jobs(out: str | os.PathLike[str], cell_id: str) -> Path:
    """Where ``xce sweep --out OUT --keep-jobs`` keeps a cell's ``jobs.csv``:
    ``OUT/cells/<cell id>/jobs.csv`` (the id is the results table's ``cell`` column)."""
    return Path(out) / CELLS / cell_id / "jobs.csv"


def _write_jobs(records: Sequence[JobRecord], path: Path) -> None:
    """``jobs.csv`` written whole: to a hidden file beside it, renamed when complete (a
    reader, or a sweep killed meanwhile, never sees half a file)."""
    from xce.sim.metrics import write_jobs_csv

    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        write_jobs_csv(records, temp)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _loaded(workload: Workload, cluster: ClusterVariant) -> Loaded:
    key = (workload, cluster)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
        state = cluster_state(cluster)
        loaded = (state, *workload_jobs(workload, state))
        _CACHE[key] = loaded
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return loaded


def cluster_state(cluster: ClusterVariant) -> ClusterState:
    """The cluster of a variant: its file (its hosts ``scale`` times), or uniform hosts
    named as ``xce simulate --hosts`` names them."""
    from xce.cluster import load_state
    from xce.sim.clusters import uniform_cluster

    if cluster.file is not None:
        if cluster.scale == 1:
            return load_state(cluster.file)
        return _scaled(cluster.file, cluster.scale)
    assert cluster.hosts is not None  # a variant is a file or hosts (_grid_cells checks)
    queues = load_state(cluster.queues) if cluster.queues is not None else None
    return uniform_cluster(cluster.hosts, cluster.slots_per_host, queues)


def _scaled(path: str, scale: int) -> ClusterState:
    """The state file with each host copied ``scale`` times, copies named ``NAME~2``...
    right after their original; running work, queues and limits unchanged."""
    from xce.cluster import load_state, state_from_dict
    from xce.inputs import MAX_STATE_BYTES, read_input_text

    load_state(path)  # the file as it is: every problem located in it
    text = read_input_text(path, max_bytes=MAX_STATE_BYTES, compressed=False)
    data = yaml.load(text, Loader=Loader)  # as the state loader reads it
    hosts = []
    for host in data.get("hosts", []):
        hosts += [host, *({**host, "name": f"{host['name']}~{k}"} for k in range(2, scale + 1))]
    return state_from_dict({**data, "hosts": hosts}, f"{path} x{scale}")


def workload_jobs(
    workload: Workload, cluster: ClusterState
) -> tuple[list[SimJob], SwfTrace | None]:
    """The jobs as ``xce simulate --workload ... --seed ... --limit ... [--lenient]``
    reads them for ``cluster``."""
    from xce.sim.workload import replay_jobs

    return replay_jobs(workload.spec, cluster, workload.seed, workload.limit, workload.lenient)


# -- running many cells ------------------------------------------------------------------


def run_cells(
    cells: Sequence[Cell], client: Client | None = None, jobs_dir: str | None = None
) -> Generator[tuple[Cell, dict[str, Any]]]:
    """Each cell with its metrics, as cells finish: one Dask task per cell on
    ``client``, or one after another in this process when ``client`` is None. Closing
    the iterator early (an interrupt) cancels the tasks not yet finished. ``jobs_dir``:
    each cell's ``jobs.csv`` is kept there (:func:`run_cell`)."""
    if client is None:
        for cell in cells:
            yield cell, run_cell(cell, jobs_dir)
        return
    from distributed import as_completed

    futures = {
        client.submit(run_cell, c, jobs_dir, key=f"cell-{c.id}", pure=False): c for c in cells
    }
    try:
        for future in as_completed(futures):  # type: ignore[no-untyped-call]
            yield futures[future], future.result()
    finally:
        client.cancel(list(futures))  # type: ignore[no-untyped-call]


def clear_cache() -> None:
    """Forget every loaded workload (a test or a long-lived worker may call it)."""
    with _CACHE_LOCK:
        _CACHE.clear()
