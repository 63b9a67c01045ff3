"""Timing a worker's schedule ticks (benchmarks/benchapp with BENCH_SCHEDULE_TICKS): each
`Scheduler.tick()` appends `<began> <wall s> <thread CPU s> <handled>` to a file, and each
preparation of the occurrences coming due (`Ahead.prepare()`, between ticks) the same with
`prepare` last. Both run on the schedules thread, so its CPU time is theirs alone (the
executions run on others)."""

from __future__ import annotations

import threading
import time
from typing import Any


def install(path: str) -> None:
    from django_workflows.schedules import runner

    try:
        from django_workflows.schedules import ahead
    except ImportError:  # code from before the occurrences prepared ahead, measured back to back
        ahead = None

    out = open(path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    lock = threading.Lock()

    def timed(original: Any, suffix: str) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            began, cpu = time.time(), time.thread_time()
            handled: Any = -1
            try:
                handled = original(self, *args, **kwargs)
                return handled
            finally:
                wall, spent = time.time() - began, time.thread_time() - cpu
                with lock:
                    out.write(f"{began!r} {wall!r} {spent!r} {int(handled)}{suffix}\n")

        return call

    runner.Scheduler.tick = timed(runner.Scheduler.tick, "")  # type: ignore[method-assign]
    if ahead is not None:
        ahead.Ahead.prepare = timed(ahead.Ahead.prepare, " prepare")  # type: ignore[method-assign]
