"""This process's CPU per workflow for in-process drain()s of three-step workflows.

    DB=postgres BENCH_DB_NAME=bench [BENCH_OTEL=1] python benchmarks/drain_cpu.py [N] [ROUNDS]

Drops and re-creates the benchmark database, then ROUNDS times starts N instances of `bench`
(outside any span) and drains them with `drain()` (one claim at a time), printing the CPU
(`time.process_time()`) per workflow of each drain, and on PostgreSQL and MariaDB the database
server's CPU per workflow over the same drain (server-wide, benchmarks/cpu.py; on MariaDB also
that of this connection's server thread alone, as benchmarks/lease_writes.py reads it). A last
drain of N more, outside the figures, counts the round trips per workflow: the statements this
process sends, each `execute()` one round trip (a MariaDB batch of several statements is one).
BENCH_OTEL=1 puts the OpenTelemetry middleware on, as `run.py --otel` does; BENCH_METRICS=1
the worker's Prometheus counters (METRICS). Less moved
by a busy machine than a rate.

BENCH_STEPS=K: workflows of K steps instead of 3. BENCH_POOL=C: each drain is a
`Worker(concurrency=C).run_until_idle()` (the thread pool and batched claims of
`runworkflows --once`) instead of `drain()`; its threads' CPU is this process's too.
BENCH_CODE=<checkout>: measure that checkout's django_workflows (e.g. another branch's) with
this script.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("BENCH_CODE") or Path(__file__).resolve().parent.parent).resolve()


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")
    import django
    from django.conf import settings

    from benchmarks.run import recreate_database

    settings.DATABASES  # noqa: B018 - load the settings before django.setup()
    recreate_database(os.environ.get("DB", "sqlite"))
    django.setup()
    from django.core.management import call_command

    import django_workflows as wf

    call_command("migrate", verbosity=0)
    from django_workflows.worker import Worker

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    steps = int(os.environ.get("BENCH_STEPS") or 3)
    pool = int(os.environ.get("BENCH_POOL") or 0)
    from django.db import connection

    from benchmarks.cpu import server_seconds
    from benchmarks.lease_writes import server_thread, server_thread_seconds

    vendor = os.environ.get("DB", "sqlite")
    tid = server_thread(connection)
    figures, server, served = [], [], []
    for round in range(rounds):
        for i in range(n):
            wf.start("bench", {"steps": steps}, id=f"cpu-{round}-{i}")
        started, server_started = time.process_time(), server_seconds(vendor)
        thread_started = server_thread_seconds(tid) if tid else 0.0
        if pool:
            Worker(concurrency=pool).run_until_idle()
        else:
            wf.drain()
        figures.append((time.process_time() - started) / n * 1000)
        server.append((server_seconds(vendor) - server_started) / n * 1000)
        if tid:
            served.append((server_thread_seconds(tid) - thread_started) / n * 1000)
    drain = "traced" if os.environ.get("BENCH_OTEL") else "sync"
    if os.environ.get("BENCH_METRICS"):
        drain += ", counted"
    how = f"pool of {pool}" if pool else "drain()"
    print(
        f"{drain}, {steps}-step, {how}, {wf.__file__}: CPU per workflow, ms: "
        f"{' '.join(f'{f:.2f}' for f in figures)}"
    )
    if vendor != "sqlite":
        print(f"database server CPU per workflow, ms: {' '.join(f'{f:.2f}' for f in server)}")
    if served:
        # MariaDB: the server thread of this process's connection alone (no other client's)
        print(f"its connection's server thread, ms: {' '.join(f'{f:.2f}' for f in served)}")
    sent = [0]

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        sent[0] += 1
        return execute(sql, params, many, context)

    for i in range(n):
        wf.start("bench", {"steps": steps}, id=f"count-{i}")
    with connection.execute_wrapper(count):
        wf.drain()
    print(f"round trips per workflow (drain): {sent[0] / n:.2f}")


if __name__ == "__main__":
    main()
