"""Output paths (issue 10, "A user's files overwritten" and "Output errors"): no command
writes onto an input or over a user's file without ``--force``; every output is checked
before the work and written whole (a temporary file renamed), and a failed write is
exit 2 with nothing left behind."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.cli import outputs
from xce.cli.main import app
from xce.cli.simulate_cmd import OUTPUT_FILES
from xce.errors import InputError, InternalError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
SMALL_SIM = ["--workload", "synthetic:20", "--hosts", "4", "--slots-per-host", "4"]


def xce(*args: str | Path) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(a) for a in args])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (hidden ones too) with its hash."""
    return {
        str(p.relative_to(directory)): digest(p)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def state_file(tmp_path: Path, name: str = "S.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(EXAMPLE.read_bytes())
    return path


def spellings(tmp_path: Path, target: Path) -> dict[str, str]:
    """Other names of ``target``: itself, ./ itself (from tmp_path), a symlink, a hard link."""
    (tmp_path / "link.yaml").symlink_to(target.name)
    os.link(target, tmp_path / "hard.yaml")
    return {
        "same": str(target),
        "dot": f"{tmp_path}/./{target.name}",
        "symlink": str(tmp_path / "link.yaml"),
        "hard link": str(tmp_path / "hard.yaml"),
    }


# --- never onto an input ------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["same", "dot", "symlink", "hard link"])
@pytest.mark.parametrize("force", [False, True])
def test_snapshot_never_overwrites_the_state_file(
    tmp_path: Path, spelling: str, force: bool
) -> None:
    """issue 10: ``xce schedule S --snapshot S`` replaced the input state (also as ./S);
    now refused, through any spelling or link, and --force does not change that."""
    state = state_file(tmp_path)
    out = spellings(tmp_path, state)[spelling]
    before = tree(tmp_path)
    result = xce("schedule", state, "--snapshot", out, *(["--force"] if force else []))
    assert result.exit_code == 2, result.output
    assert "--snapshot" in result.stderr
    assert "never writes over an input" in result.stderr
    assert tree(tmp_path) == before


@pytest.mark.parametrize("spelling", ["same", "dot", "symlink", "hard link"])
@pytest.mark.parametrize("force", [False, True])
def test_generate_never_overwrites_the_cluster_file(
    tmp_path: Path, spelling: str, force: bool
) -> None:
    """issue 10: ``xce workload generate --out F --cluster F`` replaced the cluster file."""
    cluster = state_file(tmp_path)
    names = spellings(tmp_path, cluster)
    before = tree(tmp_path)
    result = xce(
        "workload", "generate", "--jobs", "5", "--cluster", names["same"], "--out",
        names[spelling].replace(".yaml", ".yaml"), *(["--force"] if force else []),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--out" in result.stderr
    assert "never writes over an input" in result.stderr
    assert tree(tmp_path) == before


def test_simulate_never_writes_over_an_input_in_its_out_dir(tmp_path: Path) -> None:
    """issue 10: a --cluster file that is one of --out's file names is never replaced,
    with or without --force."""
    out = tmp_path / "out"
    out.mkdir()
    cluster = state_file(out, "metrics.json")
    cluster.write_text('{"hosts": [{"name": "h0", "slots": 4}]}', encoding="utf-8")
    before = tree(tmp_path)
    for force in ([], ["--force"]):
        result = xce(
            "simulate", "--workload", "synthetic:5", "--cluster", cluster, "--out", out, *force
        )
        assert result.exit_code == 2, result.output
        assert "is the input --cluster" in result.stderr
    assert tree(tmp_path) == before


# --- a user's files only with --force ----------------------------------------------------


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
@pytest.mark.parametrize("where", ["a file it reads", "a new file"])
# a new .json there would be read by the next import of the directory
def test_import_never_writes_into_an_input_directory(tmp_path: Path, kind: str, where: str) -> None:
    """A directory of captures is read whole (its ``*.json``): ``-o`` naming one of its
    files (or a new ``.json``, which the next import of it would read) is exit 2, with
    --force too, and the directory is left as it was; a ``.yaml`` there is written (found
    by a new user's run, 2026-12-07)."""
    data = Path(__file__).resolve().parent / "data" / kind
    source = next(d for d in sorted(data.iterdir()) if d.is_dir() and d.name != "golden")
    captures = tmp_path / "captures"
    captures.mkdir()
    for f in source.iterdir():
        if f.is_file():
            (captures / f.name).write_bytes(f.read_bytes())
    before = tree(captures)
    first = sorted(p.name for p in captures.iterdir())[0]
    target = captures / (first if where == "a file it reads" else "state.json")
    result = xce("import", kind, captures, "-o", target, "--force")
    assert result.exit_code == 2, result.output
    assert "is in the input directory" in result.output
    assert tree(captures) == before
    fine = captures / "state.yaml"  # not a file an import of the directory reads
    assert xce("import", kind, captures, "-o", fine).exit_code == 0
    assert fine.is_file()


@pytest.mark.parametrize("name", ["jobs.csv", "utilisation.png", "metrics.json"])
def test_simulate_out_keeps_a_users_files(tmp_path: Path, name: str) -> None:
    """issue 10: ``xce simulate --out DIR`` overwrote a jobs.csv or utilisation.png the
    user had there. Refused without --force; with --force only xce's own files change."""
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("the user's own\n", encoding="utf-8")
    (out / "notes.txt").write_text("untouched\n", encoding="utf-8")
    before = tree(tmp_path)
    result = xce("simulate", *SMALL_SIM, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"already holds {name}" in result.stderr
    assert "--force" in result.stderr
    assert tree(tmp_path) == before

    result = xce("simulate", *SMALL_SIM, "--out", out, "--force")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted([*OUTPUT_FILES, "notes.txt"])
    assert (out / "notes.txt").read_text(encoding="utf-8") == "untouched\n"
    assert (out / name).read_text(encoding="utf-8", errors="replace") != "the user's own\n"


def test_simulate_out_into_a_new_directory(tmp_path: Path) -> None:
    """--out DIR is created when missing, and receives exactly OUTPUT_FILES (no temporary
    file or staging directory left)."""
    out = tmp_path / "new"
    result = xce("simulate", *SMALL_SIM, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)


@pytest.mark.parametrize(
    ("command", "option", "name"),
    [
        (["schedule", EXAMPLE], "--snapshot", "after.json"),
        (["workload", "generate", "--jobs", "5"], "--out", "w.jsonl"),
    ],
    ids=["schedule --snapshot", "workload generate --out"],
)
def test_an_existing_file_is_replaced_only_with_force(
    tmp_path: Path, command: list[Any], option: str, name: str
) -> None:
    """issue 10: no pre-existing user file is changed without --force; with --force the
    file is replaced whole and keeps the usual permissions (not mkstemp's 0600)."""
    target = tmp_path / name
    target.write_text("mine\n", encoding="utf-8")
    result = xce(*command, option, target)
    assert result.exit_code == 2, result.output
    assert f"{option} {target} already exists" in result.stderr
    assert target.read_text(encoding="utf-8") == "mine\n"
    result = xce(*command, option, target, "--force")
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") != "mine\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


# --- checked before the work -------------------------------------------------------------

ALL_OUTPUTS = {
    "schedule --snapshot": (["schedule", EXAMPLE], "--snapshot"),
    "simulate --out": (["simulate", *SMALL_SIM], "--out"),
    "workload generate --out": (["workload", "generate", "--jobs", "5"], "--out"),
}
TARGETS = {
    "schedule --snapshot": "s.json",
    "simulate --out": "out",
    "workload generate --out": "w.jsonl",
}


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The long work of each command fails loudly: a check that comes after it would
    show as exit 1, not exit 2."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the work ran before the output check")

    monkeypatch.setattr("xce.core.SchedulerCore.run_session", boom)
    monkeypatch.setattr("xce.sim.engine.Simulation.run", boom)
    monkeypatch.setattr("xce.sim.generate.generate_workload", boom)


def bad_paths(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """A bad output path and what the message says, per case."""
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    return {
        "empty": ("", "an empty path"),
        "blank": ("  ", "an empty path"),
        "missing parent": (str(tmp_path / "absent" / "x.json"), "does not exist"),
        "parent is a file": (str(tmp_path / "file" / "x.json"), "is not a directory"),
    }


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("case", ["empty", "blank", "missing parent", "parent is a file"])
@pytest.mark.parametrize("output", list(ALL_OUTPUTS))
def test_bad_output_paths_exit_2_before_the_work(tmp_path: Path, output: str, case: str) -> None:
    """issue 10: ``--out ''`` was accepted; --snapshot into a missing directory failed
    after the whole run. Now exit 2 before the work, naming the option and the path."""
    command, option = ALL_OUTPUTS[output]
    path, words = bad_paths(tmp_path)[case]
    result = xce(*command, option, path)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"xce: error: {option}")
    assert words in result.stderr
    assert path.strip() == "" or path in result.stderr


@pytest.mark.usefixtures("no_work")
def test_a_snapshot_naming_a_directory_exits_2_before_the_work(tmp_path: Path) -> None:
    """issue 10: ``--snapshot`` naming a directory was unhandled."""
    result = xce("schedule", EXAMPLE, "--snapshot", tmp_path)
    assert result.exit_code == 2, result.output
    assert f"--snapshot {tmp_path} is a directory" in result.stderr


@pytest.mark.usefixtures("no_work")
def test_simulate_out_naming_a_file_exits_2_before_the_work(tmp_path: Path) -> None:
    """issue 10: ``--out`` naming a file failed after the whole run."""
    target = tmp_path / "results"
    target.write_text("x", encoding="utf-8")
    result = xce("simulate", *SMALL_SIM, "--out", target)
    assert result.exit_code == 2, result.output
    assert f"--out {target} is a file: expected a directory" in result.stderr


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("output", list(ALL_OUTPUTS))
def test_an_unwritable_place_exits_2_before_the_work(tmp_path: Path, output: str) -> None:
    """issue 10: a read-only place was unhandled. The check creates (and removes) a file
    there, so it holds for root and read-only mounts too: here mkstemp is made to fail
    as on a read-only file system."""
    command, option = ALL_OUTPUTS[output]
    target = tmp_path / TARGETS[output]
    real = outputs.tempfile.mkstemp

    def read_only(*args: Any, **kwargs: Any) -> Any:
        if Path(kwargs.get("dir", ".")).resolve() == tmp_path.resolve():
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(outputs.tempfile, "mkstemp", read_only)
        result = xce(*command, option, target)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"xce: error: {option} {target}: cannot write in")
    assert "Read-only file system" in result.stderr
    assert list(tmp_path.iterdir()) == []


# --- a failed write leaves nothing -------------------------------------------------------


def disk_full(*args: Any) -> None:
    """A writer that writes a little into its (last) path, then fails as on a full disk."""
    target = next(Path(a) for a in reversed(args) if isinstance(a, (str, Path)) and "/" in str(a))
    (target if target.suffix else target / "jobs.csv").write_text("half", encoding="utf-8")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(
    ("output", "writer"),
    [
        ("schedule --snapshot", "xce.core.write_state"),
        ("simulate --out", "xce.sim.plots.write_plots"),
        ("workload generate --out", "xce.sim.workload.write_jobs_file"),
    ],
)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "replacing"])
def test_a_full_disk_exits_2_and_leaves_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, writer: str, existing: bool
) -> None:
    """issue 10: a full disk while writing was unhandled (a traceback, a half file). Now
    exit 2 naming the option; the temporary file is gone and an existing target (with
    --force) is unchanged."""
    command, option = ALL_OUTPUTS[output]
    monkeypatch.setattr(writer, disk_full)
    target = tmp_path / TARGETS[output]
    if existing and output == "simulate --out":
        target.mkdir()
        (target / "jobs.csv").write_text("before\n", encoding="utf-8")
    elif existing:
        target.write_text("before\n", encoding="utf-8")
    before = tree(tmp_path)
    result = xce(*command, option, target, *(["--force"] if existing else []))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"xce: error: {option}: cannot write {target}")
    assert "No space left on device" in result.stderr
    after = tree(tmp_path)
    assert after == before
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


# --- the functions ----------------------------------------------------------------------


def test_write_file_keeps_the_old_file_when_the_writer_raises(tmp_path: Path) -> None:
    """Whole or not at all, also for an error that is not an OSError."""
    target = tmp_path / "x.json"
    target.write_text("old", encoding="utf-8")

    def failing(path: Path) -> None:
        path.write_text("half", encoding="utf-8")
        raise ValueError("bug")

    with pytest.raises(ValueError, match="bug"):
        outputs.write_file(target, "--x", failing, force=True)
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
    assert target.read_text(encoding="utf-8") == "old"


def test_write_file_gives_the_writer_the_targets_suffix(tmp_path: Path) -> None:
    """Writers that choose a format by suffix (write_state, write_jobs_file) still do."""
    seen: list[str] = []
    outputs.write_file(tmp_path / "a.yaml", "--x", lambda p: seen.append(p.suffix), force=False)
    assert seen == [".yaml"]


def test_write_dir_refuses_undeclared_files(tmp_path: Path) -> None:
    """A writer making a file --out does not declare is a bug, and nothing is published."""

    def write(staging: Path) -> None:
        (staging / "jobs.csv").write_text("a", encoding="utf-8")
        (staging / "surprise.txt").write_text("b", encoding="utf-8")

    with pytest.raises(InternalError, match=r"surprise\.txt"):
        outputs.write_dir(tmp_path, "--out", ("jobs.csv",), write, force=False)
    assert list(tmp_path.iterdir()) == []


def test_a_file_appearing_during_the_run_is_not_overwritten(tmp_path: Path) -> None:
    """The existence check is repeated at publish time (the run may take hours)."""
    target = tmp_path / "x.json"

    def write(path: Path) -> None:
        path.write_text("new", encoding="utf-8")
        target.write_text("appeared", encoding="utf-8")

    with pytest.raises(InputError, match="appeared during the run"):
        outputs.write_file(target, "--x", write, force=False)
    assert target.read_text(encoding="utf-8") == "appeared"


def test_a_dangling_symlink_counts_as_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "s.json").symlink_to(tmp_path / "absent")
    with pytest.raises(InputError, match="already exists"):
        outputs.check_file(tmp_path / "s.json", "--snapshot", [], force=False)


def test_a_snapshot_written_whole_loads_back(tmp_path: Path) -> None:
    """A snapshot written through write_file loads back (suffix kept, whole file)."""
    state = ClusterBuilder().host("h0", 2).job("a", 1).job("b", 4)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(state.to_dict()), encoding="utf-8")
    result = xce("schedule", path, "--snapshot", tmp_path / "after.yaml")
    assert result.exit_code == 0, result.output
    again = xce("schedule", tmp_path / "after.yaml", "--json")
    assert again.exit_code == 0, again.output


def test_write_state_is_whole_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 10 (written whole): the library's write_state renames a complete temporary
    file over the target; a failure leaves the old file and no temporary file."""
    from xce.cluster import load_state
    from xce.core import snapshot

    state = load_state(EXAMPLE)
    target = tmp_path / "s.yaml"
    target.write_text("old", encoding="utf-8")

    def broken(data: Any, suffix: str) -> bytes:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(snapshot, "_payload", broken)
    with pytest.raises(OSError, match="No space"):
        snapshot.write_state(state, target)
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]
    assert target.read_text(encoding="utf-8") == "old"
    monkeypatch.undo()
    snapshot.write_state(state, target)
    assert load_state(target).hosts.names == state.hosts.names
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]
