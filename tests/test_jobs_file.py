"""Jobs files (``xce.sim.workload``): the ``jobs`` list of a state file plus ``runtime``,
as YAML, JSON or JSONL, for workloads that need full requirement strings.

Issue 5, Workloads: "A jobs file (YAML/JSON/JSONL, the `jobs` list of design §4 plus
`runtime`) for workloads that need full requirement strings (compound, alternative,
select, licenses)."
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xce.errors import InputError
from xce.sim.generate import generate_workload
from xce.sim.model import SimJob
from xce.sim.workload import is_swf, load_jobs_file, load_workload, write_jobs_file

SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")

COMPOUND = "2*{select[type==X86_64] rusage[mem=100]} + 4*{select[mem>1000]}"
ALTERNATIVE = "{select[type==X86_64] rusage[mem=1000]} || {select[type==ARM] rusage[mem=2000]}"

# The same three jobs written by hand in each format.
HAND_WRITTEN = {
    ".yaml": f"""# a comment
jobs:
  - id: 1
    user: alice
    queue: high
    project: climate
    tasks: 4
    resreq: "select[type==X86_64] span[ptile=2] rusage[mem=2000:lic_x=1]"
    submit_time: 0
    runtime: 3600
    requested_time: 7200
  - {{id: two, resreq: "{COMPOUND}", submit_time: 10.5, runtime: 0}}
  - {{id: 3, tasks: 2, resreq: "{ALTERNATIVE}", submit_time: 20, runtime: 60}}
""",
    ".json": json.dumps(
        {
            "jobs": [
                {
                    "id": 1,
                    "user": "alice",
                    "queue": "high",
                    "project": "climate",
                    "tasks": 4,
                    "resreq": "select[type==X86_64] span[ptile=2] rusage[mem=2000:lic_x=1]",
                    "submit_time": 0,
                    "runtime": 3600,
                    "requested_time": 7200,
                },
                {"id": "two", "resreq": COMPOUND, "submit_time": 10.5, "runtime": 0},
                {"id": 3, "tasks": 2, "resreq": ALTERNATIVE, "submit_time": 20, "runtime": 60},
            ]
        },
        indent=1,
    ),
    ".jsonl": "\n".join(
        [
            json.dumps(
                {
                    "id": 1,
                    "user": "alice",
                    "queue": "high",
                    "project": "climate",
                    "tasks": 4,
                    "resreq": "select[type==X86_64] span[ptile=2] rusage[mem=2000:lic_x=1]",
                    "submit_time": 0,
                    "runtime": 3600,
                    "requested_time": 7200,
                }
            ),
            "",  # blank lines are allowed
            json.dumps({"id": "two", "resreq": COMPOUND, "submit_time": 10.5, "runtime": 0}),
            json.dumps(
                {"id": 3, "tasks": 2, "resreq": ALTERNATIVE, "submit_time": 20, "runtime": 60}
            ),
        ]
    )
    + "\n",
}

EXPECTED = [
    SimJob(
        "1",
        0.0,
        3600.0,
        4,
        user="alice",
        queue="high",
        project="climate",
        resreq="select[type==X86_64] span[ptile=2] rusage[mem=2000:lic_x=1]",
        requested_time=7200.0,
    ),
    SimJob("two", 10.5, 0.0, None, resreq=COMPOUND),  # defaults; no tasks: the compound's
    SimJob("3", 20.0, 60.0, 2, resreq=ALTERNATIVE),
]


@pytest.mark.parametrize("suffix", list(HAND_WRITTEN))
def test_hand_written_files(tmp_path: Path, suffix: str) -> None:
    """Every key is read; ids become strings; user/queue/project default to nobody,
    normal, default; a job without ``tasks`` leaves it to its requirement."""
    path = tmp_path / f"jobs{suffix}"
    path.write_text(HAND_WRITTEN[suffix], encoding="utf-8")
    assert load_jobs_file(path) == EXPECTED
    assert load_workload(path) == (EXPECTED, None)


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("seed", [0, 7])
def test_generated_workloads_round_trip(tmp_path: Path, suffix: str, seed: int) -> None:
    """What the generator writes, the loader reads back job for job (the full mix:
    compound, alternative, select, licences, requested times)."""
    jobs = generate_workload(150, seed=seed)
    path = tmp_path / f"w{suffix}"
    write_jobs_file(jobs, path)
    assert load_jobs_file(path) == jobs


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_rewriting_what_was_read_gives_the_same_bytes(tmp_path: Path, suffix: str) -> None:
    jobs = generate_workload(60, seed=3)
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    write_jobs_file(jobs, first)
    write_jobs_file(load_jobs_file(first), second)
    assert first.read_bytes() == second.read_bytes()


def test_file_order_is_kept(tmp_path: Path) -> None:
    """Jobs come back in file order, even when their submit times are not sorted (the
    engine orders submissions by time)."""
    rows = [{"id": i, "tasks": 1, "submit_time": 100 - i, "runtime": 1} for i in range(5)]
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [j.id for j in load_jobs_file(path)] == ["0", "1", "2", "3", "4"]


def test_other_state_sections_are_allowed(tmp_path: Path) -> None:
    """A jobs file is a state file's job list: a whole state file loads too (its hosts are
    not the simulated cluster's business here)."""
    path = tmp_path / "state.yaml"
    path.write_text(
        "hosts: [{name: h0, slots: 2}]\njobs:\n  - {id: 1, tasks: 2, runtime: 5}\n",
        encoding="utf-8",
    )
    assert load_jobs_file(path) == [SimJob("1", 0.0, 5.0, 2)]


def test_an_empty_jsonl_file_has_no_jobs(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert load_jobs_file(path) == []


# --- errors ----------------------------------------------------------------------------

MISSING_RUNTIME = {
    ".yaml": "jobs:\n  - {id: 1, tasks: 1, runtime: 5}\n  - {id: late, tasks: 1}\n",
    ".json": '{"jobs": [{"id": 1, "runtime": 5}, {"id": "late"}]}\n',
}


@pytest.mark.parametrize("suffix", list(MISSING_RUNTIME))
def test_a_job_without_runtime_is_an_error_naming_it(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"w{suffix}"
    path.write_text(MISSING_RUNTIME[suffix], encoding="utf-8")
    with pytest.raises(InputError, match="needs a runtime") as caught:
        load_jobs_file(path)
    err = caught.value
    assert (err.source, err.path) == (str(path), "jobs[1]")
    assert str(err).startswith(f"{path}:{err.line}: jobs[1]: ")


def test_a_job_without_runtime_names_its_line_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(MISSING_RUNTIME[".yaml"], encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_jobs_file(path)
    assert caught.value.line == 3


def test_a_jsonl_job_without_runtime_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text('{"id": 1, "runtime": 5}\n\n{"id": "late", "tasks": 2}\n', encoding="utf-8")
    with pytest.raises(InputError, match="needs a runtime") as caught:
        load_jobs_file(path)
    assert (caught.value.line, caught.value.path) == (3, "job")
    assert f"{path}:3" in str(caught.value)


JSONL_ERRORS = {
    # name: (the bad line, its path, words of the message)
    "not JSON": ('{"id": 2, "runtime": }', None, "not JSON"),
    "not an object": ("[1, 2]", "job", "expected a mapping"),
    "unknown key": ('{"id": 2, "runtime": 5, "colour": "red"}', "job.colour", "unknown key"),
    "negative runtime": ('{"id": 2, "runtime": -5}', "job.runtime", ">= 0"),
    "runtime not a number": ('{"id": 2, "runtime": "soon"}', "job.runtime", "number"),
    "negative requested time": (
        '{"id": 2, "runtime": 5, "requested_time": -1}',
        "job.requested_time",
        ">= 0",
    ),
}


@pytest.mark.parametrize(
    ("bad", "where", "message"), list(JSONL_ERRORS.values()), ids=list(JSONL_ERRORS)
)
def test_jsonl_errors_name_the_line(
    tmp_path: Path, bad: str, where: str | None, message: str
) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"id": 1, "runtime": 5}\n' + bad + '\n{"id": 3, "runtime": 5}\n', encoding="utf-8"
    )
    with pytest.raises(InputError) as caught:
        load_jobs_file(path)
    err = caught.value
    assert (err.source, err.line, err.text, err.path) == (str(path), 2, bad, where)
    assert message in err.message
    assert str(err).startswith(f"{path}:2")


def test_jsonl_not_json_points_at_the_column(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text('{"id": 2, "runtime": }\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_jobs_file(path)
    assert caught.value.column == 22
    assert caught.value.context().endswith(" " * 21 + "^")


def test_jsonl_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text('{"id": 1, "runtime": 5}\n{"id": "1", "runtime": 5}\n', encoding="utf-8")
    with pytest.raises(InputError, match="unique") as caught:
        load_jobs_file(path)
    assert caught.value.source == str(path)


YAML_ERRORS = {
    # name: (text, line, path, words of the message)
    "runtime not a number": (
        "jobs:\n  - {id: 1, runtime: 5}\n  - {id: 2, runtime: soon}\n",
        3,
        "jobs[1].runtime",
        "number",
    ),
    "duplicate id": (
        "jobs:\n  - {id: 1, runtime: 5}\n  - {id: 1, runtime: 5}\n",
        3,
        "jobs[1].id",
        "duplicate",
    ),
    "jobs not a list": ("jobs: 5\n", 1, "jobs", "expected a list"),
}


@pytest.mark.parametrize(
    ("text", "line", "where", "message"), list(YAML_ERRORS.values()), ids=list(YAML_ERRORS)
)
def test_yaml_errors_name_the_line_and_path(
    tmp_path: Path, text: str, line: int, where: str, message: str
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_jobs_file(path)
    err = caught.value
    assert (err.source, err.line, err.path) == (str(path), line, where)
    assert message in err.message


@pytest.mark.parametrize("name", ["w.txt", "w.csv", "w", "w.yaml.bak", "w.swf.bz2"])
def test_unknown_extension_is_an_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("jobs: []\n", encoding="utf-8")
    for load in (load_jobs_file, load_workload):
        with pytest.raises(InputError, match=r"unknown jobs file type.*\.jsonl") as caught:
            load(path)
        assert caught.value.source == str(path)


@pytest.mark.parametrize(("name", "swf"), [("t.swf", True), ("t.swf.gz", True), ("t.jsonl", False)])
def test_swf_or_jobs_file_by_name(name: str, swf: bool) -> None:
    assert is_swf(name) == swf


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(InputError, match="cannot read the jobs file") as caught:
        load_jobs_file(path)
    assert caught.value.source == str(path)


@pytest.mark.parametrize(
    "row",
    ['{"id": 1, "submit_time": NaN, "runtime": 5}', '{"id": 1, "runtime": Infinity}'],
)
def test_non_finite_times_are_errors(tmp_path: Path, row: str) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(row + "\n", encoding="utf-8")
    with pytest.raises(InputError):
        load_jobs_file(path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_requested_time_round_trips(tmp_path: Path, suffix: str) -> None:
    """Issue 12: the walltime estimate survives write and read in every format, whole,
    fractional or absent."""
    jobs = [
        SimJob("a", 0.0, 10.0, 1, requested_time=3600.0),
        SimJob("b", 1.0, 10.0, 1, requested_time=0.25),
        SimJob("c", 2.0, 10.0, 1),
    ]
    path = tmp_path / f"w{suffix}"
    write_jobs_file(jobs, path)
    loaded = load_jobs_file(path)
    assert loaded == jobs
    assert [j.requested_time for j in loaded] == [3600.0, 0.25, None]


def test_a_job_naming_a_reservation_is_refused_not_dropped(tmp_path: Path) -> None:
    """Issue 12: a replay's job cannot name a reservation (the cluster's reservations
    hold, for whom they list), so a job naming one is an error at its ``reservation``
    rather than a job silently run outside it."""
    path = tmp_path / "w.yaml"
    path.write_text(
        "hosts: [{name: h0, slots: 2}]\n"
        "reservations: [{name: r, hosts: [h0], start: 0, end: 10}]\n"
        "jobs:\n  - {id: 1, runtime: 5}\n  - {id: 2, runtime: 5, reservation: r}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        load_jobs_file(path)
    assert info.value.path == "jobs[1].reservation"
    assert info.value.line == 5
    assert "the --cluster file's reservations hold in a replay" in info.value.message


def test_a_jsonl_job_naming_an_unknown_reservation_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"id": 1, "runtime": 5}\n{"id": 2, "runtime": 5, "reservation": "r"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        load_jobs_file(path)
    assert info.value.line == 2
    assert "unknown reservation" in info.value.message
    # not a typo to look for: a replay's jobs file may name no reservation at all
    assert "the --cluster file's reservations hold in a replay" in info.value.message
