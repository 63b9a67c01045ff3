"""How soon a start(), signal() or update() committed here reaches its step in a worker process,
and what an idle worker costs its database meanwhile.

    python benchmarks/wakeup.py --db mysql [--samples 30] [--idle 10] [--starts 1000 --threads 8]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it) and starts one `runworkflows` process (its default poll interval unless
--poll-interval), with every statement it sends noted (BENCH_STATEMENTS, benchmarks/
statements.py). Then:

1. Idle: for --idle seconds nothing happens; the worker's statements over that window, per
   second, by kind (its wake-up watcher's looks, its polls' claims, its heartbeats...).
2. start(): one `bench` instance of one step at a time, each after a random pause (so not in
   step with the worker's looks); from start()'s return here (committed) to the step's
   `started_at` in the worker, in milliseconds.
3. signal(): `bench-signal` instances suspended on their signal; from signal()'s return to the
   step after the wait.
4. update(): `bench-update`, the same with update(), where the code has updates.
5. With --starts N: N start()s from --threads threads of this process at once, with the worker
   stopped: starts/s (the wake-up counters' row locks are taken by every start).

Both processes read the same clock. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="sqlite")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of the idle window")
    parser.add_argument("--poll-interval", default=None, help="runworkflows' (default: 1s)")
    parser.add_argument("--starts", type=int, default=0, help="concurrent starts to time")
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)
    notes = Path(tempfile.gettempdir()) / "workflows_bench_statements.txt"
    notes.unlink(missing_ok=True)
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness import fresh_database, worker_environment

    fresh_database(args.db)
    env = worker_environment(args.db, BENCH_STATEMENTS=str(notes))
    import django_workflows as wf
    from benchmarks.run import Workers, percentile

    workers = Workers(
        argparse.Namespace(
            in_process=False,
            concurrency=10,
            poll_interval=args.poll_interval,
            once=False,
            processes=1,
        ),
        env,
    )
    workers.start()
    figures: dict[str, list[float]] = {}
    try:
        time.sleep(4)  # Python and Django start-up, the first claim
        workers.check_alive()
        idle_from = time.time()
        time.sleep(args.idle)
        idle_to = time.time()
        figures["start()"] = timed(workers, "bench", args.samples, lambda id: None)
        figures["signal()"] = timed(
            workers, "bench-signal", args.samples, lambda id: wf.signal("go", key=id)
        )
        if hasattr(wf, "update"):
            figures["update()"] = timed(
                workers, "bench-update", args.samples, lambda id: wf.update(id, "go")
            )
    finally:
        workers.stop()
    poll = args.poll_interval or "default"
    for what, latencies in figures.items():
        print(
            f"{what} committed here -> its step in the worker ({len(latencies)} samples, poll "
            f"{poll}): median {statistics.median(latencies):.1f} ms, p95 "
            f"{percentile(latencies, 0.95):.1f} ms, min {latencies[0]:.1f} ms, max "
            f"{latencies[-1]:.1f} ms"
        )
    kinds: collections.Counter[str] = collections.Counter()
    for line in notes.read_text().splitlines():
        at, _, words = line.partition(" ")
        if idle_from <= float(at) < idle_to:
            kinds[words] += 1
    seconds = idle_to - idle_from
    print(
        f"idle worker: {sum(kinds.values()) / seconds:.1f} statements/s over {seconds:.1f}s "
        f"(poll {poll}), by first words:"
    )
    for words, count in kinds.most_common():
        print(f"  {count / seconds:7.2f}/s  {words}")
    if args.starts:
        concurrent_starts(args)


def timed(workers, workflow: str, samples: int, send) -> list[float]:
    """Milliseconds from the committed call here to the step's start in the worker."""
    import django_workflows as wf
    from django_workflows.models import JournalEntry

    step = "step-0" if workflow == "bench" else "after"
    latencies = []
    for index in range(samples):
        id = f"{workflow}-{index:04d}"
        time.sleep(random.uniform(0.2, 0.6))
        wf.start(workflow, {"steps": 1}, id=id)
        committed = time.time()
        if workflow != "bench":  # wait for the suspension, then the call timed
            wait(workers, lambda id=id: wf.get_status(id).status == "suspended", id)
            time.sleep(random.uniform(0.1, 0.3))
            send(id)
            committed = time.time()
        rows = JournalEntry.objects.filter(instance_id=id, name=step)
        wait(workers, rows.exists, id)
        started = datetime.fromisoformat(rows.get().document["started_at"]).timestamp()
        latencies.append((started - committed) * 1000)
    return sorted(latencies)


def wait(workers, condition, id: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        workers.check_alive()
        if time.monotonic() > deadline:
            raise SystemExit(f"{id}: nothing happened in 30s.")
        time.sleep(0.002)


def concurrent_starts(args: argparse.Namespace) -> None:
    """`--starts` start()s from `--threads` threads at once, nothing else running."""
    from django.db import connections

    import django_workflows as wf

    per_thread = args.starts // args.threads
    barrier = threading.Barrier(args.threads + 1)

    def starter(index: int) -> None:
        barrier.wait()
        for n in range(per_thread):
            wf.start("bench", {"steps": 1}, id=f"concurrent-{index:02d}-{n:06d}")
        connections.close_all()

    threads = [threading.Thread(target=starter, args=(i,)) for i in range(args.threads)]
    for thread in threads:
        thread.start()
    barrier.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    total = per_thread * args.threads
    print(
        f"concurrent starts: {total} start()s from {args.threads} threads in {elapsed:.2f}s = "
        f"{total / elapsed:.0f} starts/s"
    )


if __name__ == "__main__":
    main()
