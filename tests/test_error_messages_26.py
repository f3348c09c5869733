"""Messages a new user tripped over (issue 26).

- A LIMIT pend reason for a span said "the hosts' headroom holds 9 of the 8 task(s)
  wanted, as span[ptile=3] asks": more than wanted, and yet pending. It now says what
  the span needs (hosts with room for ``ptile`` tasks, one host for all of them) and what
  the limit's headroom gives.
- ``xce simulate --workload ''`` and ``--cluster`` naming a missing file gave errors
  naming neither the option nor the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.alloc import Pending, PendReason
from xce.cli.main import app
from xce.core import Session

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@dataclass(frozen=True)
class Shape:
    """Hosts of 4 slots under a per-host limit of 3 slots for alice, ``used[h]`` of
    them already taken by her running jobs; her job ``j`` of ``tasks`` tasks asks
    ``resreq``."""

    id: str
    hosts: int
    used: tuple[int, ...]
    tasks: int
    resreq: str
    says: tuple[str, ...]


SHAPES = [
    Shape(
        "ptile: too few hosts take a full tile",
        4,
        (0, 1, 1, 1),
        8,
        "span[ptile=3]",
        (
            "8 task(s) at span[ptile=3] need 2 host(s) with headroom for 3 task(s) "
            "and one more for 2",
            "only 1 host(s) have room for 3",
            "the headroom holds 9 task(s) in all, not in that shape",
        ),
    ),
    Shape(
        "ptile: the tiles fit, the rest does not",
        3,
        (0, 2, 2),
        5,
        "span[ptile=3]",
        (
            "need 1 host(s) with headroom for 3 task(s) and one more for 2",
            "1 host(s) have room for 3 and no other for 2",
        ),
    ),
    Shape(
        "hosts=1: no host has room for all",
        2,
        (1, 1),
        3,
        "span[hosts=1]",
        (
            "span[hosts=1] needs room for all 3 task(s) on one host; the most is 2",
            "holds 4 task(s) in all",
        ),
    ),
]


def _limited(shape: Shape) -> ClusterBuilder:
    b = ClusterBuilder().hosts(shape.hosts, slots=4)
    b = b.limit("alice_per_host", users=["alice"], per_host=True, slots=3)
    for h, used in enumerate(shape.used):
        if used:
            b = b.running(f"r{h}", on={f"h{h}": used}, user="alice")
    return b.job("j", shape.tasks, user="alice", resreq=shape.resreq)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_a_limit_that_breaks_the_span_says_what_the_span_needs(shape: Shape) -> None:
    """issue 26: the headroom is enough in total but not in the span's shape; the message
    says what the shape needs and what there is, never "9 of the 8 wanted"."""
    decisions = {d.job: d for d in Session(_limited(shape).build()).run().decisions}
    got = decisions["j"]
    assert isinstance(got, Pending), got
    assert got.info.reason is PendReason.LIMIT
    assert got.info.limits == ("alice_per_host",)
    message = got.info.message
    assert message.startswith("limit 'alice_per_host' (per host: 3 slots): "), message
    for part in shape.says:
        assert part in message, message
    assert "task(s) wanted" not in message, message


def test_a_limit_short_in_total_keeps_its_message() -> None:
    """The total case was clear and stays as it was."""
    b = (
        ClusterBuilder()
        .hosts(2, slots=4)
        .limit("alice_per_host", users=["alice"], per_host=True, slots=1)
        .running("r", on={"h1": 1}, user="alice")
        .job("j", 2, user="alice")
    )
    got = {d.job: d for d in Session(b.build()).run().decisions}["j"]
    assert isinstance(got, Pending)
    assert got.info.message.endswith("the hosts' headroom holds 1 of the 2 task(s) wanted, in all")


def _simulate(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["simulate", *args])
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--workload", "", "--cluster", str(EXAMPLES / "cluster.yaml")], ("--workload", "''")),
        (
            ["--workload", str(EXAMPLES / "workload.jsonl"), "--cluster", "nope.yaml"],
            ("--cluster", "nope.yaml"),
        ),
        (
            ["--workload", "nope.jsonl", "--cluster", str(EXAMPLES / "cluster.yaml")],
            ("--workload", "nope.jsonl"),
        ),
    ],
    ids=["empty-workload", "missing-cluster", "missing-workload"],
)
def test_a_bad_input_file_option_is_named_with_its_file(
    args: list[str], names: tuple[str, ...]
) -> None:
    """issue 26: exit 2, and the message names the option and the file (an empty name
    shown as ``''``), before anything is read."""
    code, stderr = _simulate(*args)
    assert code == 2, stderr
    for name in names:
        assert name in stderr, stderr


@pytest.mark.parametrize("what", ["file", "--workload file", "--cluster state file"])
def test_an_empty_file_name_is_said_to_be_one(what: str) -> None:
    """issue 26: ``check_input_file('')`` says the name is empty, naming what it is for
    (an error whose file is '' showed no file at all: 'cannot read the file')."""
    from xce.errors import InputError
    from xce.inputs import check_input_file

    with pytest.raises(InputError) as info:
        check_input_file("", what=what)
    assert str(info.value) == f"the {what} is named '' (an empty name)"
