"""``xce report``: the results of replays as one self-contained HTML page.

:func:`load_results` reads a results directory (:mod:`~xce.sim.report.read`) and
:func:`build_report` turns it into one HTML document (:mod:`~xce.sim.report.page`): every
plot embedded as a ``data:`` image, tables sortable by a small inline script, and a
Content-Security-Policy that forbids any network access, so the page reads the same
offline, years later.
"""

from xce.sim.report.page import build_report, gantt_window
from xce.sim.report.read import Results, Run, load_results

__all__ = ["Results", "Run", "build_report", "gantt_window", "load_results"]
