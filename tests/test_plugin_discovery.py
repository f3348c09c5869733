"""Third-party plugins found through entry points (issue 4, "Picker interface").

Acceptance: "A third-party picker registered through an entry point (a tiny test package
installed in the test run) is found by name and used." Each fixture installs a tiny
distribution into ``tmp_path`` — a package plus a ``*.dist-info`` with ``entry_points.txt``
— and puts it on ``sys.path`` (and on ``PYTHONPATH`` for the ``xce`` subprocess), as pip
would install it into site-packages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import invalidate_caches
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from builders import ClusterBuilder
from xce.alloc import (
    AllocatorPlugin,
    AllocatorRegistry,
    Dispatched,
    ParJobAllocator,
    SeqJobAllocator,
    default_registry,
    prepare_requirement,
)
from xce.cluster import ClusterState, Queue, state_from_dict
from xce.core import JobPicker, QueueCursor, Session, default_pickers
from xce.errors import InputError

XCE = Path(sys.executable).parent / "xce"
BUILTIN_PICKERS = ["fcfs", "strict", "fairshare", "priority", "multifactor", "lsf-fairshare"]

PICKER_SOURCE = '''
"""A third-party picker: last submitted, first served. Imports only xce's public API."""
from xce.core import Pick


class _Cursor:
    needs_feedback = False

    def __init__(self, jobs):
        self._jobs = sorted(jobs, key=lambda j: (j.submit_time, j.order), reverse=True)

    def peek(self):
        return Pick(self._jobs[0]) if self._jobs else None

    def pop(self):
        return Pick(self._jobs.pop(0)) if self._jobs else None

    def feedback(self, pick, decision):
        return None


class LifoPicker:
    def __init__(self, name="lifo"):
        self.name = name

    def start(self, queue, jobs, state):
        return _Cursor(jobs)


def newest_first():
    """A factory entry point (called with no arguments)."""
    return LifoPicker("newest")
'''

ALLOCATOR_SOURCE = '''
"""A third-party allocator: elects sequential primaries ahead of the builtin seqjob and
records each one it plans. Its prepare hook does nothing: seqjob's guarded hook already
asks for the bucket of every 1-task primary (the prepare fan-out)."""
from xce.alloc import TrivialPlanIterator


class TracingSeqJob:
    name = "tracer"
    planned = []

    def elect(self, primary):
        return primary.tasks == 1

    def prepare(self, ctx):
        return None

    def plans(self, primary, ctx):
        type(self).planned.append(primary.tasks)
        return TrivialPlanIterator(ctx.token)
'''


@contextmanager
def installed(
    root: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, entry_points_txt: str
) -> Iterator[None]:
    """Install distribution ``module`` 0.1 (one module, some entry points) under ``root``
    and put ``root`` on sys.path; on teardown forget the imported module."""
    root.mkdir(exist_ok=True)
    (root / module).mkdir()
    (root / module / "__init__.py").write_text(textwrap.dedent(source))
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points_txt))
    monkeypatch.syspath_prepend(str(root))
    invalidate_caches()  # importlib.metadata and the path finders see the new directory
    try:
        yield
    finally:
        sys.modules.pop(module, None)
        invalidate_caches()


@pytest.fixture
def picker_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``xce_test_picker``: ``lifo`` (a class) and ``newest`` (a factory) in ``xce.pickers``."""
    root = tmp_path / "site"
    entry = """\
        [xce.pickers]
        lifo = xce_test_picker:LifoPicker
        newest = xce_test_picker:newest_first
        """
    with installed(root, monkeypatch, "xce_test_picker", PICKER_SOURCE, entry):
        yield root


@pytest.fixture
def shadowing_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``xce_test_shadow``: a picker advertised under a builtin's name, ``fcfs``."""
    root = tmp_path / "site"
    source = PICKER_SOURCE.replace('name="lifo"', 'name="fcfs"')
    entry = "[xce.pickers]\nfcfs = xce_test_shadow:LifoPicker\n"
    with installed(root, monkeypatch, "xce_test_shadow", source, entry):
        yield root


@pytest.fixture
def allocator_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``xce_test_alloc``: ``tracer`` in ``xce.allocators``; yields the plugin class."""
    root = tmp_path / "site"
    entry = "[xce.allocators]\ntracer = xce_test_alloc:TracingSeqJob\n"
    with installed(root, monkeypatch, "xce_test_alloc", ALLOCATOR_SOURCE, entry):
        import xce_test_alloc  # type: ignore[import-not-found]

        yield xce_test_alloc.TracingSeqJob


def lifo_state() -> ClusterState:
    """Three jobs, in file order a, b, c, submitted b, c, a."""
    return (
        ClusterBuilder()
        .host("h0", slots=8)
        .job("a", submit_time=9)
        .job("b", submit_time=1)
        .job("c", submit_time=5)
        .build()
    )


# --- pickers -----------------------------------------------------------------------------
def test_the_test_package_advertises_its_pickers(picker_plugin: Path) -> None:
    """The fixture works: the installed distribution's entry points are visible."""
    names = {ep.name: ep.value for ep in entry_points(group="xce.pickers")}
    assert names["lifo"] == "xce_test_picker:LifoPicker"
    assert names["newest"] == "xce_test_picker:newest_first"


def test_default_pickers_finds_the_plugin_by_name(picker_plugin: Path) -> None:
    """Acceptance: ``default_pickers()`` registers the entry point's picker under its
    name, after the builtins; a factory entry point works too; ``plugins=False`` skips
    them."""
    registry = default_pickers()
    names = registry.names()
    assert names[:6] == BUILTIN_PICKERS
    assert set(names[6:]) == {"lifo", "newest"}
    lifo = registry.get("lifo")
    assert type(lifo).__module__ == "xce_test_picker"
    assert type(lifo).__name__ == "LifoPicker"
    assert isinstance(lifo, JobPicker)
    assert registry.get("newest").name == "newest"
    assert default_pickers(plugins=False).names() == BUILTIN_PICKERS


def test_the_plugin_is_used_as_the_default_picker(picker_plugin: Path) -> None:
    """Acceptance: ``Session(state, picker="lifo")`` orders jobs last submitted first."""
    result = Session(lifo_state(), picker="lifo").run()
    assert [d.job for d in result.decisions] == ["a", "c", "b"]
    assert all(isinstance(d, Dispatched) for d in result.decisions)


def test_the_plugin_is_used_by_a_queue_naming_it(picker_plugin: Path) -> None:
    """A queue may name the plugin in the state file; other queues keep the default."""
    doc = (
        ClusterBuilder()
        .host("h0", slots=8)
        .queue("q", priority=5, picker="lifo")
        .queue("fifo", priority=1)
        .job("f1", queue="fifo", submit_time=0)
        .job("q1", queue="q", submit_time=0)
        .job("f2", queue="fifo", submit_time=1)
        .job("q2", queue="q", submit_time=1)
        .to_dict()
    )
    result = Session(state_from_dict(doc)).run()
    assert [d.job for d in result.decisions] == ["q2", "q1", "f1", "f2"]


def test_the_plugin_cursor_keeps_the_contract(picker_plugin: Path) -> None:
    """The plugin passes the same QueueCursor checks as the builtins (peek is stable,
    pop returns what peek did, every job once, then None)."""
    state = lifo_state()
    picker = default_pickers().get("lifo")
    cursor = picker.start(Queue("normal"), state.jobs, state)
    assert isinstance(cursor, QueueCursor)
    seen = []
    while (pick := cursor.peek()) is not None:
        assert cursor.peek() == pick
        assert cursor.pop() == pick
        seen.append(pick.job.id)
    assert cursor.pop() is None
    assert seen == ["a", "c", "b"]


def test_a_plugin_cannot_take_a_builtin_name(shadowing_plugin: Path) -> None:
    """A plugin advertised as ``fcfs`` is refused (bad input naming the plugin's entry
    point, not an internal error), not silently swapped for the builtin;
    ``plugins=False`` still gives the builtins."""
    with pytest.raises(InputError, match="fcfs") as caught:
        default_pickers()
    assert "already registered" in caught.value.message
    assert "entry point group xce.pickers" in caught.value.message
    assert default_pickers(plugins=False).get("fcfs").__module__ == "xce.core.pickers"


def test_a_broken_plugin_is_bad_input_naming_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package advertising a picker from a module that does not import: every command
    that loads pickers exits 2 naming the package and its entry point (it was reported
    as an internal error of xce's)."""
    root = tmp_path / "site"
    with installed(
        root, monkeypatch, "badplug", "", "[xce.pickers]\nbroken = nosuchmodule:Thing\n"
    ):
        with pytest.raises(InputError) as caught:
            default_pickers()
        message = caught.value.message
        assert "broken = nosuchmodule:Thing" in message
        assert "package badplug" in message
        assert "ModuleNotFoundError" in message
        state = tmp_path / "s.yaml"
        state.write_text("hosts: [{name: h0, slots: 1}]\njobs: [{id: j}]\n")
        result = _xce(root, str(state))
        assert result.returncode == 2, result.stderr
        assert "nosuchmodule:Thing" in result.stderr
        assert "internal error" not in result.stderr


def _xce(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [str(XCE), "schedule", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},
    )


def test_the_cli_finds_and_uses_the_plugin(picker_plugin: Path, tmp_path: Path) -> None:
    """Acceptance through the CLI: ``xce schedule STATE --picker lifo`` in a process whose
    PYTHONPATH has the test package dispatches last submitted first; an unknown picker's
    message lists the plugin among the known ones."""
    path = tmp_path / "state.json"
    doc = ClusterBuilder().host("h0", slots=8)
    for job_id, submit in (("a", 9), ("b", 1), ("c", 5)):
        doc.job(job_id, submit_time=submit)
    path.write_text(json.dumps(doc.to_dict()))
    run = _xce(picker_plugin, str(path), "--picker", "lifo", "--json")
    assert run.returncode == 0, run.stderr
    assert [d["job"] for d in json.loads(run.stdout)["dispatched"]] == ["a", "c", "b"]
    bad = _xce(picker_plugin, str(path), "--picker", "nope")
    assert bad.returncode == 2
    assert (
        "known: fairshare, fcfs, lifo, lsf-fairshare, multifactor, newest, priority, strict"
        in bad.stderr
    )


# --- allocators ----------------------------------------------------------------------------
def test_the_test_package_advertises_its_allocator(allocator_plugin: Any) -> None:
    """The fixture works, and the plugin is a valid allocator: registered by hand ahead of
    the builtins it is elected for 1-task primaries and its jobs dispatch."""
    assert {ep.name for ep in entry_points(group="xce.allocators")} == {"tracer"}
    plugin = allocator_plugin()
    assert isinstance(plugin, AllocatorPlugin)
    registry = AllocatorRegistry((plugin, SeqJobAllocator(), ParJobAllocator()))
    state = ClusterBuilder().host("h0", slots=4).job("one").job("two", 2).build()
    result = Session(state, registry=registry).run()
    assert [type(d) for d in result.decisions] == [Dispatched, Dispatched]
    assert allocator_plugin.planned == [1]


def test_default_registry_puts_entry_point_allocators_first(allocator_plugin: Any) -> None:
    """``xce.alloc.default_registry()`` registers the ``xce.allocators`` entry points
    (each a class or factory called with no arguments) BEFORE the builtins, so a plugin
    can elect a primary the builtins would also take."""
    registry = default_registry()
    assert registry.names() == ["tracer", "seqjob", "parjob"]
    state = ClusterBuilder().host("h0", slots=4).build()
    one = prepare_requirement("", state.catalog, 1, 1).alternatives[0][0]
    assert isinstance(registry.elect(one), allocator_plugin)
    two = prepare_requirement("", state.catalog, 2, 2).alternatives[0][0]
    assert registry.elect(two).name == "parjob"


def test_a_session_elects_the_entry_point_allocator(allocator_plugin: Any) -> None:
    """A Session made without a registry (so with ``default_registry()``) uses the plugin."""
    state = ClusterBuilder().host("h0", slots=4).job("one").job("two", 2).build()
    result = Session(state).run()
    assert [type(d) for d in result.decisions] == [Dispatched, Dispatched]
    assert allocator_plugin.planned == [1]


def test_default_registry_without_plugins_is_the_builtins(allocator_plugin: Any) -> None:
    """``default_registry(plugins=False)`` (as ``default_pickers(plugins=False)``) skips
    the entry points."""
    assert default_registry(plugins=False).names() == ["seqjob", "parjob"]
