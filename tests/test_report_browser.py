"""xce report in a real browser: Debian's headless Chromium opens the reports of a small
comparison and of a small sweep from ``file://`` and checks what a reader sees.

Chromium and chromium-driver come from Debian (``.ci/chromium/install.sh``, run here as
root when they are missing); Selenium drives them through ``/usr/bin/chromedriver``, so
nothing is downloaded. The browser and its driver are stopped by process id, even when
the test fails. ``XCE_SAVE_SCREENSHOT=1`` also saves the screenshot as docs/img/report.png.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver  # the dev extras: pip install -e '.[dev]'
from typer.testing import CliRunner

from xce.cli.main import app
from xce.cli.report_cmd import report_app

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / ".ci" / "chromium" / "install.sh"
CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
POLICIES = ("strict", "fcfs", "fcfs+easy")


def _browser_installed() -> bool:
    return Path(CHROMIUM).is_file() and Path(DRIVER).is_file()


def _ensure_browser() -> None:
    if _browser_installed():
        return
    if os.geteuid() != 0:
        pytest.skip(f"{CHROMIUM} and {DRIVER} missing, and not root to run {INSTALL}")
    subprocess.run(["sh", str(INSTALL)], check=True, timeout=600)
    assert _browser_installed(), f"{INSTALL} did not install {CHROMIUM} and {DRIVER}"


def _trace(path: Path) -> Path:
    rng = random.Random(11)
    lines = ["; UnixStartTime: 1700000000", "; MaxNodes: 4", "; MaxProcs: 16"]
    t = 0
    for i in range(1, 41):
        t += rng.randint(0, 3000)
        run, procs = rng.randint(60, 8000), rng.choice([1, 2, 4, 8])
        fields = [i, t, rng.randint(0, 2000), run, procs, -1, -1, procs, 2 * run, -1, 1]
        fields += [rng.randint(1, 4), 1, -1, rng.randint(1, 2), -1, -1, -1]
        lines.append(" ".join(map(str, fields)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _compare(tmp_path: Path) -> Path:
    """A comparison of three policies on a 40-job trace."""
    trace = _trace(tmp_path / "tiny.swf")
    args = ["compare", "--workload", str(trace), "--out", str(tmp_path / "cmp")]
    result = CliRunner().invoke(app, [*args, *(a for p in POLICIES for a in ("--policy", p))])
    assert result.exit_code == 0, result.output
    return tmp_path / "cmp"


def _sweep(tmp_path: Path) -> Path:
    """A sweep of three policies on 40 generated jobs and 3 hosts of 4 slots, run here
    cell after cell (xce sweep's own function, without Dask), keeping each cell's jobs
    (``--keep-jobs``: ``cells/<cell id>/jobs.csv``), so its report draws distributions."""
    from xce.cli.sweep_cmd import RESULTS, ResultsTable, run_sweep
    from xce.sim.sweep import load_grid

    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "workloads: [{generated: 40, seeds: [1]}]\n"
        "clusters: [{hosts: 3, slots_per_host: 4}]\n"
        f"policies: [{', '.join(POLICIES)}]\n",
        encoding="utf-8",
    )
    out = tmp_path / "sweep"
    out.mkdir()
    run_sweep(load_grid(grid), ResultsTable(out / RESULTS), None, keep_jobs=out)
    return out


RESULTS_OF = {"compare": (_compare, "mean wait"), "sweep": (_sweep, "mean_wait_s")}
"""What each browser test opens: how its results are made, the column it sorts."""

FIGURES = {
    "waits": "wait CDFs",
    "slowdown": "bounded slowdown by job size",
    "utilisation": "utilisation",
    "queues": "wait by queue",
    "users": "wait by user",
    "gantt": "Gantt chart",
}
"""The sections both pages draw (issue 26): one figure each, every policy or cell in it
(the sweep's from its cells' kept jobs)."""

WINDOW_PX = 1280
"""The browser window's width: a small laptop screen, at which figures must read."""


@pytest.fixture(params=sorted(RESULTS_OF))
def page(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """(which, the report's file) of a small comparison or sweep."""
    make, _ = RESULTS_OF[request.param]
    out = tmp_path / "report.html"
    result = CliRunner().invoke(report_app, [str(make(tmp_path)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return request.param, out


def _children(pid: int) -> list[int]:
    """Every process started by ``pid``, transitively (read from /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            text = (task / "children").read_text()
        except OSError:
            continue
        for child in map(int, text.split()):
            found += [child, *_children(child)]
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


KILL_GRACE_S = 10.0  # a SIGKILLed process can take a moment to die on a loaded machine


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    """The ``pids`` still alive after waiting up to ``seconds`` for them to die."""
    deadline = time.monotonic() + seconds
    left = [pid for pid in pids if _alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if _alive(pid)]
    return left


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium under chromedriver; stopped by pid afterwards, whatever
    happened, and checked gone."""
    _ensure_browser()
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={WINDOW_PX},2400")
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=DRIVER, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver_pid: int = service.process.pid
    started = [driver_pid, *_children(driver_pid)]
    try:
        yield driver
    finally:
        try:
            driver.quit()
        finally:
            for pid in [*started, *_children(driver_pid)]:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
            left = _gone_within(started, KILL_GRACE_S)
            assert not left, f"browser processes left running: {left}"


def _pairs(table: Any, index: int, policies: int) -> list[tuple[float, str]]:
    """(the sort key of column ``index``, the policy) of each row, top to bottom."""
    rows = table.find_elements("css selector", "tbody tr")
    return [
        (
            float(
                row.find_element("css selector", f"td:nth-child({index + 1})").get_attribute(
                    "data-sort"
                )
            ),
            row.find_element("css selector", f"td:nth-child({policies + 1})").text,
        )
        for row in rows
    ]


def test_the_report_in_chromium(page: tuple[str, Path], browser: Any, tmp_path: Path) -> None:
    which, path = page
    browser.get(path.as_uri())
    assert browser.title.startswith("xce report: ")

    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors

    images = browser.execute_script(
        "return Array.from(document.images).map(function (i) { var r = "
        "i.getBoundingClientRect(); return [i.alt, i.complete, i.naturalWidth, r.width, "
        "r.height]; });"
    )
    assert len(images) == path.read_text(encoding="utf-8").count("<img ")
    for alt, complete, natural, width, height in images:
        assert complete, alt
        assert natural > 0, alt
        assert width > 0, alt
        assert height > 0, alt
        # at 1280 pixels a figure is shown at its own size, not shrunk (issue 26)
        assert width == natural >= 1000, alt

    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('section')).map(function (s) { return "
        "[s.id, Array.from(s.querySelectorAll('img')).map(function (i) { return i.alt; })]; });"
    )
    drawn = dict(shown)
    for key, alt in FIGURES.items():
        assert drawn.get(key) == [alt], (key, drawn.get(key))
    if which == "compare":  # a trace that logs its waits
        assert drawn["logged"] == ["simulated against logged wait"]
    assert "per-job records" not in browser.find_element("css selector", "#waits").text

    table = browser.find_element("css selector", "#summary table")
    headers = table.find_elements("css selector", "th")
    names = [h.text for h in headers]
    index = names.index(RESULTS_OF[which][1])
    policies = names.index("policy")
    before = _pairs(table, index, policies)
    assert len({value for value, _ in before}) == len(before) == 3, "the policies should differ"
    headers[index].click()
    assert _pairs(table, index, policies) == sorted(before)
    assert headers[index].get_attribute("aria-sort") == "ascending"
    headers[index].click()  # the reverse order, rows moved whole (the policy with its value)
    assert _pairs(table, index, policies) == sorted(before, reverse=True)
    assert headers[index].get_attribute("aria-sort") == "descending"

    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors
    shot = tmp_path / f"report-{which}.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    for key in drawn:  # each section as a reader sees it, to look at (not compared)
        section = browser.find_element("css selector", f"#{key}")
        browser.execute_script("arguments[0].scrollIntoView();", section)
        assert section.screenshot(str(tmp_path / f"report-{which}-{key}.png"))
    if which == "compare" and os.environ.get("XCE_SAVE_SCREENSHOT") == "1":
        (ROOT / "docs" / "img").mkdir(exist_ok=True)
        shutil.copyfile(shot, ROOT / "docs" / "img" / "report.png")
