"""xce import pbs on bad input: each case exits 2 naming the input file and the JSON path,
and writes nothing. Every case here is a regression test: before these checks it was a
traceback (exit 1), a state xce's loader refused (located in ``<import>``, the output),
or a value silently changed (a node gone, 0 slots, a job with no id)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_import_pbs import job, node
from xce.cli.import_cmd import import_app
from xce.errors import InputError
from xce.importers import import_pbs, read_pbs_documents

HEADER = '{"pbs_version": "23.06.06", "pbs_server": "srv", '


def nodes_text(body: str) -> str:
    return HEADER + '"nodes": ' + body + "}"


def jobs_text(jobs: dict[str, Any]) -> str:
    return HEADER + '"Jobs": ' + json.dumps(jobs) + "}"


N1 = json.dumps({"n1": node()})
DEEP = "[" * 10_000 + "]" * 10_000

CASES = [
    # non-finite numbers: Infinity crashed int(); NaN and 1e400 passed as attributes
    (nodes_text('{"n1": {"resources_available": {"ncpus": 4, "ngpus": Infinity}}}'),
     'nodes["n1"].resources_available.ngpus', "Infinity is not a finite number"),
    (nodes_text('{"n1": {"resources_available": {"ncpus": 4, "rack": NaN}}}'),
     'nodes["n1"].resources_available.rack', "NaN is not a finite number"),
    (nodes_text('{"n1": {"resources_available": {"ncpus": 1e400}}}'),
     'nodes["n1"].resources_available.ncpus', "1e400 is not a finite number"),
    (HEADER + '"Jobs": {"1.srv": {"job_state": "Q", "Priority": -Infinity}}}',
     'Jobs["1.srv"].Priority', "-Infinity is not a finite number"),
    # negative counts: -3 GPUs reached the loader; ncpus=-4 became 1 slot
    (nodes_text(json.dumps({"n1": node(avail={"ngpus": -3})})),
     'nodes["n1"]', "resources_available.ngpus: expected a count from 0"),
    (nodes_text(json.dumps({"n1": node(resources_assigned={"ncpus": -1})})),
     'nodes["n1"]', "resources_assigned.ncpus: expected a count from 0"),
    (HEADER + '"nodes": ' + N1 + "}\n", None, None),  # (a good document: see below)
    (jobs_text({"1.srv": job("R", exec_vnode="(n1:ncpus=-4)")}),
     'Jobs["1.srv"]', "exec_vnode ncpus: expected a count"),
    (jobs_text({"1.srv": job(Resource_List={"select": "1:ncpus=-2"})}),
     'Jobs["1.srv"]', "chunk ncpus: expected a count"),
    (jobs_text({"1.srv": job(Resource_List={"select": "1:ncpus=2:ngpus=-1"})}),
     'Jobs["1.srv"]', "chunk ngpus: expected a count"),
    (jobs_text({"1.srv": job(array="True", array_indices_submitted="0-9", max_run_subjobs=-1)}),
     'Jobs["1.srv"]', "max_run_subjobs: expected a count"),
    # beyond what a state file holds: reached the loader
    (jobs_text({"1.srv": job(Resource_List={"select": "100000000000:ncpus=100000"})}),
     'Jobs["1.srv"]', "beyond 9007199254740991"),
    (nodes_text(json.dumps({"n1": node(ncpus=10**7)})),
     'nodes["n1"]', "expected a count from 0 to 1000000"),
    (jobs_text({"1.srv": job(Priority=10**16)}), 'Jobs["1.srv"]', "Priority: expected a number"),
    # deep nesting: a RecursionError traceback
    (HEADER + '"nodes": {"n1": ' + DEEP + "}}", 'nodes["n1"][0][0]', "nested deeper than 100"),
    # empty names: accepted, a host or job no one can name
    (nodes_text(json.dumps({"": node()})), 'nodes[""]', "an empty name in nodes"),
    (jobs_text({"": job()}), 'Jobs[""]', "an empty name in Jobs"),
    (jobs_text({".srv": job()}), 'Jobs[".srv"]', "an empty job id"),
    (HEADER + '"Queue": {" ": {}}}', 'Queue[" "]', "an empty name in Queue"),
    # duplicate keys: the first node silently vanished
    (nodes_text('{"n1": ' + json.dumps(node()) + ', "n1": ' + json.dumps(node()) + "}"),
     'nodes["n1"]', 'key "n1" given twice'),
    (nodes_text('{"n1": {"state": "free", "state": "down", "resources_available": {}}}'),
     'nodes["n1"].state', 'key "state" given twice'),
    # text that is not text: reached the loader
    (nodes_text('{"n1": {"resources_available": {"ncpus": 1, "arch": "x\\ud800"}}}'),
     'nodes["n1"].resources_available.arch', "lone UTF-16 surrogate"),
    # values the old code read as something else
    (jobs_text({"1.srv": job(depend="afterok:")}), 'Jobs["1.srv"]', "cannot read depend item"),
    (jobs_text({"1.srv": job(array="True")}), 'Jobs["1.srv"]', "without array_indices_submitted"),
    (jobs_text({"1.srv": job(array="True", array_indices_remaining="9-1")}),
     'Jobs["1.srv"]', "empty range"),
    (jobs_text({"1.srv": job("W", Execution_Time="soon")}), 'Jobs["1.srv"]', "not a PBS time"),
    (HEADER + '"timestamp": "now", "Jobs": {}}', "timestamp", "expected Unix seconds"),
]  # fmt: skip
BAD = [c for c in CASES if c[1] is not None]


@pytest.mark.parametrize(("text", "path", "message"), BAD)
def test_bad_input_is_located(text: str, path: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        import_pbs(read_pbs_documents([("in.json", text)]))
    assert info.value.source == "in.json"
    assert (info.value.path or "").startswith(path)  # a deep one is cut after 80 characters
    assert message in info.value.message


@pytest.mark.parametrize(("text", "path", "message"), BAD)
def test_cli_exits_2_located_and_writes_nothing(
    text: str, path: str, message: str, tmp_path: Path
) -> None:
    src, out = tmp_path / "in.json", tmp_path / "state.yaml"
    src.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = CliRunner().invoke(import_app, ["pbs", str(src), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{src}" in result.stderr
    assert path in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_the_good_document_among_them_imports() -> None:
    (good,) = [c[0] for c in CASES if c[1] is None]
    assert import_pbs(read_pbs_documents([("in.json", good)])).state["hosts"][0]["name"] == "n1"


def test_loader_refusal_is_located_in_the_input() -> None:
    """The net under the checks: a value the loader refuses that no check caught is
    named in the input entry it came from, not in ``<import>`` (no input reaches it
    today, so the state is built by hand)."""
    from xce.importers.pbs import _check_loads

    state = {"hosts": [{"name": "a", "slots": 1, "resources": {"gpu": -1}}]}
    host = state["hosts"][0]
    with pytest.raises(InputError) as info:
        _check_loads(state, {id(host): ("nodes.json", 'nodes["a"]')})
    assert (info.value.source, info.value.path) == ("nodes.json", 'nodes["a"]')
    assert "hosts[0].resources.gpu" in info.value.message
