"""How many CPU cores this process may use for compute-bound threads (llama.cpp's): one per physical core.

A physical core's SMT siblings share its arithmetic units, so a second thread on them only adds contention; cores
outside the process's affinity mask are not ours; and a container's CPU quota (cgroup v2 ``cpu.max``) caps the rest.
:func:`count_cores` is the pure rule, :func:`usable_cores` reads this machine (Linux ``/sys``; elsewhere half the
logical cores, as llama.cpp's bindings assume SMT).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

_CPUS = Path("/sys/devices/system/cpu")
_QUOTA = Path("/sys/fs/cgroup/cpu.max")


def count_cores(allowed: Iterable[int], siblings: Mapping[int, str], quota: str | None, logical: int) -> int:
    """Physical cores among the ``allowed`` CPUs (CPUs listing the same ``siblings`` text share a core), at most
    the ``quota`` (``cpu.max``: ``"<max> <period>"`` or ``"max <period>"``) rounded up; without sibling lists,
    half of ``logical``. Always at least 1."""
    allowed = list(allowed)
    if allowed and all(cpu in siblings for cpu in allowed):
        cores = len({siblings[cpu] for cpu in allowed})
    else:
        cores = max(1, logical // 2)
    if quota:
        limit, _, period = quota.strip().partition(" ")
        if limit.isdigit() and period.strip().isdigit() and int(period) > 0:
            cores = min(cores, math.ceil(int(limit) / int(period)))
    return max(1, cores)


def usable_cores() -> int:
    """:func:`count_cores` for this process on this machine."""
    logical = os.cpu_count() or 2
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(logical))
    siblings = {cpu: text for cpu in allowed if (text := _read(_CPUS / f"cpu{cpu}/topology/thread_siblings_list"))}
    return count_cores(allowed, siblings, _read(_QUOTA), logical)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
