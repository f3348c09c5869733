"""LSF's defaults in the requirement language: ``type==local`` and the load indices.

LSF writes ``select[type == local] order[r15s:pg]`` into every job that asks nothing
else, so an imported LSF state is full of it; it must be valid on any xce cluster and
mean what LSF means as far as a state can say (docs/import-lsf.md, "LSF's defaults").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.alloc.outcome import Dispatched
from xce.cli.main import app
from xce.cluster import state_from_dict
from xce.cluster.catalog import LOAD_INDICES, ResourceCatalog, ResourceDef, ResourceKind
from xce.core import Session
from xce.core.snapshot import state_to_dict
from xce.errors import ResreqError
from xce.resreq import PrimaryResreq, compile_select, parse, requirement_for_job

EXAMPLE = Path(__file__).parent.parent / "examples" / "cluster.yaml"


def state(**host_attributes: Any) -> Any:
    """Three hosts (two X86_64, one ARM), the first given ``host_attributes``."""
    return (
        ClusterBuilder()
        .host("a", 4, mem=1000, type="X86_64", attributes=host_attributes or None)
        .host("b", 4, mem=1000, type="X86_64")
        .host("c", 4, mem=1000, type="ARM")
        .build()
    )


def mask(text: str, st: Any) -> list[bool]:
    """The select of ``text`` on every host of ``st`` (nothing charged)."""
    r = parse(f"select[{text}]")
    assert isinstance(r, PrimaryResreq)
    assert r.select is not None
    view = _View(st)
    return [bool(x) for x in compile_select(r.select, st.catalog).evaluate(view)]


class _View:
    """Availability = capacity: what a select sees before anything is handed out."""

    def __init__(self, st: Any) -> None:
        self.hosts = st.hosts

    def available(self, name: str) -> Any:
        return np.asarray(self.hosts.capacity[name])

    def shared_available(self, name: str) -> float:
        return 0.0

    def shared_total(self, name: str) -> float:
        return 0.0


# --- type == local ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("type == local", [True, True, True]),  # the submission host is unknown: every host
        ("local == type", [True, True, True]),
        ("type != local", [False, False, False]),
        ("model == local", [True, True, True]),  # no host has a model: still every host
        ("type == local && mem > 500", [True, True, True]),
        ("type == local && type == ARM", [False, False, True]),
        ("type == 'local'", [False, False, False]),  # quoted: the literal string
        ("type == any", [True, True, True]),
    ],
)
def test_type_local_matches_every_host(text: str, want: list[bool]) -> None:
    assert mask(text, state()) == want


def test_type_local_is_valid_on_a_cluster_without_type() -> None:
    """A Slurm import has no ``type``: LSF's default requirement is still valid there."""
    bare = ClusterBuilder().hosts(2, slots=2, mem=10).build()
    requirement_for_job("select[type == local] order[r15s:pg]", bare.catalog)
    assert mask("type == local", bare) == [True, True]


@pytest.mark.parametrize("op", ["<", ">=", "<="])
def test_type_local_only_compares_for_equality(op: str) -> None:
    with pytest.raises(ResreqError, match="'local' only compares with == or !="):
        requirement_for_job(f"select[type {op} local]", state().catalog)


def test_a_resource_named_local_keeps_its_meaning() -> None:
    """A cluster that defines ``local`` (a string here) is compared as ever."""
    st = (
        ClusterBuilder()
        .host("a", 1, type="X86_64", local="X86_64")
        .host("b", 1, type="ARM", local="X86_64")
        .build()
    )
    assert mask("type == local", st) == [True, False]


# --- load indices ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LOAD_INDICES))
def test_every_load_index_is_numeric_with_its_default(name: str) -> None:
    st = state()
    assert st.catalog.kind(name) is ResourceKind.NUMERIC
    assert list(st.hosts.numeric[name]) == [LOAD_INDICES[name]] * 3
    requirement_for_job(f"select[{name} >= 0] order[{name}]", st.catalog)
    assert mask(f"{name} == {LOAD_INDICES[name]}", st) == [True, True, True]


def test_a_load_index_given_by_the_hosts_is_read() -> None:
    st = state(r15s=2.5)  # the others lack it: NaN, fails every comparison
    assert mask("r15s > 1", st) == [True, False, False]
    assert mask("r15s < 1", st) == [False, False, False]


@pytest.mark.parametrize(
    ("name", "lower"),
    [("r15s", True), ("pg", True), ("ut", True), ("it", False), ("mem", False), ("cpuf", False)],
)
def test_lower_is_better_for_indices_that_grow_with_load(name: str, lower: bool) -> None:
    catalog = ResourceCatalog([ResourceDef("mem", ResourceKind.CONSUMABLE)])
    assert catalog.lower_is_better(name) is lower


def test_a_load_index_defined_otherwise_keeps_its_kind() -> None:
    st = ClusterBuilder().host("a", 1, ut="high").build()  # a string attribute
    assert st.catalog.kind("ut") is ResourceKind.STRING
    assert not st.catalog.lower_is_better("ut")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rusage[r15s=1]", "not consumable"),
        ("rusage[mem=10]", "unknown resource 'mem'"),  # mem/swp/tmp stay consumables only
        ("select[swp > 1]", "unknown resource 'swp'"),
        ("order[tmp]", "unknown resource"),
    ],
)
def test_mem_swp_tmp_are_not_invented(text: str, message: str) -> None:
    bare = ClusterBuilder().hosts(1, slots=1).build()
    with pytest.raises(ResreqError, match=message):
        requirement_for_job(text, bare.catalog)


def test_mem_stays_the_consumable() -> None:
    st = state()
    assert st.catalog.kind("mem") is ResourceKind.CONSUMABLE
    assert mask("mem > 500", st) == [True, True, True]


def test_defaults_are_not_written_back() -> None:
    """A snapshot holds what the state gave, not the default load of every host."""
    doc = state_to_dict(state(r15s=0.5))
    assert doc["hosts"][0]["attributes"]["r15s"] == 0.5
    assert "r15s" not in doc["hosts"][1].get("attributes", {})
    assert "pg" not in doc["resources"]


def test_lsf_default_requirement_schedules_in_host_order() -> None:
    """No load known: ``order[r15s:pg]`` ties everywhere, so hosts are taken in order."""
    doc = (
        ClusterBuilder()
        .hosts(3, slots=2, mem=100, type="X86_64")
        .job("j", 2, resreq="select[type == local] order[r15s:pg]")
        .to_dict()
    )
    result = Session(state_from_dict(doc, "<test>")).run()
    (decision,) = result.decisions
    assert isinstance(decision, Dispatched)
    assert [c.host for c in decision.allocation.claims] == [0]


def test_xce_resreq_accepts_lsf_defaults_on_the_example_cluster() -> None:
    args = ["resreq", "select[type == local] order[r15s:pg]", "--cluster", str(EXAMPLE)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "valid against" in result.output


@pytest.mark.parametrize(
    ("order", "first"),
    [
        pytest.param("order[r15s]", "b", id="least-loaded-first"),
        pytest.param("order[-r15s]", "a", id="minus-most-loaded-first"),
        pytest.param("order[r15s:pg]", "b", id="lsf-default"),
        pytest.param("order[cpuf]", "c", id="a-plain-number-most-first"),
    ],
)
def test_a_load_index_orders_least_loaded_first(order: str, first: str) -> None:
    """LSF sorts a load index that grows with load (r15s, ut, pg, ...) lightly loaded
    first, and ``-`` reverses it; any other number sorts most first, as before."""
    doc = {
        "hosts": [
            {"name": "a", "slots": 2, "attributes": {"r15s": 3.0, "cpuf": 1.0}},
            {"name": "b", "slots": 2, "attributes": {"r15s": 0.5, "cpuf": 2.0}},
            {"name": "c", "slots": 2, "attributes": {"r15s": 1.0, "cpuf": 3.0}},
        ],
        "jobs": [{"id": "j", "resreq": order}],
    }
    st = state_from_dict(doc, "<test>")
    (decision,) = Session(st).run().decisions
    assert isinstance(decision, Dispatched)
    assert st.hosts.names[decision.allocation.claims[0].host] == first
