"""Many schedules on one worker: how late their occurrences start, and what the ticks cost.

    python benchmarks/schedule_scale.py --db postgres [--schedules 10000] [--minutes 3]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it), upserts (from --upsert-threads threads) --schedules schedules `every="1m"` of the one-step `bench` workflow
(`overlap` and `missed` as given, default the API's), then starts one `runworkflows
--concurrency 10` process with its ticks timed (BENCH_SCHEDULE_TICKS, benchmarks/
schedule_ticks.py) and lets it run through --minutes whole minutes, every schedule's occurrences
falling at the top of each minute (an `every` counts from the Unix epoch).

Printed, for the occurrences of those minutes:
- how many of the expected occurrences started (an instance exists), and the lag from each
  occurrence's time to its instance's `created_at` and to its first step's `started_at`
  (median, p95, max);
- for each minute, when all its instances could first be seen from another connection (their
  transactions committed: polled every 0.1 s), after the occurrence's time;
- the worker's CPU over the window (from /proc), the CPU of its schedule ticks alone (the
  ticking thread's CPU time, as a share of one core over the window) and of its preparations
  of the occurrences coming due (the same thread, between ticks), how many ticks ran and
  their longest wall time, and the database server's CPU over the window.

Both processes read the same clock. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--minutes", type=int, default=3, help="whole minutes measured")
    parser.add_argument("--overlap", default="skip")
    parser.add_argument("--missed", default="skip")
    parser.add_argument("--upsert-threads", type=int, default=4)
    args = parser.parse_args(argv)
    ticks = Path(tempfile.gettempdir()) / "workflows_bench_schedule_ticks.txt"
    ticks.unlink(missing_ok=True)
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness import fresh_database, worker_environment

    fresh_database(args.db)
    env = worker_environment(args.db, BENCH_SCHEDULE_TICKS=str(ticks))
    from benchmarks import cpu
    from benchmarks.run import Workers
    from django_workflows import schedules

    def upsert(first: int) -> None:
        from django.db import connections

        for index in range(first, args.schedules, args.upsert_threads):
            schedules.upsert(
                f"scale-{index:05d}",
                workflow="bench",
                every="1m",
                input={"steps": 1},
                overlap=args.overlap,
                missed=args.missed,
            )
        connections.close_all()

    began = time.perf_counter()
    threads = [threading.Thread(target=upsert, args=(i,)) for i in range(args.upsert_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    upserted = time.perf_counter() - began
    print(
        f"upserted {args.schedules} schedules in {upserted:.1f}s "
        f"({args.schedules / upserted:.0f}/s)"
    )
    workers = Workers(
        argparse.Namespace(
            in_process=False, concurrency=10, poll_interval=None, once=False, processes=1
        ),
        env,
    )
    workers.start()
    pid = workers.processes[0].pid
    try:
        time.sleep(5)  # Python and Django start-up
        workers.check_alive()
        # The window: from the next top of a minute, --minutes minutes; sampled just before it
        # opens and once it closed (plus the time the last occurrences take to finish).
        now = datetime.now(UTC)
        first = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
        if (first - now).total_seconds() < 2:
            first += timedelta(minutes=1)
        window_end = first + timedelta(minutes=args.minutes)
        visible: dict[datetime, float] = {}
        watcher = threading.Thread(
            target=watch_visibility,
            args=(first, args.minutes, args.schedules, visible),
            daemon=True,
        )
        watcher.start()
        time.sleep((first - datetime.now(UTC)).total_seconds() - 1)
        before = cpu.sample(args.db, [pid], 0, time.time())
        while datetime.now(UTC) < window_end - timedelta(seconds=1):
            time.sleep(1)
            workers.check_alive()
        after = cpu.sample(args.db, [pid], 0, time.time())
        # The occurrences of the last minute finish their steps.
        wait_for_steps(first, window_end, args.schedules * args.minutes, workers)
    finally:
        workers.stop()
    report(args, first, window_end, before, after, ticks)
    for minute in sorted(visible):
        print(
            f"minute {minute:%H:%M}: all {args.schedules} instances visible "
            f"{visible[minute]:.2f}s after the occurrence"
        )


def watch_visibility(
    first: datetime, minutes: int, expected: int, visible: dict[datetime, float]
) -> None:
    """For each minute of the window, the seconds after its occurrence at which all its
    instances could be seen from this connection (polled every 0.1 s, for up to 30 s)."""
    from django.db import connection

    try:
        for index in range(minutes):
            at = first + timedelta(minutes=index)
            time.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()))
            while datetime.now(UTC) < at + timedelta(seconds=30):
                if occurrences(at, at + timedelta(seconds=1)).count() >= expected:
                    visible[at] = (datetime.now(UTC) - at).total_seconds()
                    break
                time.sleep(0.1)
    finally:
        connection.close()


def occurrences(first: datetime, end: datetime):
    from django_workflows.models import WorkflowInstance

    return WorkflowInstance.objects.filter(
        schedule_id__isnull=False, scheduled_at__gte=first, scheduled_at__lt=end
    )


def wait_for_steps(first: datetime, end: datetime, expected: int, workers) -> None:
    from django_workflows.models import UNFINISHED

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers.check_alive()
        if not occurrences(first, end).filter(status__in=UNFINISHED).exists():
            return
        time.sleep(1)
    print("(some occurrences were still unfinished 120 s after the window)")


def report(args, first: datetime, end: datetime, before, after, ticks: Path) -> None:
    from benchmarks.run import percentile
    from django_workflows.models import JournalEntry

    rows = list(occurrences(first, end).values_list("id", "scheduled_at", "created_at"))
    expected = args.schedules * args.minutes
    created_lags = sorted((c - s).total_seconds() for _, s, c in rows)
    scheduled = {id: s for id, s, _ in rows}
    step_lags = []
    for instance_id, document in (
        JournalEntry.objects.filter(instance_id__in=scheduled, name="step-0")
        .values_list("instance_id", "document")
        .iterator(chunk_size=2000)
    ):
        started = datetime.fromisoformat(document["started_at"])
        step_lags.append((started - scheduled[instance_id]).total_seconds())
    step_lags.sort()
    print(
        f"window: {first:%H:%M:%S} to {end:%H:%M:%S} UTC, {args.minutes} minutes x "
        f"{args.schedules} schedules = {expected} occurrences; {len(rows)} started "
        f"({expected - len(rows)} not)"
    )
    for what, lags in (("instance created", created_lags), ("first step started", step_lags)):
        if lags:
            within = sum(1 for lag in lags if lag <= 1.0)
            print(
                f"occurrence time -> {what}: median {statistics.median(lags):.2f}s, p95 "
                f"{percentile(lags, 0.95):.2f}s, max {lags[-1]:.2f}s; within 1 s: {within} of "
                f"{expected} ({100 * within / expected:.1f} %)"
            )
    seconds = after.at - before.at
    print(
        f"over {seconds:.0f}s: worker CPU {after.workers - before.workers:.1f}s "
        f"({100 * (after.workers - before.workers) / seconds:.1f} % of a core), database "
        f"server CPU {after.server - before.server:.1f}s "
        f"({100 * (after.server - before.server) / seconds:.1f} % of a core)"
    )
    lines = [line.split() for line in ticks.read_text().splitlines()] if ticks.exists() else []
    lines = [line for line in lines if before.at <= float(line[0]) < after.at]
    inside = [
        (float(at), float(wall), float(cpu_s), int(handled))
        for at, wall, cpu_s, handled, *kind in lines
        if not kind
    ]
    prepared = [float(cpu_s) for _, _, cpu_s, _, *kind in lines if kind == ["prepare"]]
    tick_cpu = sum(cpu_s for _, _, cpu_s, _ in inside)
    if inside:
        print(
            f"schedule ticks: {len(inside)} ticks, {sum(h for *_, h in inside)} schedules "
            f"handled, CPU {tick_cpu:.1f}s = {100 * tick_cpu / seconds:.1f} % of a core; "
            f"longest tick {max(w for _, w, _, _ in inside):.2f}s wall, ticks' wall time "
            f"{sum(w for _, w, _, _ in inside):.1f}s"
        )
    if prepared:
        print(
            f"preparations of the occurrences coming due: {len(prepared)}, CPU "
            f"{sum(prepared):.1f}s = {100 * sum(prepared) / seconds:.1f} % of a core; ticks and "
            f"preparations together {100 * (tick_cpu + sum(prepared)) / seconds:.1f} %"
        )


if __name__ == "__main__":
    main()
