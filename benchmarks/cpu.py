"""Where the CPU goes during a drain, from Linux's /proc (nothing here asks the database).

A `Sample` is taken at each of the benchmark's polls: the machine's busy and total CPU time
(`/proc/stat`, every core), the CPU time of the worker processes (`/proc/<pid>/stat`), the CPU
time of the database server's processes, and how many instances were completed then.
`steady_state()` compares two samples inside the active window, so the workers' Python start-up
and their shutdown stay out of the figures.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")

# The processes of each database server: PostgreSQL forks a backend per connection (the
# postmaster's children's times count the ones that exited), MariaDB is one process of threads.
SERVER_COMMANDS = {"postgres": {"postgres"}, "mysql": {"mariadbd", "mysqld"}, "sqlite": set()}


def _process_seconds(pid: int, *, children: bool = False) -> float:
    """utime + stime of one process (its threads included), and of its reaped children."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    # the command is in parentheses and may hold spaces: split after its closing one
    fields = text[text.rindex(")") + 2 :].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / TICKS


def _command(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def server_seconds(vendor: str) -> float:
    commands = SERVER_COMMANDS[vendor]
    return sum(
        _process_seconds(int(pid), children=True)
        for pid in os.listdir("/proc")
        if pid.isdigit() and _command(pid) in commands
    )


def backend_seconds(connection: Any) -> Callable[[], float]:
    """A function that reads the CPU seconds of the PostgreSQL backend serving `connection` (a
    Django connection; the server must run on this machine)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return lambda: _process_seconds(pid)


def machine_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of every core since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    total = sum(fields[:8])
    busy = total - fields[3] - fields[4]
    return busy / TICKS, total / TICKS


@dataclass(frozen=True)
class Sample:
    at: float  # time.time()
    completed: int
    busy: float
    total: float
    workers: float
    server: float
    this_script: float


def sample(vendor: str, worker_pids: list[int], completed: int, at: float) -> Sample:
    busy, total = machine_seconds()
    return Sample(
        at=at,
        completed=completed,
        busy=busy,
        total=total,
        workers=sum(_process_seconds(pid) for pid in worker_pids),
        server=server_seconds(vendor),
        this_script=_process_seconds(os.getpid()),
    )


@dataclass(frozen=True)
class CpuFigures:
    seconds: float
    workflows: int
    cores: int
    busy_fraction: float  # of all the machine's cores
    workers_ms: float  # CPU milliseconds per workflow
    server_ms: float
    this_script_ms: float
    other_ms: float  # kernel threads, WAL writer's fsyncs in softirq, everything else

    @property
    def total_ms(self) -> float:
        return self.workers_ms + self.server_ms + self.this_script_ms + self.other_ms

    @property
    def ceiling(self) -> float:
        """Workflows/s if every core were busy at this CPU cost per workflow."""
        return self.cores * 1000 / self.total_ms


def steady_state(samples: list[Sample], begin: float, end: float) -> CpuFigures | None:
    """The figures between the first and last samples inside [begin, end] (time.time())."""
    inside = [s for s in samples if begin <= s.at <= end]
    if len(inside) < 2 or inside[-1].completed == inside[0].completed:
        return None
    first, last = inside[0], inside[-1]
    workflows = last.completed - first.completed
    busy = last.busy - first.busy
    workers = last.workers - first.workers
    server = last.server - first.server
    script = last.this_script - first.this_script
    per = 1000 / workflows
    return CpuFigures(
        seconds=last.at - first.at,
        workflows=workflows,
        cores=os.cpu_count() or 1,
        busy_fraction=busy / (last.total - first.total),
        workers_ms=workers * per,
        server_ms=server * per,
        this_script_ms=script * per,
        other_ms=max(0.0, busy - workers - server - script) * per,
    )
