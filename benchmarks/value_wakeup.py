"""How soon get_value(timeout=...) returns once a worker in another process publishes the value.

    python benchmarks/value_wakeup.py --db postgres [--samples 50]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it), starts one `runworkflows` process, and for each sample starts a `bench-value`
instance (benchmarks/benchapp/workflows.py), waits until it is suspended on its signal, then
calls get_value(id, "ready", timeout="30s") here while a thread of this process sends the
signal after a random pause. The worker takes the signal, calls ctx.set_value() and writes the
value; the figure is from the value's journal timestamp (taken in the worker just before its
write) to get_value()'s return here, in milliseconds: the write's commit, the NOTIFY on
PostgreSQL (or the next poll elsewhere) and the read. Both processes read the same clock.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness import fresh_database, worker_environment

    fresh_database(args.db)
    env = worker_environment(args.db)
    import django_workflows as wf
    from benchmarks.run import Workers, percentile
    from django_workflows.models import JournalEntry
    from django_workflows.store.published import PREFIX

    workers = Workers(
        argparse.Namespace(
            in_process=False, concurrency=4, poll_interval=None, once=False, processes=1
        ),
        env,
    )
    workers.start()
    latencies: list[float] = []
    try:
        for index in range(args.samples):
            id = f"value-{index:04d}"
            wf.start("bench-value", {}, id=id)
            deadline = time.monotonic() + 30
            while wf.get_status(id).status != "suspended":
                workers.check_alive()
                if time.monotonic() > deadline:
                    raise SystemExit(f"{id} did not reach its wait in 30s.")
                time.sleep(0.05)
            pause = random.uniform(0.1, 0.4)
            sender = threading.Timer(pause, lambda id=id: wf.signal("publish", key=id))
            sender.start()
            wf.get_value(id, "ready", timeout="30s")
            returned = time.time()
            sender.join()
            document = JournalEntry.objects.get(instance_id=id, name__startswith=PREFIX).document
            written = datetime.fromisoformat(document["finished_at"]).timestamp()
            latencies.append((returned - written) * 1000)
    finally:
        workers.stop()
    latencies.sort()
    print(
        f"get_value() wake-up, ctx.set_value() in a worker process -> get_value() returns here "
        f"({len(latencies)} samples): median {statistics.median(latencies):.1f} ms, "
        f"p95 {percentile(latencies, 0.95):.1f} ms, min {latencies[0]:.1f} ms, "
        f"max {latencies[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
