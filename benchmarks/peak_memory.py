"""Peak resident memory of this process, for the replay runners (xce's and AccaSim's)."""

from __future__ import annotations

import resource


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB. On Linux, from /proc (``VmHWM``):
    getrusage's ``ru_maxrss`` survives fork and exec, so a child of a large benchmark
    process would report its parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
