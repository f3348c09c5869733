"""The host table's columns: values, what missing looks like, read-only views, free()."""

from __future__ import annotations

import math

import numpy as np
import pytest

from builders import ClusterBuilder
from xce.cluster import ClusterState, HostStatus


def _cluster() -> ClusterState:
    return (
        ClusterBuilder()
        .resource("scratch", "consumable")
        .host("a", slots=4, mem=1000, type="X86_64", fast=True, attributes={"cpuf": 2.5})
        .host("b", slots=8, type="ARM", status="closed")
        .host("c", slots=2, mem=500, swp=50, attributes={"cpuf": 1}, status="unavail")
        .shared("lic", 4)
        .running("r1", on={"a": 3}, rusage={"mem": 100}, shared={"lic": 1})
        .running("r2", on={"a": 1, "c": 2}, rusage={"mem": 50})
        .build()
    )


def _same(actual: np.ndarray, expected: list[object]) -> bool:
    """Element-wise equality where NaN equals NaN."""
    return all(
        (isinstance(x, float) and math.isnan(x) and isinstance(y, float) and math.isnan(y))
        or x == y
        for x, y in zip(actual.tolist(), expected, strict=True)
    )


def test_names_index_status() -> None:
    hosts = _cluster().hosts
    assert (hosts.names, hosts.n, len(hosts)) == (["a", "b", "c"], 3, 3)
    assert hosts.index == {"a": 0, "b": 1, "c": 2}
    assert hosts.status.dtype == np.int8
    assert hosts.status.tolist() == [HostStatus.OK, HostStatus.CLOSED, HostStatus.UNAVAIL]
    assert hosts.ok().tolist() == [True, False, False]


NAN = float("nan")


@pytest.mark.parametrize(
    ("group", "name", "expected"),
    [
        ("capacity", "slots", [4.0, 8.0, 2.0]),
        ("capacity", "mem", [1000.0, NAN, 500.0]),
        ("capacity", "swp", [NAN, NAN, 50.0]),
        ("capacity", "scratch", [NAN, NAN, NAN]),  # declared, on no host
        ("numeric", "cpuf", [2.5, NAN, 1.0]),
        ("strings", "type", ["X86_64", "ARM", None]),
        ("strings", "hname", ["a", "b", "c"]),
        ("tags", "fast", [True, False, False]),
    ],
)
def test_columns_and_missing_values(group: str, name: str, expected: list[object]) -> None:
    column = getattr(_cluster().hosts, group)[name]
    assert _same(column, expected)


def test_column_dtypes() -> None:
    hosts = _cluster().hosts
    assert hosts.capacity["mem"].dtype == np.float64
    assert hosts.numeric["cpuf"].dtype == np.float64
    assert hosts.strings["type"].dtype == object
    assert hosts.tags["fast"].dtype == np.bool_


@pytest.mark.parametrize(
    ("group", "name"),
    [("capacity", "mem"), ("numeric", "cpuf"), ("strings", "type"), ("tags", "fast")],
)
def test_columns_are_read_only(group: str, name: str) -> None:
    column = getattr(_cluster().hosts, group)[name]
    with pytest.raises(ValueError, match="read-only"):
        column[0] = column[1]


def test_status_is_read_only_but_settable() -> None:
    hosts = _cluster().hosts
    with pytest.raises(ValueError, match="read-only"):
        hosts.status[0] = HostStatus.CLOSED
    hosts.set_status(0, HostStatus.UNAVAIL)
    hosts.set_status(1, HostStatus.OK)
    assert hosts.status.tolist() == [2, 0, 2]


def test_set_capacity() -> None:
    state = _cluster()
    state.hosts.set_capacity(1, "mem", 2000)
    assert state.hosts.capacity["mem"].tolist()[1] == 2000
    assert state.free("mem")[1] == 2000
    with pytest.raises(KeyError):
        state.hosts.set_capacity(0, "cpuf", 3.0)
    with pytest.raises(ValueError):
        state.hosts.set_capacity(0, "mem", -1)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("slots", [0.0, 8.0, 0.0]),
        ("mem", [1000.0 - 300 - 50, NAN, 500.0 - 100]),
        ("swp", [NAN, NAN, 50.0]),
    ],
)
def test_free_is_capacity_minus_running(name: str, expected: list[object]) -> None:
    assert _same(_cluster().free(name), expected)


def test_shared_books() -> None:
    state = _cluster()
    assert (state.shared_total, state.shared_held("lic")) == ({"lic": 4.0}, 1.0)
    assert state.shared_free("lic") == 3.0


def test_host_status_parse() -> None:
    assert [HostStatus.parse(s) for s in ("ok", "closed", "unavail")] == list(HostStatus)


def test_large_table_builds() -> None:
    hosts = ClusterBuilder().hosts(5000, slots=16, mem=64000, type="X86_64").build().hosts
    assert hosts.n == 5000
    assert hosts.index["h4999"] == 4999
    assert float(hosts.capacity["slots"].sum()) == 80000.0
