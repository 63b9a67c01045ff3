"""What a stream costs: a step's burst of items (batched) against one transaction an item,
workflow writes (one journaled transaction each), and how soon a reader gets an item.

    python benchmarks/streams.py --db postgres [--items 2000] [--samples 30]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it) and runs everything in this process, drain() executing the instances:

- burst: one step writes `--items` small items with step.stream() in a tight loop; the figures
  are the step's wall time, items per second and the transactions it took (the items' distinct
  created_at: one a batch). Then the same with batching off (engine.streams.LINGER = 0,
  BATCH = 1): one transaction an item.
- ctx: a workflow writes `--items` / 10 items with ctx.stream(); milliseconds per write.
- wake-up: read_stream() waits here while another thread appends one item after a random
  pause; from the append's commit to the item's yield, in milliseconds.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness import fresh_database

    fresh_database(args.db)
    from django.db import connections

    import django_workflows as wf
    from django_workflows import clock
    from django_workflows.engine import streams as engine_streams
    from django_workflows.models import WorkflowStreamItem
    from django_workflows.store import streams

    timings: dict[str, float] = {}

    @wf.workflow("bench-stream-burst")
    def burst(ctx, input):
        def talk(step):
            out = step.stream("tokens")
            started = time.perf_counter()
            for n in range(input["items"]):
                out.write({"token": f"t{n}"})
            out.flush()
            timings[ctx.instance_id] = time.perf_counter() - started
            return 1

        return ctx.step("talk", talk)

    @wf.workflow("bench-stream-ctx")
    def journaled(ctx, input):
        out = ctx.stream("lines")
        started = time.perf_counter()
        for n in range(input["items"]):
            out.write(f"line {n}")
        timings[ctx.instance_id] = time.perf_counter() - started
        return 1

    def run_burst(id: str) -> None:
        wf.start("bench-stream-burst", {"items": args.items}, id=id)
        wf.drain()
        seconds = timings[id]
        rows = WorkflowStreamItem.objects.filter(instance_id=id)
        batches = rows.values("created_at").distinct().count()
        print(
            f"step.stream() burst ({id}): {args.items} items in {seconds * 1000:.0f} ms, "
            f"{args.items / seconds:,.0f} items/s, {batches} transactions"
        )

    run_burst("burst-batched")
    linger, batch = engine_streams.LINGER, engine_streams.BATCH
    engine_streams.LINGER, engine_streams.BATCH = 0.0, 1
    try:
        run_burst("burst-one-by-one")
    finally:
        engine_streams.LINGER, engine_streams.BATCH = linger, batch

    count = max(1, args.items // 10)
    wf.start("bench-stream-ctx", {"items": count}, id="ctx")
    wf.drain()
    print(f"ctx.stream() writes: {timings['ctx'] / count * 1000:.2f} ms each ({count} writes)")

    @wf.workflow("bench-stream-open")
    def open_stream(ctx, input):
        ctx.wait_for_signal("never", "never")

    latencies: list[float] = []
    for index in range(args.samples):
        id = f"wake-{index:03d}"
        wf.start("bench-stream-open", id=id)
        wf.drain()
        committed: list[float] = []

        def append(id: str = id, committed: list[float] = committed) -> None:
            time.sleep(random.uniform(0.05, 0.2))
            try:
                streams.append("default", id, "s", ["x"], attempt=None, now=clock.now())
                committed.append(time.perf_counter())
            finally:
                connections.close_all()

        writer = threading.Thread(target=append)
        writer.start()
        next(wf.read_stream(id, "s", timeout=10))
        got = time.perf_counter()
        writer.join()
        latencies.append(max(0.0, got - committed[0]) * 1000)
    latencies.sort()
    print(
        f"read_stream() wake-up, append in another thread -> yielded ({len(latencies)} "
        f"samples): median {statistics.median(latencies):.2f} ms, max {latencies[-1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
