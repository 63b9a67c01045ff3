"""How long the admin's pages take on a big table: 1,000,000 instances.

    DB=postgres python benchmarks/admin_scale.py [--instances 1000000] [--signals 100000]
        [--runs 5] [--reuse] [--queries]

Re-creates the benchmark database (`workflows_admin`, or BENCH_DB_NAME), migrates it with the
admin's apps (benchmarks/admin_settings.py) and fills it with SQL (generate_series on
PostgreSQL, a recursive SELECT on MariaDB and MySQL): N instances `order-00000000`... created
over a year, of the workflows `bench` and `bench-value`; one in a hundred failed, one in a
hundred suspended with no wake time, one in a hundred due (since the year's start), the others
completed; one in ten with a fair key (`t0`...`t999`) and the tag `vip`, five with the tag
`rare`; one in fifty started by the schedule `nightly`. Then `--signals` signals, ANALYZE, and a superuser.

Each page is a GET through Django's test client, logged in as that superuser: the whole view,
its queries and its template. Printed per page: the median and the slowest of `--runs` (after
one untimed GET), and how many queries it made; with `--queries`, its three slowest queries
of one more GET. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 1, 1, tzinfo=UTC)
YEAR = 31_536_000  # seconds
LIST = "/admin/django_workflows/workflowinstance/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--signals", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="keep the last run's tables")
    parser.add_argument("--queries", action="store_true", help="each page's slowest queries")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.admin_settings")
    os.environ.setdefault("BENCH_DB_NAME", "workflows_admin")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from benchmarks.run import recreate_database

    vendor = {"postgresql": "postgres", "mysql": "mysql", "sqlite": "sqlite"}[connection.vendor]
    if vendor == "sqlite":
        sys.exit("Run this on PostgreSQL or MariaDB: the fill is theirs.")
    if not args.reuse:
        recreate_database(vendor)
        connection.close()
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        _fill(connection, vendor, args.instances, args.signals)
        print(
            f"filled {args.instances:,} instances and {args.signals:,} signals in "
            f"{time.perf_counter() - started:.1f}s ({connection.vendor})"
        )
    middle = f"order-{args.instances // 2:08d}"
    pages = [
        ("the instance list", LIST, {}),
        ("failed", LIST, {"status__exact": "failed"}),
        ("one workflow", LIST, {"workflow__exact": "bench-value"}),
        ("one queue", LIST, {"queue": "default"}),
        ("one fair key", LIST, {"fair_key": "t7"}),
        ("one tag", LIST, {"tag": "vip"}),
        ("a rare tag", LIST, {"tag": "rare"}),
        ("a schedule's", LIST, {"schedule_id__exact": "nightly"}),
        ("search: an id", LIST, {"q": middle}),
        ("search: abc", LIST, {"q": "abc"}),
        ("search: a tag", LIST, {"q": "vip"}),
        ("search: a rare tag", LIST, {"q": "rare"}),
        (
            "created in June",
            LIST,
            {"created_at__gte": "2026-06-01", "created_at__lt": "2026-07-01"},
        ),
        ("page 100", LIST, {"p": "100"}),
        ("an instance", f"{LIST}{middle}/change/", {}),
        ("the signals", "/admin/django_workflows/signal/", {}),
        ("the schedules", "/admin/django_workflows/workflowschedule/", {}),
        ("the workers", "/admin/django_workflows/workerprocess/", {}),
        ("the admin's index", "/admin/", {}),
    ]
    client = _client()
    for label, url, query in pages:
        response = client.get(url, query)
        if response.status_code != 200:
            print(f"{label}: HTTP {response.status_code}")
            continue
        timings = []
        for _ in range(args.runs):
            t = time.perf_counter()
            client.get(url, query)
            timings.append((time.perf_counter() - t) * 1000)
        queries = _queries(client, url, query)
        print(
            f"{label}: median {statistics.median(timings):.0f} ms, slowest "
            f"{max(timings):.0f} ms, {len(queries)} queries"
        )
        if args.queries:
            for seconds, sql in sorted(queries, reverse=True)[:3]:
                print(f"    {seconds * 1000:7.1f} ms  {sql[:160]}")


def _client() -> Any:
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", "bench@example.com", "bench"
    )
    client = Client()
    client.force_login(user)
    return client


def _queries(client: Any, url: str, query: dict[str, str]) -> list[tuple[float, str]]:
    """The queries of one more GET, each (seconds, SQL)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        client.get(url, query)
    return [(float(q["time"]), q["sql"]) for q in captured.captured_queries]


def _fill(connection: Any, vendor: str, instances: int, signals: int) -> None:
    """The instances, their tags and the signals (see above), by INSERT ... SELECT."""
    from django_workflows.models import InstanceTag, Signal, WorkflowInstance

    table = WorkflowInstance._meta.db_table
    if vendor == "postgres":
        id, tenant = "'order-' || lpad(n::text, 8, '0')", "'t' || (n %% 1000)::text"
        created = f"%s + n * interval '{YEAR / instances} seconds'"
        false, json = "false", "'{}'::jsonb"
    else:
        variable = (
            "max_recursive_iterations" if connection.mysql_is_mariadb else "cte_max_recursion_depth"
        )
        with connection.cursor() as cursor:
            cursor.execute(f"SET SESSION {variable} = 20000000")
        id, tenant = "CONCAT('order-', LPAD(n, 8, '0'))", "CONCAT('t', n %% 1000)"
        created = f"%s + INTERVAL ROUND(n * {YEAR / instances * 1_000_000}) MICROSECOND"
        false, json = "0", "'{}'"

    def numbered(count: int, select: str) -> str:
        """`select`, whose `FROM_N` reads the numbers `n` from 0 to count - 1."""
        if vendor == "postgres":
            return select.replace("FROM_N", f"FROM generate_series(0, {count - 1}) AS n")
        numbers = f"SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < {count - 1}"
        return f"WITH RECURSIVE seq(n) AS ({numbers}) " + select.replace("FROM_N", "FROM seq")

    columns = (
        "id, workflow, version, status, input, wake_at, priority, runs, signal_cursor, "
        "cancel_requested, terminate_requested, journal_warned, awaited, has_headers, "
        "created_at, updated_at, queue, generation, parked, fair_key, schedule_id"
    )
    status = (
        "CASE WHEN n %% 100 = 0 THEN 'failed' WHEN n %% 100 = 1 THEN 'suspended' "
        "WHEN n %% 100 = 2 THEN 'pending' ELSE 'completed' END"
    )
    fill = f"INSERT INTO {table} ({columns}) " + numbered(
        instances,
        f"SELECT {id}, CASE WHEN n %% 7 = 0 THEN 'bench-value' ELSE 'bench' END, 1, {status}, "
        f"{json}, CASE WHEN n %% 100 = 2 THEN %s END, 0, 1, 0, {false}, {false}, {false}, "
        f"{false}, {false}, {created}, {created}, 'default', 0, {false}, "
        f"CASE WHEN n %% 10 = 0 THEN {tenant} END, CASE WHEN n %% 50 = 0 THEN 'nightly' END "
        f"FROM_N",
    )
    key = connection.ops.quote_name("key")
    signal = f"INSERT INTO {Signal._meta.db_table} (name, {key}, payload, created_at) " + (
        numbered(signals, f"SELECT 'shipped', {id}, {json}, {created} FROM_N")
    )
    tags = InstanceTag._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(fill, [START, START, START])
        cursor.execute(
            f"INSERT INTO {tags} (instance_id, tag) SELECT id, 'vip' FROM {table} "
            f"WHERE fair_key IS NOT NULL"
        )
        rare = [f"order-{n:08d}" for n in range(3, instances, max(instances // 5, 1))][:5]
        cursor.execute(
            f"INSERT INTO {tags} (instance_id, tag) SELECT id, 'rare' FROM {table} "
            f"WHERE id IN ({', '.join(['%s'] * len(rare))})",
            rare,
        )
        cursor.execute(signal, [START])
        for name in (table, tags, Signal._meta.db_table):
            cursor.execute(f"ANALYZE {'' if vendor == 'postgres' else 'TABLE '}{name}")


if __name__ == "__main__":
    main()
