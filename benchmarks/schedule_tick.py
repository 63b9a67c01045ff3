"""What one schedule costs a worker's tick: CPU, statements and wall time per schedule handled.

    python benchmarks/schedule_tick.py --db postgres [--schedules 1000] [--rounds 3]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it) and upserts --schedules schedules `every="1m"` of the one-step `bench` workflow. Then,
each round, in this process: every schedule is made due with one occurrence in the last minute
(its cursor moved back), and a worker's `Scheduler.run_due()` is called until it handles nothing
more, with every statement counted (CaptureQueriesContext). Nothing executes the instances (no
worker runs), so the figures are the tick's alone: the CPU time of this process per schedule
(the tick runs on this thread), the statements it sent per schedule, and the wall time; on
PostgreSQL also the CPU time of the server process of the tick's connection (its backend, from
/proc, in steps of 1/CLK_TCK s), the server's share of the tick.

Ten thousand schedules every minute at C ms of CPU each cost C x 10,000 / 60,000 of a core.
Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness import fresh_database

    fresh_database(args.db)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from benchmarks.cpu import _process_seconds
    from django_workflows import clock, schedules
    from django_workflows.models import WorkflowInstance, WorkflowSchedule
    from django_workflows.schedules.runner import Scheduler

    for index in range(args.schedules):
        schedules.upsert(f"tick-{index:05d}", workflow="bench", every="1m", input={"steps": 1})
    scheduler = Scheduler("default", "bench-ticks", ["bench"], timedelta(minutes=5))
    scheduler._synced_at = clock.now()  # no declared schedules to sync
    for round in range(1, args.rounds + 1):
        WorkflowInstance.objects.all().delete()  # no overlap with the last round's
        now = clock.now()
        top = now.replace(second=0, microsecond=0)
        if (now - top).total_seconds() < 1:  # the occurrence at `top` must be in the past
            time.sleep(1)
            now = clock.now()
        # One occurrence due (at `top`, within missed="skip"'s minute), none skipped.
        WorkflowSchedule.objects.update(
            wake_at=top,
            state={"cursor": (top - timedelta(seconds=1)).isoformat(), "runs": 0},
        )
        handled = 0
        backend = None
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backend = cursor.fetchone()[0]
        server = _process_seconds(backend) if backend else 0.0
        wall, cpu = time.perf_counter(), time.thread_time()
        with CaptureQueriesContext(connection) as queries:
            while True:
                count = scheduler.run_due(now)
                handled += count
                if not count:
                    break
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        server = _process_seconds(backend) - server if backend else None
        started = WorkflowInstance.objects.count()
        kinds = collections.Counter(
            " ".join(query["sql"].split()[:2]).split('"')[0].strip()
            for query in queries.captured_queries
        )
        print(
            f"round {round}: {handled} schedules handled, {started} instances started; per "
            f"schedule: CPU {1000 * cpu / handled:.2f} ms"
            + (f" (server {1000 * server / handled:.2f} ms)" if server is not None else "")
            + f", {len(queries) / handled:.2f} "
            f"statements, wall {1000 * wall / handled:.1f} ms "
            f"({', '.join(f'{kind} {count / handled:.2f}' for kind, count in kinds.most_common())})"
        )


if __name__ == "__main__":
    main()
