"""How long a claim takes on a big table: 1,000,000 finished and 100,000 due instances.

    DB=postgres python benchmarks/claim_scale.py [--finished 1000000] [--due 100000] [--claims 50]

Re-creates the benchmark database (`workflows_claim`), fills it with SQL (generate_series on
PostgreSQL, recursive inserts on MariaDB), analyzes it, then times `claim()` of 10 instances
`--claims` times from one thread (each claim leases what it takes, so every claim finds new due
rows) and prints the median and p95, with the database's plan for the claim's candidate scan.
Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=50)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")
    os.environ.setdefault("BENCH_DB_NAME", "workflows_claim")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from benchmarks.run import recreate_database
    from django_workflows.models import WorkflowInstance
    from django_workflows.store import instances as store

    vendor = {"postgresql": "postgres", "mysql": "mysql", "sqlite": "sqlite"}[connection.vendor]
    if vendor == "sqlite":
        sys.exit(
            "SQLite: one worker process, and no SKIP LOCKED; run this on PostgreSQL or MariaDB."
        )
    recreate_database(vendor)
    connection.close()
    call_command("migrate", verbosity=0)
    table = WorkflowInstance._meta.db_table
    now = datetime(2026, 6, 1, tzinfo=UTC)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        if vendor == "postgres":
            fill = (
                f"INSERT INTO {table} (id, workflow, version, status, input, wake_at, priority, "
                f"runs, signal_cursor, cancel_requested, terminate_requested, journal_warned, "
                f"awaited, created_at, updated_at) "
                f"SELECT %s || n, 'bench', 1, %s, '{{{{}}}}'::jsonb, {{wake}}, 0, 1, 0, false, false, "
                f"false, false, %s - n * interval '1 second', %s FROM generate_series(1, %s) AS n"
            )
            cursor.execute(
                fill.format(wake="NULL"), ["done-", "completed", now, now, args.finished]
            )
            cursor.execute(
                fill.format(wake="%s - n * interval '1 millisecond'"),
                ["due-", "pending", now, now, now, args.due],
            )
            cursor.execute(f"VACUUM ANALYZE {table}")
        else:
            variable = (
                "max_recursive_iterations"
                if connection.mysql_is_mariadb
                else "cte_max_recursion_depth"
            )
            cursor.execute(f"SET SESSION {variable} = 2000000")
            fill = (
                f"INSERT INTO {table} (id, workflow, version, status, input, wake_at, priority, "
                f"runs, signal_cursor, cancel_requested, terminate_requested, journal_warned, "
                f"awaited, created_at, updated_at) "
                f"WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < %s) "
                f"SELECT CONCAT(%s, n), 'bench', 1, %s, '{{{{}}}}', {{wake}}, 0, 1, 0, 0, 0, 0, 0, "
                f"%s - INTERVAL n SECOND, %s FROM seq"
            )
            cursor.execute(
                fill.format(wake="NULL"), [args.finished, "done-", "completed", now, now]
            )
            cursor.execute(
                fill.format(wake="%s - INTERVAL n * 1000 MICROSECOND"),
                [args.due, "due-", "pending", now, now, now],
            )
            cursor.execute(f"ANALYZE TABLE {table}")
    print(
        f"filled {args.finished:,} finished and {args.due:,} due instances in "
        f"{time.perf_counter() - started:.1f}s ({connection.vendor})"
    )
    timings = []
    for _ in range(args.claims):
        t = time.perf_counter()
        claim = store.claim(
            connection.alias,
            owner="bench",
            token=uuid.uuid4().hex,
            now=now,
            lease_until=now + timedelta(seconds=30),
            limit=10,
            workflows=[("bench", 1)],
        )
        timings.append((time.perf_counter() - t) * 1000)
        assert len(claim.instances) == 10
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    print(
        f"claim of 10 instances, {args.claims} claims: median {statistics.median(timings):.2f} ms, "
        f"p95 {p95:.2f} ms, min {timings[0]:.2f} ms"
    )
    with connection.cursor() as cursor:
        hint = " FORCE INDEX (dw_instance_due)" if vendor == "mysql" else ""
        narrow = " AND priority = 0 AND wake_at >= '1000-01-01'" if vendor == "mysql" else ""
        candidates = (
            f"SELECT id FROM {table}{hint} WHERE wake_at <= %s{narrow} AND (lease_until IS NULL OR "
            f"lease_until < %s) AND (workflow = 'bench' AND version = 1) "
            f"ORDER BY priority, wake_at, created_at, id LIMIT 10 FOR UPDATE SKIP LOCKED"
        )
        cursor.execute(
            ("EXPLAIN (ANALYZE, BUFFERS) " if vendor == "postgres" else "EXPLAIN ") + candidates,
            [now, now],
        )
        print("the candidates' plan:")
        for row in cursor.fetchall():
            print("   ", " | ".join(str(column) for column in row if column is not None))


if __name__ == "__main__":
    main()
