"""A worker's resident memory as it drains many short executions.

    python benchmarks/memory.py --db postgres [--executions 100000] [--every 10000] [--ahead 2000]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it) and starts one `runworkflows --concurrency 10` process. This process keeps about
--ahead one-step `bench` instances due (start()s from --starters threads, so the table never
holds all of them at once as due), and reads the worker's VmRSS (`/proc/<pid>/status`) each time --every more
executions completed: the figure is the size after 100,000 against the size after 10,000.

With BENCH_TRACEMALLOC=<dir>, the worker traces its allocations (benchmarks/settings.py) and
writes a tracemalloc snapshot to <dir> at each sample (SIGUSR1); the largest growths between
the first and the last snapshot are printed at the end. Tracing slows the worker and adds its
own memory: its VmRSS figures are not the plain worker's.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--executions", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000, help="executions between samples")
    parser.add_argument("--ahead", type=int, default=2_000, help="due instances kept started")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--starters", type=int, default=3, help="threads that start()")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness import fresh_database, worker_environment

    fresh_database(args.db)
    env = worker_environment(args.db)
    import django_workflows as wf
    from benchmarks.run import Workers
    from django_workflows.models import WorkflowInstance

    workers = Workers(
        argparse.Namespace(
            in_process=False,
            concurrency=args.concurrency,
            poll_interval=None,
            once=False,
            processes=1,
        ),
        env,
    )
    traces = os.environ.get("BENCH_TRACEMALLOC")
    workers.start()
    pid = workers.processes[0].pid
    counts = {"started": 0, "completed": 0}
    lock = threading.Lock()
    stop = threading.Event()

    def starter() -> None:
        """Keeps about --ahead instances started and not yet completed."""
        from django.db import connections

        try:
            while not stop.is_set():
                with lock:
                    index = counts["started"]
                    if index >= min(args.executions, counts["completed"] + args.ahead):
                        index = -1
                    else:
                        counts["started"] += 1
                if index < 0:
                    time.sleep(0.1)
                    continue
                wf.start("bench", {"steps": 1}, id=f"memory-{index:07d}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=starter) for _ in range(args.starters)]
    next_sample = args.every
    samples: list[tuple[int, int, float]] = []  # executions, VmRSS KiB, seconds
    began = time.monotonic()
    try:
        time.sleep(3)
        workers.check_alive()
        print(f"worker {pid} after start-up: VmRSS {vm_rss_kib(pid)} KiB")
        for thread in threads:
            thread.start()
        while counts["completed"] < args.executions:
            time.sleep(0.2)
            workers.check_alive()
            counts["completed"] = WorkflowInstance.objects.filter(status="completed").count()
            if counts["completed"] >= next_sample:
                rss = vm_rss_kib(pid)
                samples.append((counts["completed"], rss, time.monotonic() - began))
                print(
                    f"{counts['completed']:>7} executions ({time.monotonic() - began:6.0f}s): "
                    f"VmRSS {rss} KiB",
                    flush=True,
                )
                if traces:
                    os.kill(pid, signal.SIGUSR1)
                while next_sample <= counts["completed"]:
                    next_sample += args.every
    finally:
        stop.set()
        for thread in threads:
            if thread.is_alive():
                thread.join()
        workers.stop()
    elapsed = time.monotonic() - began
    completed = counts["completed"]
    print(f"{completed} executions in {elapsed:.0f}s = {completed / elapsed:.0f}/s")
    base = next((rss for executions, rss, _ in samples if executions >= 10_000), None)
    if base:
        last = samples[-1]
        print(
            f"VmRSS after {last[0]}: {last[1]} KiB; after 10,000: {base} KiB; "
            f"growth {100 * (last[1] - base) / base:+.1f} %"
        )
    if traces:
        compare_snapshots(Path(traces))


def compare_snapshots(folder: Path) -> None:
    import tracemalloc

    snapshots = sorted(folder.glob("snapshot-*.trace"))
    if len(snapshots) < 2:
        print(f"fewer than two snapshots in {folder}")
        return
    first = tracemalloc.Snapshot.load(str(snapshots[0]))
    last = tracemalloc.Snapshot.load(str(snapshots[-1]))
    print(f"largest growths from {snapshots[0].name} to {snapshots[-1].name}:")
    for stat in last.compare_to(first, "traceback")[:15]:
        print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
        for line in stat.traceback.format()[-8:]:
            print(f"      {line}")


if __name__ == "__main__":
    main()
