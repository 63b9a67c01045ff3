"""The floor under a drain of one-step workflows: what a worker drains when each execution makes
only its write, against the worker itself, alternated.

    DB=postgres python benchmarks/execution_floor.py [--workflows N] [--rounds R] [--concurrency C]

Each round re-creates the benchmark database, starts N one-step `bench` instances from one
thread, then drains them in this process with a `Worker` on its thread pool
(`run_until_idle()`, as `runworkflows --once`). The *worker* rounds run the engine. The
*floor* rounds run a `Worker` whose executions skip it: each makes the one write the engine
makes for such an instance (its step has attempts left, so its start is written with its end),
through the same store call (`store.instances.write`), with the same journal document and
output, and nothing else (no workflow code, no step machinery, no events, no middleware): the
step's entry, the output and the release, on which the next instance's lease rides, as the
worker's does.

So the floor is what the store, the database server and the machine's kernel cost one
execution, with the engine free. Prints per round the drain rate (N over the drain's wall
time), the CPU of this process per execution (its rusage: the worker's threads), of the
database server's processes per execution, and the share of the machine's cores busy over the
drain (`/proc/stat`), then the median of each kind.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def floor_worker(worker_class: Any) -> Any:
    """A Worker whose executions of one-step `bench` instances make only their write."""
    from django_workflows import clock
    from django_workflows.engine import journal
    from django_workflows.store import instances as store

    class FloorWorker(worker_class):  # type: ignore[misc,valid-type]
        def _run(self, instance, claim, token, propagate=False, ride=False):  # type: ignore[no-untyped-def]
            started = clock.now()
            running = {
                "kind": "step",
                "status": journal.RUNNING,
                "attempt": 1,
                "started_at": journal.timestamp(started),
                "progress": None,
                "pos": [0],
            }
            result = {"i": 0, "ok": True}
            finished = clock.now()
            done = {
                **running,
                "status": journal.COMPLETED,
                "result": result,
                "finished_at": journal.timestamp(finished),
            }
            end = store.InstanceWrite(
                now=finished,
                entries={"step-0": done},
                changes={
                    "status": "completed",
                    "output": {"steps": 1, "last": result},
                    "error": None,
                },
                release=store.Release(None, [], claim.last_signal_id, False),
            )
            flags = store.write(self.using, instance.id, token, end, self._ride() if ride else None)
            if flags is None:
                return "lease-lost", None
            return "completed", flags.rode

    return FloorWorker


def one_round(kind: str, n: int, concurrency: int, db: str) -> dict[str, float]:
    from benchmarks.cpu import machine_seconds, server_seconds
    from benchmarks.harness import fresh_database

    fresh_database(db)
    from django.db import connections

    import django_workflows as wf
    from django_workflows.models import WorkflowInstance
    from django_workflows.worker.worker import Worker

    for index in range(n):
        wf.start("bench", {"steps": 1}, id=f"floor-{index:06d}")
    connections.close_all()
    worker = (floor_worker(Worker) if kind == "floor" else Worker)(concurrency=concurrency)
    server = server_seconds(db)
    machine = machine_seconds()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    ran = worker.run_until_idle()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    machine_after = machine_seconds()
    server = server_seconds(db) - server
    completed = WorkflowInstance.objects.filter(status="completed").count()
    if ran != n or completed != n:
        raise SystemExit(f"{kind}: ran {ran}, completed {completed} of {n}")
    cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
    busy = (machine_after[0] - machine[0]) / (machine_after[1] - machine[1])
    figures = {
        "rate": n / wall,
        "worker_ms": 1000 * cpu / n,
        "server_ms": 1000 * server / n,
        "busy": 100 * busy,
    }
    print(
        f"{kind:6} {figures['rate']:6.0f}/s  worker {figures['worker_ms']:.3f} ms  "
        f"server {figures['server_ms']:.3f} ms an execution  cores busy {figures['busy']:.0f} %",
        flush=True,
    )
    connections.close_all()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10)
    options = parser.parse_args()
    db = os.environ.get("DB", "postgres")
    sys.path.insert(0, str(ROOT))
    results: dict[str, list[dict[str, float]]] = {"worker": [], "floor": []}
    for _ in range(options.rounds):
        for kind in results:
            results[kind].append(one_round(kind, options.workflows, options.concurrency, db))
    for kind, rounds in results.items():
        medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        print(
            f"median {kind:6} {medians['rate']:6.0f}/s  worker {medians['worker_ms']:.3f} ms  "
            f"server {medians['server_ms']:.3f} ms  cores busy {medians['busy']:.0f} %"
        )


if __name__ == "__main__":
    main()
