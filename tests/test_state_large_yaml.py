"""Large YAML states (issue 26): a 50 MB state with an error on its last line exits 2 with
the error located, under a 3 GB address-space limit (it ended in a MemoryError: PyYAML's
node tree of the whole text costs about 70 times the text).

The CI cases measure the loader's peak memory (tracemalloc) against the file's size on a
state of half a megabyte — the old loader peaked at 58 to 79 times the size, the
streaming one at about 16 — and check that the error is located where it is. The 50 MB case runs
``xce schedule`` in a subprocess under ``RLIMIT_AS`` and is marked slow. Also here: the
streaming reader gives the data PyYAML's safe loader gives (anchors shared, merge keys,
tags), and locates errors inside the entries it did not keep.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from xce.cluster import load_state, state_from_text
from xce.cluster.yaml_stream import Loader, parse
from xce.errors import StateError

PEAK_PER_BYTE = 30
"""The loader's peak (tracemalloc) at most this many times the file's size: with the node
tree of the whole text, as the old loader kept it, 58 to 79 times; streaming, about 16."""


@dataclass(frozen=True)
class Last:
    """An error on the last line(s) of a generated state: ``tail`` ends the jobs list,
    the error is at ``line_from_end`` lines before the end (0: the last), at ``path``
    (``{n}``: the index of the last entry) and says ``says``."""

    id: str
    tail: str
    path: str | None
    says: str
    line_from_end: int = 0


LAST = [
    Last("schema", "- id: last\n  tasks: abc\n", "jobs[{n}].tasks", 'got "abc"'),
    Last("syntax", "- id: last\n  tasks: [3\n", None, "YAML syntax error"),
    Last("duplicate-key", "- id: last\n  id: again\n", "jobs[{n}].id", 'duplicate key "id"'),
    Last(
        "too-deep",
        "- id: last\n  x: " + "[" * 120 + "]" * 120 + "\n",
        None,
        "nested deeper than 100 levels",
    ),
    Last("duplicate-id", "- id: j0\n  tasks: 1\n", "jobs[{n}].id", "duplicate job id", 1),
]


def _state(path: Path, size: int, tail: str) -> int:
    """A block-style state of about ``size`` bytes (100 hosts, short job entries: many
    nodes per byte), ending with ``tail``; the index of the last jobs entry."""
    with path.open("w", encoding="utf-8") as f:
        f.write("hosts:\n")
        f.writelines(f"- name: h{i}\n  slots: 16\n" for i in range(100))
        f.write("jobs:\n")
        written = i = 0
        while written < size:
            entry = f"- id: j{i}\n  tasks: {1 + i % 8}\n  submit_time: {i}\n"
            f.write(entry)
            written += len(entry)
            i += 1
        f.write(tail)
    return i


def _lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def _expected_line(path: Path, case: Last) -> int:
    lines = _lines(path)
    if case.id == "syntax":  # libyaml notices the unclosed list at the end of the text
        return lines + 1
    return lines - case.line_from_end


@pytest.mark.parametrize("case", LAST, ids=lambda c: c.id)
def test_error_on_the_last_line_is_located_in_bounded_memory(tmp_path: Path, case: Last) -> None:
    """issue 26: a state of half a megabyte with an error at its end: the StateError names the
    file, the line and the path, and the load's peak memory stays within PEAK_PER_BYTE
    times the file's size (the old loader's node tree was about 73 times)."""
    path = tmp_path / "big.yaml"
    n = _state(path, 1 << 19, case.tail)
    started = tracemalloc.is_tracing()
    if not started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        with pytest.raises(StateError) as info:
            load_state(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not started:
            tracemalloc.stop()
    err = info.value
    assert err.source == str(path)
    assert err.line == _expected_line(path, case), str(err)
    assert case.says in err.message, str(err)
    if case.path is not None:
        assert err.path == case.path.format(n=n), str(err)
    assert peak <= PEAK_PER_BYTE * path.stat().st_size, (peak, path.stat().st_size)


def test_a_lenient_load_locates_every_bad_entry_of_a_large_state(tmp_path: Path) -> None:
    """issue 26: entries a lenient load leaves out are located one by one (composed again
    from the text in one reading), at their own lines."""
    path = tmp_path / "big.yaml"
    tail = "- id: bad1\n  tasks: x\n- id: ok\n  tasks: 1\n- id: bad2\n  tasks: -3\n"
    n = _state(path, 200_000, tail)
    lines = _lines(path)
    got = load_state(path, lenient=True)
    assert [(i.id, i.order, i.error.line, i.error.path) for i in got.invalid] == [
        ("bad1", n, lines - 4, f"jobs[{n}].tasks"),
        ("bad2", n + 2, lines, f"jobs[{n + 2}].tasks"),
    ]
    assert got.state.jobs[-1].id == "ok"


def _limit_address_space() -> None:
    limit = 3_000_000 * 1024  # ulimit -v 3000000 (KiB)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.slow
def test_50_mb_state_with_an_error_on_its_last_line_exits_2_under_3_gb(tmp_path: Path) -> None:
    """issue 26, as reported: ``ulimit -v 3000000; xce schedule big.yaml`` on a 50 MB state
    whose last line is bad exits 2 naming the file, line and path (was a MemoryError)."""
    path = tmp_path / "big.yaml"
    n = _state(path, 50 << 20, LAST[0].tail)
    code = "import sys; from xce.cli.main import main; sys.argv[0] = 'xce'; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "schedule", str(path), "--json"],
        capture_output=True,
        text=True,
        preexec_fn=_limit_address_space,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{path}:{_lines(path)}:" in result.stderr
    assert f"jobs[{n}].tasks" in result.stderr
    assert "MemoryError" not in result.stderr


# -- the streaming reader reads what PyYAML's safe loader reads --------------------------------

SAME = {
    "anchors across entries": "x: &a [1, 2]\njobs:\n- {id: a, y: *a}\n- {id: b, y: *a}\n",
    "anchor in an entry, alias in a later one": "jobs:\n- {y: &q {k: 1}}\n- {y: *q}\n",
    "merge keys": "base: &b {slots: 2}\nhosts:\n- {name: a, <<: *b}\n- {<<: *b, name: c}\n",
    "merge of a list of mappings": "a: &a {p: 1}\nb: &b {q: 2}\nl:\n- {<<: [*a, *b], r: 3}\n",
    "an anchored list is not streamed": "jobs: &j\n- {id: a}\nagain: *j\n",
    "tagged list": "s: !!omap [{a: 1}, {b: 2}]\nt: !!set {a, b}\n",
    "flow root": "{hosts: [{name: a, slots: 1}], jobs: [{id: j}]}\n",
    "list root": "- 1\n- [2, 3]\n",
    "scalar root": "just text\n",
    "empty": "",
    "explicit document": "--- \nhosts: []\n...\n",
    "non-string keys": "1: a\n? x\n: b\nnull: c\ntrue: d\n",
    "recursive alias": "a: &r [1, *r]\n",
    "yaml 1.2 floats and long ints": "a: 1e6\nb: " + "9" * 4500 + "\n",
}


def _load(text: str) -> Any:
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


@pytest.mark.parametrize("text", SAME.values(), ids=SAME.keys())
def test_streaming_reads_what_the_safe_loader_reads(text: str) -> None:
    """issue 26: the same data as PyYAML's safe loader (with xce's floats and long
    ints)."""
    got, want = parse(text).data, _load(text)
    if "recursive" in text or "&r" in text:
        assert repr(got) == repr(want)  # a list holding itself compares by its shape
    else:
        assert got == want


def test_an_alias_stays_one_object_across_entries() -> None:
    """issue 26: an alias in a later entry is the anchored object itself (not a copy), so
    that many aliases of one large list cost nothing, as before — also through a merge
    key, whose pairs come from the anchored mapping."""
    text = "x: &a [1, 2]\nm: &m {big: [3]}\njobs:\n- {y: *a}\n- {y: *a, <<: *m}\n- {<<: *m}\n"
    data = parse(text).data
    assert data["jobs"][0]["y"] is data["x"] is data["jobs"][1]["y"]
    assert data["jobs"][1]["big"] is data["m"]["big"] is data["jobs"][2]["big"]


LOCATED = [
    # (text, line, column, path)
    (
        "hosts:\n- {name: a, slots: 1, attributes: &b {slots: x}}\n- {name: c, <<: *b}\n",
        2,
        46,
        "hosts[1].slots",
    ),
    ("hosts:\n- name: a\n  slots: 1\n- name: b\n  slots: -1\n", 5, 10, "hosts[1].slots"),
    ("jobs:\n- {id: a}\n- {id: b, tasks: 1, tasks: 2}\n", 3, 21, "jobs[1].tasks"),
    ("jobs:\n- {id: a, tasks: &t 1}\n- {id: b, min_tasks: *t, nope: 1}\n", 3, 26, "jobs[1].nope"),
    ("hosts: []\nhosts: []\n", 2, 1, "hosts"),
]


@pytest.mark.parametrize(("text", "line", "column", "path"), LOCATED)
def test_errors_inside_streamed_entries_are_located(
    text: str, line: int, column: int, path: str
) -> None:
    """issue 26: an error inside an entry the first reading did not keep is located at
    its line and column (a merged key where the anchored mapping writes it)."""
    with pytest.raises(StateError) as info:
        state_from_text(text, "<t>")
    err = info.value
    assert (err.line, err.column, err.path) == (line, column, path), str(err)


def test_json_report_of_the_lenient_load_is_unchanged_by_streaming(tmp_path: Path) -> None:
    """issue 26: a lenient load of a YAML state shows each bad entry as written (an
    alias to an earlier entry's list as the list), located, as before."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "hosts: [{name: h, slots: 2}]\njobs:\n- {id: a, x: &l [1]}\n- {id: b, y: *l, tasks: z}\n",
        encoding="utf-8",
    )
    got = load_state(path, lenient=True)
    assert [(i.id, i.error.line, i.error.path) for i in got.invalid] == [
        ("a", 3, "jobs[0].x"),
        ("b", 4, "jobs[1].y"),
    ]
    assert json.loads(json.dumps(got.invalid[1].entry)) == {"id": "b", "y": [1], "tasks": "z"}


def test_the_safe_loader_is_what_pyyaml_calls_safe() -> None:
    """The streaming reader's constructor is PyYAML's safe one: no Python objects."""
    with pytest.raises(StateError, match="could not determine a constructor"):
        state_from_text("a: !!python/object:os.system {}\n")
    assert issubclass(Loader, yaml.constructor.SafeConstructor)
