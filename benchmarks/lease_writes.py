"""The lease holder's writes alone, one thread: CPU per workflow's worth of writes, in this
thread and, on MariaDB, in the server thread of this connection.

    DB=mysql BENCH_DB_NAME=bench python benchmarks/lease_writes.py [N] [ROUNDS]

Drops and re-creates the benchmark database, then ROUNDS times leases N instances and writes
each as a three-step workflow's execution writes it (store.instances.write): three writes of a
step's result with the next step's start (guarded), the first extending the lease, then the
release with the output. Prints per round the thread's CPU (`time.thread_time()`) per
workflow, the server's CPU for this connection per workflow (MariaDB runs each connection in a
thread of its own: its Linux thread id from the process list, its CPU from /proc; the server's
background threads are left out), and the round trips per workflow (`execute()` calls).
Nothing else on the machine is counted, so a busy machine moves the figures less than a rate's.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def server_thread_seconds(tid: int) -> float:
    """The CPU of the server's thread `tid` (MariaDB), from /proc."""
    for stat in Path("/proc").glob(f"[0-9]*/task/{tid}/stat"):
        text = stat.read_text()
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND
    return 0.0


def server_thread(connection: Any) -> int:
    """The operating-system thread id of `connection`'s server thread on MariaDB (0 elsewhere),
    for server_thread_seconds()."""
    if connection.vendor != "mysql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT tid FROM information_schema.processlist WHERE id = CONNECTION_ID()")
        return int(cursor.fetchone()[0])


def main() -> None:
    sys.path.insert(0, str(ROOT))

    from benchmarks.harness import fresh_database

    fresh_database(os.environ.get("DB", "mysql"))
    from django.db import connection

    from django_workflows import clock
    from django_workflows.models import WorkflowInstance
    from django_workflows.store import instances as store

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tid = server_thread(connection)
    sent = [0]

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        sent[0] += 1
        return execute(sql, params, many, context)

    for round in range(rounds):
        now = clock.now()
        ids = [f"w-{round}-{i}" for i in range(n)]
        WorkflowInstance.objects.bulk_create(
            WorkflowInstance(
                id=id,
                workflow="bench",
                version=1,
                status="running",
                lease_token="t",
                lease_owner="bench",
                lease_until=now + timedelta(minutes=5),
                wake_at=now,
                created_at=now,
                updated_at=now,
            )
            for id in ids
        )
        sent[0] = 0
        started, server = time.thread_time(), server_thread_seconds(tid)
        with connection.execute_wrapper(count):
            for id in ids:
                for step in range(3):
                    done = {"kind": "step", "status": "completed", "result": step}
                    write = store.InstanceWrite(
                        now=clock.now(),
                        entries={f"step-{step}": done},
                        guarded_entries={f"step-{step + 1}": {"kind": "step", "attempt": 1}}
                        if step < 2
                        else {},
                        lease_until=clock.now() + timedelta(minutes=5) if step == 0 else None,
                    )
                    assert store.write("default", id, "t", write) is not None
                release = store.InstanceWrite(
                    now=clock.now(),
                    changes={"status": "completed", "output": 3},
                    release=store.Release(None, [], 0, had_waits=False),
                )
                assert store.write("default", id, "t", release) is not None
        worker = (time.thread_time() - started) / n * 1000
        served = (server_thread_seconds(tid) - server) / n * 1000 if tid else 0.0
        print(
            f"round {round + 1}: per workflow (4 writes) {worker:.2f} ms here + {served:.2f} ms "
            f"in the server's thread, {sent[0] / n:.2f} round trips"
        )


if __name__ == "__main__":
    main()
