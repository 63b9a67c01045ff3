"""signal() and purge() on big tables: many instances suspended on distinct keys, many finished.

    DB=postgres python benchmarks/signal_scale.py [--finished 1000000] [--suspended 100000]
        [--samples 200] [--wakeups 30] [--purges 3] [--batch 10000] [--reuse]

Re-creates the benchmark database (`workflows_signal`, or BENCH_DB_NAME) and fills it as the
engine would: one `bench-signal` instance (it waits for the signal `go` keyed by its own id) and
one one-step `bench` instance are run to their suspension and their end with `drain()`, then
their rows (the instance, its journal, its wait registrations) are copied with SQL
(generate_series on PostgreSQL, a recursive CTE on MariaDB) under new ids: --suspended
instances suspended on distinct keys and --finished completed ones, finished a minute apart
(the newest a day ago). Then, with the tables analyzed:

1. signal(): --samples calls `signal("go", key=<a suspended instance's id>)`, one at a time,
   each to a different instance: median, p95, the time of each of its statements, and the plan
   of its statements (`EXPLAIN (ANALYZE, BUFFERS)` on PostgreSQL, `EXPLAIN` and the index rows
   read, `Handler_read_*`, on MariaDB).
2. Next step: one `runworkflows` process; --wakeups signal()s, each after a random pause; from
   signal()'s return (committed) to the `after` step's `started_at` in the worker.
3. purge(): with the worker stopped, --purges batches of --batch finished instances, oldest
   first (the store's batch, `maintenance.purge`, which `django_workflows.purge()` repeats), and
   then one `django_workflows.purge(older_than=..., batch_size=--batch)` whose cut-off leaves
   exactly one batch: each one's time, its statements' times, and the plans on PostgreSQL.
   With --reuse the earlier run's purges took those oldest instances already: its cut-off
   then finds fewer (or none), and the instances signalled before are drawn again, rarely.

The code measured is the checkout the script is run from (its working directory, when it holds
`django_workflows/`): run it from another checkout to measure that one with this script.
Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
ROOT = Path.cwd() if (Path.cwd() / "django_workflows").is_dir() else HERE
SETTINGS = "benchmarks.settings"
SUSPENDED, FINISHED = "sus-", "done-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--suspended", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=200, help="signal() calls timed")
    parser.add_argument("--wakeups", type=int, default=30, help="signal() -> step samples")
    parser.add_argument("--purges", type=int, default=3, help="purge batches timed")
    parser.add_argument("--batch", type=int, default=10_000, help="instances per purge batch")
    parser.add_argument("--reuse", action="store_true", help="keep the last run's tables")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    os.environ.setdefault("BENCH_DB_NAME", "workflows_signal")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    import django_workflows as wf
    from benchmarks.run import recreate_database

    vendor = {"postgresql": "postgres", "mysql": "mysql", "sqlite": "sqlite"}[connection.vendor]
    if vendor == "sqlite":
        sys.exit("Run this on PostgreSQL or MariaDB.")
    if not args.reuse:
        recreate_database(vendor)
        connection.close()
    call_command("migrate", verbosity=0)
    print(f"database: {vendor} {connection.settings_dict['NAME']}; code: {wf.__file__}")
    base = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    if not args.reuse:
        started = time.perf_counter()
        fill(connection, vendor, args, base)
        print(
            f"filled {args.suspended:,} suspended and {args.finished:,} finished instances in "
            f"{time.perf_counter() - started:.1f}s"
        )
    picked = random.sample(range(1, args.suspended + 1), args.samples + args.wakeups + 1)
    keys = [f"{SUSPENDED}{n}" for n in picked]
    time_signals(connection, vendor, keys[: args.samples])
    explain_signal(connection, vendor, keys[args.samples])
    time_wakeups(connection, vendor, keys[: args.samples], keys[args.samples + 1 :])
    time_purges(connection, vendor, args, base)


def fill(connection: Any, vendor: str, args: argparse.Namespace, base: datetime) -> None:
    """The two template instances run by the engine, then copied with SQL under new ids."""
    import django_workflows as wf
    from django_workflows.models import JournalEntry, Status, Wait, WorkflowInstance

    wf.start("bench-signal", {}, id="tmpl-suspended")
    wf.start("bench", {"steps": 1}, id="tmpl-finished")
    wf.drain()
    assert wf.get_status("tmpl-suspended").status == Status.SUSPENDED
    assert wf.get_status("tmpl-finished").status == Status.COMPLETED
    instance, journal, wait = (m._meta.db_table for m in (WorkflowInstance, JournalEntry, Wait))
    columns = [f.column for f in WorkflowInstance._meta.concrete_fields]
    q = connection.ops.quote_name
    if vendor == "postgres":
        numbers = "generate_series(1, %s) AS seq(n)"
        ago = "%s - n * %s * interval '1 minute'"
        document = "replace(t.document::text, %s, CONCAT(%s, n))::jsonb"
    else:
        numbers = "(WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq "
        numbers += "WHERE n < %s) SELECT n FROM seq) AS seq"
        ago, document = "%s - INTERVAL n * %s MINUTE", "REPLACE(t.document, %s, CONCAT(%s, n))"
    with connection.cursor() as cursor:
        if vendor == "mysql":
            variable = (
                "max_recursive_iterations"
                if connection.mysql_is_mariadb
                else "cte_max_recursion_depth"
            )
            cursor.execute(f"SET SESSION {variable} = 2000000")
        # Finished instance n ended n minutes before `base`; suspended instance n went to
        # sleep 10 n minutes before it: the two spread over the same years.
        for template, prefix, count, spacing in [
            ("tmpl-suspended", SUSPENDED, args.suspended, 10),
            ("tmpl-finished", FINISHED, args.finished, 1),
        ]:
            values, params = [], []
            for column in columns:
                if column == "id":
                    values.append("CONCAT(%s, n)")
                    params.append(prefix)
                elif column in ("created_at", "updated_at"):
                    values.append(ago)
                    params += [base, spacing]
                else:
                    values.append(f"t.{q(column)}")
            cursor.execute(
                f"INSERT INTO {instance} ({', '.join(map(q, columns))}) SELECT {', '.join(values)} "
                f"FROM {numbers}, {instance} t WHERE t.id = %s",
                [*params, count, template],
            )
            cursor.execute(
                f"INSERT INTO {journal} (instance_id, name, document) "
                f"SELECT CONCAT(%s, n), t.name, {document} FROM {numbers}, {journal} t "
                f"WHERE t.instance_id = %s",
                [prefix, template, prefix, count, template],
            )
            cursor.execute(
                f"INSERT INTO {wait} (instance_id, {q('signal')}, {q('key')}) "
                f"SELECT CONCAT(%s, n), t.{q('signal')}, CONCAT(%s, n) FROM {numbers}, {wait} t "
                f"WHERE t.instance_id = %s",
                [prefix, prefix, count, template],
            )
        for table in [instance, journal, wait]:
            cursor.execute(
                f"VACUUM ANALYZE {table}" if vendor == "postgres" else f"ANALYZE TABLE {table}"
            )
            if vendor == "mysql":
                cursor.fetchall()


@contextlib.contextmanager
def statements(connection: Any) -> Iterator[list[tuple[str, Any, float]]]:
    """Every statement sent meanwhile: its SQL, parameters and milliseconds."""
    sent: list[tuple[str, Any, float]] = []

    def note(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            sent.append((sql, params, (time.perf_counter() - t) * 1000))

    with connection.execute_wrapper(note):
        yield sent


def breakdown(sent: list[tuple[str, Any, float]], calls: int) -> None:
    """The statements' median time per call, by their first 90 characters, in order sent."""
    kinds: dict[str, list[float]] = collections.defaultdict(list)
    for sql, _, ms in sent:
        kinds[" ".join(sql.split())[:90]].append(ms)
    for kind, times in kinds.items():
        print(
            f"    {len(times) / calls:4.1f}x per call, median {statistics.median(times):7.2f} ms, "
            f"total {sum(times) / calls:7.2f} ms/call: {kind}"
        )


def index_reads(connection: Any, vendor: str) -> int:
    """MariaDB's and MySQL's count of index entries this session read (Handler_read_*)."""
    if vendor != "mysql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
        return sum(int(value) for name, value in cursor.fetchall() if name != "Handler_read_rnd")


def report(label: str, timings: list[float]) -> None:
    timings = sorted(timings)
    p95 = timings[max(0, round(0.95 * (len(timings) - 1)))]
    print(
        f"{label} ({len(timings)} samples): median {statistics.median(timings):.2f} ms, p95 "
        f"{p95:.2f} ms, min {timings[0]:.2f} ms, max {timings[-1]:.2f} ms"
    )


def time_signals(connection: Any, vendor: str, keys: list[str]) -> None:
    import django_workflows as wf

    timings = []
    reads = index_reads(connection, vendor)
    with statements(connection) as sent:
        for key in keys:
            t = time.perf_counter()
            result = wf.signal("go", {"n": 1}, key=key)
            timings.append((time.perf_counter() - t) * 1000)
            assert result.created
    read = index_reads(connection, vendor) - reads
    report("signal() to one of the suspended instances", timings)
    if read:
        print(f"    {read / len(keys):.0f} index rows read per signal() (Handler_read_*)")
    breakdown(sent, len(keys))


def explain(connection: Any, vendor: str, sent: list[tuple[str, Any, float]], limit: int) -> None:
    """Each caught statement's plan, in a transaction rolled back (long lines cut)."""
    from django.db import transaction

    prefix = "EXPLAIN (ANALYZE, BUFFERS) " if vendor == "postgres" else "EXPLAIN "
    with transaction.atomic():
        with connection.cursor() as cursor:
            for sql, params, _ in sent:
                if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "WITH")):
                    continue
                if vendor == "postgres" and "pg_advisory" in sql:
                    continue
                print(f"  plan of: {' '.join(sql.split())[:limit]}")
                cursor.execute(prefix + sql, params)
                for row in cursor.fetchall():
                    line = " | ".join(str(column) for column in row if column is not None)
                    print("     ", line[:limit])
        transaction.set_rollback(True)


def explain_signal(connection: Any, vendor: str, key: str) -> None:
    """The plans of one signal()'s statements, caught in a transaction rolled back."""
    from django.db import transaction

    import django_workflows as wf

    with transaction.atomic(), statements(connection) as sent:
        wf.signal("go", {"n": 1}, key=key)
        transaction.set_rollback(True)
    print("signal()'s statements:")
    explain(connection, vendor, sent, 240)


def time_wakeups(connection: Any, vendor: str, signalled: list[str], keys: list[str]) -> None:
    """From signal()'s commit here to the next step's start in a runworkflows process."""
    import django_workflows as wf
    from benchmarks.run import Workers
    from django_workflows.models import JournalEntry, Status, WorkflowInstance

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    options = dict(in_process=False, concurrency=10, poll_interval=None, once=False, processes=1)
    workers = Workers(argparse.Namespace(**options), env)
    workers.start()
    latencies = []
    try:
        # The instances the timed signal()s woke run first.
        deadline = time.monotonic() + 300
        left = WorkflowInstance.objects.filter(pk__in=signalled).exclude(status=Status.COMPLETED)
        while left.exists():
            workers.check_alive()
            if time.monotonic() > deadline:
                raise SystemExit("the signalled instances did not complete in 300s")
            time.sleep(0.2)
        for key in keys:
            time.sleep(random.uniform(0.2, 0.6))
            wf.signal("go", {"n": 1}, key=key)
            committed = time.time()
            rows = JournalEntry.objects.filter(instance_id=key, name="after")
            deadline = time.monotonic() + 30
            while not rows.exists():
                workers.check_alive()
                if time.monotonic() > deadline:
                    raise SystemExit(f"{key}: no step 30s after its signal")
                time.sleep(0.002)
            started = datetime.fromisoformat(rows.get().document["started_at"]).timestamp()
            latencies.append((started - committed) * 1000)
    finally:
        workers.stop()
    report("signal() committed -> the instance's next step in the worker", latencies)


def time_purges(connection: Any, vendor: str, args: argparse.Namespace, base: datetime) -> None:
    """--purges store batches, then one public purge() of one batch, from the oldest."""
    import django_workflows as wf
    from django_workflows.models import Status
    from django_workflows.store import maintenance

    statuses = [Status.COMPLETED, Status.FAILED, Status.CANCELLED]
    timings, reads = [], index_reads(connection, vendor)
    with statements(connection) as sent:
        for _ in range(args.purges):
            t = time.perf_counter()
            purged = maintenance.purge(
                connection.alias, statuses=statuses, before=base, limit=args.batch
            )
            timings.append((time.perf_counter() - t) * 1000)
            assert purged.instances == args.batch, purged
    read = index_reads(connection, vendor) - reads
    report(f"a purge batch of {args.batch:,} finished instances (maintenance.purge)", timings)
    if read:
        print(f"    {read / args.purges:.0f} index rows read per batch (Handler_read_*)")
    breakdown(sent, args.purges)
    # Finished instance n ended n minutes before `base` (fill()); those above n = left - batch
    # are the next batch: a cut-off between n and n + 1 minutes before `base` leaves just them.
    left = args.finished - args.purges * args.batch
    cutoff = base - timedelta(minutes=left - args.batch, seconds=30)
    t = time.perf_counter()
    result = wf.purge(older_than=datetime.now(UTC) - cutoff, batch_size=args.batch)
    print(
        f"django_workflows.purge(batch_size={args.batch}) of one batch: "
        f"{(time.perf_counter() - t) * 1000:.0f} ms, {result}"
    )
    if vendor == "postgres":
        from django.db import transaction

        with transaction.atomic(), statements(connection) as caught:
            maintenance.purge(connection.alias, statuses=statuses, before=base, limit=args.batch)
            transaction.set_rollback(True)
        print("a purge batch's statements:")
        explain(connection, vendor, caught, 300)


if __name__ == "__main__":
    main()
