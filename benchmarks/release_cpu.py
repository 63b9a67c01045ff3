"""The PostgreSQL server's cost of the lease holder's release, and of the claims that feed it.

    DB=postgres BENCH_DB_NAME=bench python benchmarks/release_cpu.py [N] [--ride]

On the benchmark database as run.py left it (or an empty one, migrated), starts N + 50
instances of `bench`, then:
1. prints the planning and execution time of three statements, the minimum and median of 30
   `EXPLAIN (ANALYZE, SUMMARY)`s each rolled back: a release (the write that completes an
   instance), a claim of five (`PostgreSQLBackend.claim`) and, with --ride, a release that
   also leases the next due instance (dw_final_write_ride_v2; the statement's own planning and
   execution are those of the function call, its inner statements planned once per session);
2. measures the CPU of this connection's server backend (/proc/<pg_backend_pid()>/stat) over
   N releases: each five after a claim of five, as the worker's loop does them, or with --ride
   each release leasing the next.

The server must run on this machine. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEASE = timedelta(seconds=30)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    import django_workflows as wf
    from benchmarks.cpu import backend_seconds
    from django_workflows import clock
    from django_workflows.engine.registry import registry
    from django_workflows.models import Status
    from django_workflows.store import instances as store
    from django_workflows.store.backends import backend
    from django_workflows.store.backends.writes import ClaimRequest

    call_command("migrate", verbosity=0)
    count = int(next((a for a in sys.argv[1:] if a.isdigit()), 1000))
    ride = "--ride" in sys.argv
    for _ in range(count + 50):
        wf.start("bench", {"steps": 3}, id=f"release-{uuid.uuid4().hex[:12]}")
    pairs = registry.pairs(None)

    def release() -> store.InstanceWrite:
        return store.InstanceWrite(
            now=clock.now(),
            entries={"s": {"kind": "step", "status": "completed", "result": 1}},
            changes={"status": Status.COMPLETED, "output": 1, "error": None},
            release=store.Release(None, [], 0, had_waits=False),
        )

    def rides(token: str) -> dict[str, object]:
        return {"ride": store.Ride(owner="o", token=token, lease_duration=LEASE, workflows=pairs)}

    def sql_of(call) -> str:
        with transaction.atomic():
            with CaptureQueriesContext(connection) as queries:
                call()
            transaction.set_rollback(True)
        return queries.captured_queries[-1]["sql"]

    now = clock.now()
    [held] = store.claim(
        "default", owner="o", token="t", now=now, lease_until=now + LEASE, limit=1, workflows=pairs
    ).instances
    statements = {
        "a release": sql_of(lambda: store.write("default", held.id, "t", release())),
        "a claim of five": sql_of(
            lambda: backend("default").claim(
                ClaimRequest(
                    owner="o",
                    token="c",
                    now=clock.now(),
                    lease_until=clock.now() + LEASE,
                    limit=5,
                    workflows=pairs,
                )
            )
        ),
    }
    if ride:
        statements["a release with a ride"] = sql_of(
            lambda: store.write("default", held.id, "t", release(), **rides("r"))
        )
    for name, sql in statements.items():
        planning, execution = [], []
        for _ in range(30):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, SUMMARY) {sql}")
                lines = [row[0] for row in cursor.fetchall()]
                transaction.set_rollback(True)
            planning.append(float(next(x for x in lines if x.startswith("Planning")).split()[2]))
            execution.append(float(next(x for x in lines if x.startswith("Execution")).split()[2]))
        print(
            f"{name}: planning {min(planning):.3f} ms (median {statistics.median(planning):.3f}), "
            f"execution {min(execution):.3f} ms (median {statistics.median(execution):.3f})"
        )

    server_cpu = backend_seconds(connection)

    store.write("default", held.id, "t", release())
    before, python = server_cpu(), time.process_time()
    if ride:
        now = clock.now()
        [instance] = store.claim(
            "default",
            owner="o",
            token="r",
            now=now,
            lease_until=now + LEASE,
            limit=1,
            workflows=pairs,
        ).instances
        for n in range(count):
            flags = store.write(
                "default", instance.id, instance.lease_token, release(), **rides(f"r{n}")
            )
            instance = flags.rode.instances[0]
    else:
        for n in range(count // 5):
            now = clock.now()
            claimed = store.claim(
                "default",
                owner="o",
                token=f"c{n}",
                now=now,
                lease_until=now + LEASE,
                limit=5,
                workflows=pairs,
            )
            for instance in claimed.instances:
                store.write("default", instance.id, f"c{n}", release())
    server, python = server_cpu() - before, time.process_time() - python
    how = "each leasing the next" if ride else "five after each claim of five"
    print(
        f"{count} releases, {how}: the server backend's CPU {server / count * 1000:.3f} ms a "
        f"release, this process's {python / count * 1000:.3f} ms"
    )


if __name__ == "__main__":
    main()
