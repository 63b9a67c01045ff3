"""How long a claim takes on a big table: 1,000,000 finished and 100,000 due instances.

    DB=postgres python benchmarks/claim_scale.py [--finished 1000000] [--due 100000] [--claims 50]
        [--queues] [--leased 10000]

Re-creates the benchmark database (`workflows_claim`, or BENCH_DB_NAME), fills it with SQL
(generate_series on PostgreSQL, recursive inserts on MariaDB), analyzes it, then times `claim()`
of 10 instances `--claims` times from one thread (each claim leases what it takes, so every claim
finds new due rows) and prints the median and p95, with the database's plan of the claim's
statements. The due instances never ran (`runs` 0), so a claim reads no journal for them, as for
new work. Figures are printed; nothing is asserted.

With `--stale-statistics` (PostgreSQL), the table is analyzed after the finished instances
are in and before the due ones, and autovacuum is off for it: the claims then run as after a
burst of starts that no ANALYZE has seen yet, when the planner's statistics say that few
instances are due.

With `--queues`, one due instance in a hundred waits in the queue "rare", nine in a hundred in
"gpu", the others (and every finished one) in "default", and the claim is timed for five workers
in turn: one of every queue, one of "rare" only (a small queue behind a big backlog), one of
"gpu" only, one of "default" only, and one of "default" and "gpu". With `--drop-queue-index`
(PostgreSQL) the queue's claim index is dropped first: what a one-queue claim costs without it.

With `--leased N`, N more instances are due but leased to a live worker (running, their lease
an hour ahead) and the most overdue of all, as while N instances run: the claim must not read
them to find the due ones behind them. With `--keys-at-limit K` too (K <= N), the claims run
under `Concurrency(limit=1, key=...)`: the leased instances hold K keys at their limit, the more
overdue half of the due instances wait on those keys, the other half each has a key of its own.
The first claim parks those that wait (store/parking.py): its time is printed apart ("first"),
and a second run with `--reuse` finds them parked.

With `--fair-keys K`, the due instances share K fair keys, due instance n of key t<n mod K>,
each at its turn as start() gives it (store/fairness.py): the claims are timed as before, with
how many keys the first claims took, and then a keyed start's two reads of its turn (the
line's front and its key's latest), for a key with instances waiting and for a new one.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=50)
    parser.add_argument("--queues", action="store_true", help="due rows in three queues")
    parser.add_argument("--leased", type=int, default=0, help="due instances held by a lease")
    parser.add_argument("--keys-at-limit", type=int, default=0, help="claims under a key limit")
    parser.add_argument("--fair-keys", type=int, default=0, help="due instances' fair keys")
    parser.add_argument(
        "--reuse", action="store_true", help="keep the tables of the last run (no fill)"
    )
    parser.add_argument("--drop-queue-index", action="store_true", help="PostgreSQL only")
    parser.add_argument(
        "--stale-statistics",
        action="store_true",
        help="PostgreSQL: the due instances come after the last ANALYZE",
    )
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
    from django_workflows.store.backends import backend
    from django_workflows.store.limits import ConcurrencyRule

    vendor = {"postgresql": "postgres", "mysql": "mysql", "sqlite": "sqlite"}[connection.vendor]
    if vendor == "sqlite":
        sys.exit(
            "SQLite: one worker process, and no SKIP LOCKED; run this on PostgreSQL or MariaDB."
        )
    if not args.reuse:
        recreate_database(vendor)
        connection.close()
    call_command("migrate", verbosity=0)
    table = WorkflowInstance._meta.db_table
    now = datetime(2026, 6, 1, tzinfo=UTC)
    # With --queues, one due instance in ten in "gpu"; percent signs doubled for the driver.
    spread = (
        "CASE WHEN n %% 100 = 0 THEN 'rare' WHEN n %% 10 = 0 THEN 'gpu' ELSE 'default' END"
        if args.queues
        else "'default'"
    )
    started = time.perf_counter()
    with connection.cursor() as cursor:
        if args.reuse:
            pass
        elif vendor == "postgres":
            fill = (
                f"INSERT INTO {table} (id, workflow, version, status, input, wake_at, priority, "
                f"runs, signal_cursor, cancel_requested, terminate_requested, journal_warned, "
                f"awaited, has_headers, created_at, updated_at, queue, generation, parked) "
                f"SELECT %s || n, 'bench', 1, %s, '{{{{}}}}'::jsonb, {{wake}}, 0, {{runs}}, 0, false, false, "
                f"false, false, false, %s - n * interval '1 second', %s, {{queue}}, 0, false "
                f"FROM generate_series(1, %s) AS n"
            )
            cursor.execute(
                fill.format(wake="NULL", queue="'default'", runs=1),
                ["done-", "completed", now, now, args.finished],
            )
            if args.stale_statistics:  # statistics of the finished alone, kept so
                cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
                cursor.execute(f"VACUUM ANALYZE {table}")
            cursor.execute(
                fill.format(wake="%s - n * interval '1 millisecond'", queue=spread, runs=0),
                ["due-", "pending", now, now, now, args.due],
            )
            if args.leased:
                cursor.execute(
                    fill.format(
                        wake="%s - interval '1 hour' - n * interval '1 millisecond'",
                        queue="'default'",
                        runs=1,
                    ),
                    ["held-", "running", now, now, now, args.leased],
                )
                cursor.execute(
                    f"UPDATE {table} SET lease_token = 'held', lease_owner = 'elsewhere', "
                    f"lease_until = %s WHERE id LIKE 'held-%%'",
                    [now + timedelta(hours=1)],
                )
            if not args.stale_statistics:
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
                f"awaited, has_headers, created_at, updated_at, queue, generation, parked) "
                f"WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < %s) "
                f"SELECT CONCAT(%s, n), 'bench', 1, %s, '{{{{}}}}', {{wake}}, 0, {{runs}}, 0, 0, 0, 0, 0, 0, "
                f"%s - INTERVAL n SECOND, %s, {{queue}}, 0, 0 FROM seq"
            )
            cursor.execute(
                fill.format(wake="NULL", queue="'default'", runs=1),
                [args.finished, "done-", "completed", now, now],
            )
            cursor.execute(
                fill.format(wake="%s - INTERVAL n * 1000 MICROSECOND", queue=spread, runs=0),
                [args.due, "due-", "pending", now, now, now],
            )
            if args.leased:
                cursor.execute(
                    fill.format(
                        wake="%s - INTERVAL 1 HOUR - INTERVAL n * 1000 MICROSECOND",
                        queue="'default'",
                        runs=1,
                    ),
                    [args.leased, "held-", "running", now, now, now],
                )
                cursor.execute(
                    f"UPDATE {table} SET lease_token = 'held', lease_owner = 'elsewhere', "
                    f"lease_until = %s WHERE id LIKE 'held-%%'",
                    [now + timedelta(hours=1)],
                )
            cursor.execute(f"ANALYZE TABLE {table}")
    if args.keys_at_limit and not args.reuse:
        _key(connection, vendor, table, args.keys_at_limit, args.due)
    if args.fair_keys and not args.reuse:
        _fair_keys(connection, vendor, table, args.fair_keys, now)
    if args.drop_queue_index:
        if vendor != "postgres":
            sys.exit("--drop-queue-index: PostgreSQL only (MariaDB's claim names the index).")
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX dw_instance_queue_due")
            cursor.execute(f"ANALYZE {table}")
    print(
        f"filled {args.finished:,} finished, {args.due:,} due and {args.leased:,} leased "
        f"instances in "
        f"{time.perf_counter() - started:.1f}s ({connection.vendor})"
    )
    workers: list[tuple[str, list[str] | None]] = [("every queue", None)]
    if args.queues:
        workers += [("queue rare", ["rare"]), ("queue gpu", ["gpu"])]
        workers += [("queue default", ["default"])]
        workers += [("queues default+gpu", ["default", "gpu"])]
    rules = {"bench": ConcurrencyRule(per_key=1)} if args.keys_at_limit else None
    keys_taken: set[str] = set()
    for label, queues in workers:
        timings = []
        reads = _index_reads(connection, vendor)
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
                queues=queues,
                concurrency=rules,
            )
            timings.append((time.perf_counter() - t) * 1000)
            keys_taken.update(i.fair_key for i in claim.instances if i.fair_key)
            assert len(claim.instances) == 10
            assert queues is None or {i.queue for i in claim.instances} <= set(queues)
        first = timings[0]  # under a key's limit, the claim that parks what waits on full keys
        timings.sort()
        p95 = timings[int(len(timings) * 0.95) - 1]
        read = _index_reads(connection, vendor) - reads
        print(
            f"{label}: claim of 10 instances, {args.claims} claims: median "
            f"{statistics.median(timings):.2f} ms, p95 {p95:.2f} ms, min {timings[0]:.2f} ms, "
            f"max {timings[-1]:.2f} ms, first {first:.2f} ms"
            + (f", {read / args.claims:.0f} index rows read per claim" if read else "")
        )
    if args.fair_keys:
        print(f"fair keys: {len(keys_taken):,} keys in the first {args.claims * 10:,} claimed")
        _time_turns(connection, now)
        t = time.perf_counter()
        keys = backend(connection.alias).listed_fair_keys(100)
        print(
            f"the admin's fair key filter: {len(keys)} keys in {(time.perf_counter() - t) * 1000:.2f} ms"
        )
    t = time.perf_counter()
    listed = backend(connection.alias).listed_queues(100)
    print(f"the admin's queue filter: {listed} in {(time.perf_counter() - t) * 1000:.2f} ms")
    for label, queues in [("every queue", None), ("queue rare", ["rare"])][: 1 + args.queues]:
        _explain(connection, vendor, now, label, queues, rules)


def _key(connection: Any, vendor: str, table: str, keys: int, due: int) -> None:
    """Concurrency keys: leased instance n holds key k<n mod keys>; due instance n waits on the
    same keys when it is in the more overdue half, on a key of its own (f<n>) otherwise."""
    number = (
        (lambda skip: f"CAST(SUBSTRING(id FROM {skip}) AS INTEGER)")
        if vendor == "postgres"
        else (lambda skip: f"CAST(SUBSTRING(id, {skip}) AS UNSIGNED)")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET concurrency_key = CONCAT('k', MOD({number(6)}, %s)) "
            f"WHERE id LIKE 'held-%%'",
            [keys],
        )
        cursor.execute(
            f"UPDATE {table} SET concurrency_key = CASE WHEN {number(5)} > %s "
            f"THEN CONCAT('k', MOD({number(5)}, %s)) ELSE CONCAT('f', {number(5)}) END "
            f"WHERE id LIKE 'due-%%'",
            [due // 2, keys],
        )
        cursor.execute(f"ANALYZE {'' if vendor == 'postgres' else 'TABLE '}{table}")


def _fair_keys(connection: Any, vendor: str, table: str, keys: int, now: datetime) -> None:
    """Fair keys: due instance n has key t<n mod keys>, and the turn start() would have given
    it: an hour ago, plus a microsecond for each instance of its key before it."""
    number = (
        "CAST(SUBSTRING(id FROM 5) AS INTEGER)"
        if vendor == "postgres"
        else "CAST(SUBSTRING(id, 5) AS UNSIGNED)"
    )
    turn = (
        f"%s + ({number} / %s) * interval '1 microsecond'"
        if vendor == "postgres"
        else f"%s + INTERVAL ({number} DIV %s) MICROSECOND"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET fair_key = CONCAT('t', MOD({number}, %s)), wake_at = {turn} "
            f"WHERE id LIKE 'due-%%'",
            [keys, now - timedelta(hours=1), keys],
        )
        cursor.execute(f"ANALYZE {'' if vendor == 'postgres' else 'TABLE '}{table}")


def _time_turns(connection: Any, now: datetime) -> None:
    """A keyed start's reads of its turn (store/fairness.py), for a key with instances
    waiting and a new one: median of 200, in a transaction rolled back."""
    from django_workflows.models import WorkflowInstance
    from django_workflows.store import fairness

    for label, key in (("a key with instances waiting", "t7"), ("a new key", "new")):
        timings = []
        for _ in range(200):
            instance = WorkflowInstance(
                fair_key=key, queue="default", priority=0, wake_at=now, created_at=now
            )
            t = time.perf_counter()
            fairness.take_turns(connection.alias, [instance])
            timings.append((time.perf_counter() - t) * 1000)
        print(f"a keyed start's turn, {label}: median {statistics.median(timings):.3f} ms")


def _index_reads(connection: Any, vendor: str) -> int:
    """MariaDB's and MySQL's count of index entries this session read (Handler_read_*), which
    a loaded machine does not change as it changes times; 0 elsewhere."""
    if vendor != "mysql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
        return sum(int(value) for name, value in cursor.fetchall() if name != "Handler_read_rnd")


def _explain(
    connection: Any,
    vendor: str,
    now: Any,
    label: str,
    queues: list[str] | None,
    rules: dict[str, Any] | None = None,
) -> None:
    """Print the database's plan of the claim's statements (of one queue, or every one): the
    statements claim() sends, caught as it runs in a transaction rolled back afterwards, each
    under EXPLAIN ANALYZE on PostgreSQL (the UPDATE too) and EXPLAIN on MariaDB (its SELECTs)."""
    from django.db import transaction

    from django_workflows.store import instances as store

    sent: list[tuple[str, Any]] = []

    def catch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append((sql, params))
        return execute(sql, params, many, context)

    with transaction.atomic(), connection.execute_wrapper(catch):
        store.claim(
            connection.alias,
            owner="explain",
            token=uuid.uuid4().hex,
            now=now,
            lease_until=now + timedelta(seconds=30),
            limit=10,
            workflows=[("bench", 1)],
            queues=queues,
            concurrency=rules,
        )
        transaction.set_rollback(True)
    prefix = "EXPLAIN (ANALYZE, BUFFERS) " if vendor == "postgres" else "EXPLAIN "
    with transaction.atomic(), connection.cursor() as cursor:
        for sql, params in sent:
            if vendor == "mysql" and "FOR UPDATE SKIP LOCKED" not in sql:
                continue
            if vendor == "postgres" and "WITH" not in sql and "FOR UPDATE" not in sql:
                continue
            cursor.execute(prefix + sql, params)
            print(f"the claim's plan ({label}):")
            for row in cursor.fetchall():
                print("   ", " | ".join(str(column) for column in row if column is not None))
        transaction.set_rollback(True)


if __name__ == "__main__":
    main()
