"""Timing a worker's schedule ticks (benchmarks/benchapp with BENCH_SCHEDULE_TICKS): each
`Scheduler.tick()` appends `<began> <wall s> <thread CPU s> <handled>` to a file. The tick runs
on one thread, so its thread's CPU time is the tick's own (the executions run on others)."""

from __future__ import annotations

import threading
import time
from typing import Any


def install(path: str) -> None:
    from django_workflows.schedules import runner

    original = runner.Scheduler.tick
    out = open(path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    lock = threading.Lock()

    def tick(self: Any, *args: Any, **kwargs: Any) -> int:
        began, cpu = time.time(), time.thread_time()
        handled = -1
        try:
            handled = original(self, *args, **kwargs)
            return handled
        finally:
            line = f"{began!r} {time.time() - began!r} {time.thread_time() - cpu!r} {handled}\n"
            with lock:
                out.write(line)

    runner.Scheduler.tick = tick  # type: ignore[method-assign]
