"""Throughput and wake-up latency of django-durable-workflows on one database.

    python benchmarks/run.py --db postgres --workflows 2000 --steps 3 --concurrency 10 [--processes 1]
    python benchmarks/run.py --db postgres --workflows 2000 --steps 3 --processes 2 --compare-processes

1. Drops and re-creates the benchmark database (`workflows_bench`, see benchmarks/settings.py)
   and migrates it.
2. Starts N instances of the `bench` workflow (K trivial steps, benchmarks/benchapp/workflows.py),
   one `start()` (one transaction) after another: starts/s.
3. Drains them with P real `python -m django runworkflows --concurrency C` processes
   (or, with --in-process, `Worker(concurrency=C).run()` in a thread of this process) and stops
   when every instance is completed: workflows/s and steps/s, over the wall time from launching
   the workers (Python start-up included) and over the active window (first step started to
   last instance completed, from the database's own timestamps).
4. On PostgreSQL, the committed transactions of the benchmark database
   (`pg_stat_database.xact_commit`) over the start phase and over the drain phase, per workflow
   and per step. The script's own reads of the database during the drain are counted and taken
   off. The count is the server's: it would include the empty transaction in which a backend
   that LISTENs (one per worker process) reads the notification queue each time it is woken by
   a NOTIFY; the engine announces an instance's end only when a result() waits for it, so the
   drain of this script sends none.
   The workers then idle for a few seconds, and the transactions they commit per second
   meanwhile (claims that find nothing, schedule ticks, renewals, registry beats: by the
   clock, not by the workflow) are printed, with the total per workflow without them.
   On MariaDB/MySQL, the server-wide `Com_commit` (explicit COMMITs: the store's multi-statement
   transactions) and `Handler_commit` (storage-engine commits, autocommit statements included,
   read-only ones too) over the same phases; nothing else should use the server meanwhile.
5. Wake-up latency: with the workers idle, starts one-step instances one at a time from this
   process and measures from the committed `start()` to the first step's `started_at` in the
   worker process (median, p95), at the worker's default poll interval unless --poll-interval.

With --async, the instances are of `bench-async`: the same steps, as an async def workflow
whose steps are coroutines (run on the worker's event loop).

With --keys K, the instances are of `bench-keyed`: the same steps under
`Concurrency(limit=1, key=customer)`, instance n of customer n mod K; with --keys K --unkeyed,
the same inputs drained as `bench`, without a limit, to compare with; the starts then go 500 to
a transaction (the start phase's figures are not comparable with the others').

With --once, the drain's processes are `runworkflows --once`, which exit once idle; no step 5.

With --compare-processes (and --processes P > 1), steps 1-4 run twice on a fresh database,
first with one process and then with P, and the ratio of the two drain rates is printed.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks import cpu  # imported in the functions, once main() put ROOT on sys.path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = "benchmarks.settings"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="sqlite")
    parser.add_argument("--workflows", type=int, default=2000, help="N instances")
    parser.add_argument("--steps", type=int, default=3, help="K steps per workflow")
    parser.add_argument("--concurrency", type=int, default=10, help="C threads per worker")
    parser.add_argument("--processes", type=int, default=1, help="P runworkflows processes")
    parser.add_argument(
        "--in-process", action="store_true", help="Worker(...).run() here instead of processes"
    )
    parser.add_argument(
        "--compare-processes",
        action="store_true",
        help="measure the drain with one process first, then with --processes, and the ratio",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="drain with `runworkflows --once` processes, which exit when idle (no latency phase)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="the OpenTelemetry middleware on, the SDK's BatchSpanProcessor dropping the spans",
    )
    parser.add_argument(
        "--async",
        dest="async_",
        action="store_true",
        help="drain `bench-async` (an async def workflow, async steps) instead of `bench`",
    )
    parser.add_argument(
        "--keys",
        type=int,
        default=0,
        help="K customers: drain `bench-keyed` (Concurrency(limit=1, key=customer))",
    )
    parser.add_argument(
        "--unkeyed", action="store_true", help="with --keys: the same inputs as `bench`, no limit"
    )
    parser.add_argument("--latency-samples", type=int, default=30)
    parser.add_argument(
        "--poll-interval", default=None, help="passed to runworkflows (default: its own, 1s)"
    )
    parser.add_argument("--timeout", type=float, default=600, help="give up after (seconds)")
    return parser.parse_args(argv)


# -- the database --------------------------------------------------------------------------------


def recreate_database(vendor: str) -> None:
    """Drop and create the benchmark database, before Django connects to it."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    name = database["NAME"]
    if vendor == "sqlite":
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(name + suffix).unlink(missing_ok=True)
        return
    if vendor == "postgres":
        import psycopg

        with psycopg.connect(**_pg_params("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return
    conn = _mysql_connect()
    try:
        cursor = conn.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    finally:
        conn.close()


def _mysql_connect() -> Any:
    """A connection to the MySQL/MariaDB server of the benchmark settings, without a database."""
    import MySQLdb
    from django.conf import settings

    database = settings.DATABASES["default"]
    return MySQLdb.connect(
        host=database["HOST"],
        port=int(database["PORT"]),
        user=database["USER"],
        password=database["PASSWORD"],
    )


def _pg_params(dbname: str) -> dict[str, object]:
    from django.conf import settings

    database = settings.DATABASES["default"]
    return {
        "host": database["HOST"],
        "port": int(database["PORT"]),
        "user": database["USER"],
        "password": database["PASSWORD"],
        "dbname": dbname,
    }


def xact_commit(vendor: str) -> int | None:
    """Committed transactions of the benchmark database so far (PostgreSQL only).

    Read from the `postgres` database, so the reading itself is not counted. Backends flush
    their counters when they exit and at most once a second while busy: callers close the
    connections they measure and wait a little first.
    """
    if vendor != "postgres":
        return None
    import psycopg
    from django.conf import settings

    with psycopg.connect(**_pg_params("postgres"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
            [settings.DATABASES["default"]["NAME"]],
        ).fetchone()
    return int(row[0])


def wal_bytes(vendor: str) -> int | None:
    """The server's write-ahead log position in bytes (PostgreSQL only): the WAL written
    between two readings, server-wide (other databases' writes included). What the rows and
    the index entries each write adds cost the log too."""
    if vendor != "postgres":
        return None
    import psycopg

    with psycopg.connect(**_pg_params("postgres"), autocommit=True) as conn:
        row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
    return int(row[0])


MYSQL_COUNTERS = ("Com_commit", "Handler_commit")


def mysql_commits(vendor: str) -> dict[str, int] | None:
    """The server-wide commit counters of MariaDB/MySQL (None elsewhere), from a connection of
    its own; reading them commits nothing."""
    if vendor != "mysql":
        return None
    conn = _mysql_connect()
    try:
        cursor = conn.cursor()
        cursor.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s)", list(MYSQL_COUNTERS))
        return {name: int(value) for name, value in cursor.fetchall()}
    finally:
        conn.close()


IDLE_SECONDS = 5.0


def idle_transactions(vendor: str) -> float | None:
    """The transactions per second of the benchmark database while the workers idle (they
    have drained everything), over IDLE_SECONDS (PostgreSQL only): what the drain phase counts
    by the clock rather than by the workflow."""
    if vendor != "postgres":
        return None
    settle_stats(vendor)
    before = xact_commit(vendor)
    time.sleep(IDLE_SECONDS)
    after = xact_commit(vendor)
    assert before is not None and after is not None
    return (after - before) / IDLE_SECONDS


def settle_stats(vendor: str) -> None:
    """Close this process's connections (their backends flush their statistics) and wait."""
    from django.db import connections

    connections.close_all()
    if vendor == "postgres":
        time.sleep(1.5)


# -- workers -------------------------------------------------------------------------------------


class Workers:
    """P runworkflows processes, or one in-process Worker."""

    def __init__(self, args: argparse.Namespace, env: dict[str, str]):
        self.args = args
        self.env = env
        self.processes: list[subprocess.Popen[bytes]] = []
        self.worker = None
        self.thread: threading.Thread | None = None
        self.logs: list[Path] = []

    def start(self) -> None:
        if self.args.in_process:
            from django_workflows.worker import Worker

            self.worker = Worker(concurrency=self.args.concurrency)
            self.thread = threading.Thread(target=self.worker.run, name="bench-worker")
            self.thread.start()
            return
        command = [
            sys.executable,
            "-m",
            "django",
            "runworkflows",
            "--concurrency",
            str(self.args.concurrency),
        ]
        if self.args.poll_interval:
            command += ["--poll-interval", self.args.poll_interval]
        if self.args.once:
            command.append("--once")
        for index in range(self.args.processes):
            log = Path(tempfile.gettempdir()) / f"workflows_bench_worker_{index}.log"
            self.logs.append(log)
            with open(log, "wb") as out:
                self.processes.append(
                    subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=out, stderr=out)
                )

    def check_alive(self) -> None:
        for index, process in enumerate(self.processes):
            if process.poll() is not None and not (self.args.once and process.returncode == 0):
                raise SystemExit(
                    f"runworkflows process {index} exited with {process.returncode}; "
                    f"see {self.logs[index]}:\n{self.logs[index].read_text()[-3000:]}"
                )

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            assert self.thread is not None
            self.thread.join(60)
            return
        for process in self.processes:
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()


# -- the phases ----------------------------------------------------------------------------------


def start_phase(args: argparse.Namespace) -> float:
    import django_workflows as wf

    name = "bench-async" if args.async_ else "bench"
    if args.keys and not args.unkeyed:
        name = "bench-keyed"
    began = time.perf_counter()
    if args.keys:
        # The drain is what --keys measures: the instances all due before it, started 500 to a
        # transaction (one commit each is minutes on a loaded machine).
        from django.db import transaction

        for first in range(0, args.workflows, 500):
            with transaction.atomic():
                for index in range(first, min(first + 500, args.workflows)):
                    input = {"steps": args.steps, "customer": f"c{index % args.keys:05d}"}
                    wf.start(name, input, id=f"bench-{index:06d}")
        return time.perf_counter() - began
    for index in range(args.workflows):
        wf.start(name, {"steps": args.steps}, id=f"bench-{index:06d}")
    return time.perf_counter() - began


def wait_until_completed(
    args: argparse.Namespace, workers: Workers, total: int, samples: list[cpu.Sample]
) -> tuple[float, int]:
    """Poll until `total` instances are completed; return the time and how many polls it took
    (each poll is one transaction in the benchmark database). Each poll appends a CPU sample."""
    from benchmarks import cpu
    from django_workflows.models import WorkflowInstance

    pids = [process.pid for process in workers.processes]
    polls = 0
    deadline = time.monotonic() + args.timeout
    began = time.perf_counter()
    while True:
        time.sleep(0.25)
        workers.check_alive()
        polls += 1
        done = WorkflowInstance.objects.filter(status="completed").count()
        samples.append(cpu.sample(args.db, pids, done, time.time()))
        if done >= total:
            return time.perf_counter() - began, polls
        if time.monotonic() > deadline:
            raise SystemExit(f"Only {done} of {total} instances completed in {args.timeout}s.")


def active_window() -> tuple[datetime, datetime]:
    """The first step's start and the last completion, from the stored times."""
    from django.db.models import Max

    from django_workflows.models import JournalEntry, WorkflowInstance

    first = min(
        datetime.fromisoformat(document["started_at"])
        for document in JournalEntry.objects.filter(name="step-0").values_list(
            "document", flat=True
        )
    )
    last = WorkflowInstance.objects.aggregate(last=Max("updated_at"))["last"]
    return first, last


def latency_phase(args: argparse.Namespace) -> list[float]:
    """Committed start() here to first step started in a worker, in milliseconds."""
    import django_workflows as wf
    from django_workflows.models import JournalEntry

    committed: dict[str, float] = {}
    for index in range(args.latency_samples):
        id = f"latency-{index:04d}"
        wf.start("bench-async" if args.async_ else "bench", {"steps": 1}, id=id)
        committed[id] = time.time()  # start() has committed when it returns
        # not in step with the workers' polls
        time.sleep(random.uniform(0.3, 1.3))
    deadline = time.monotonic() + 30
    while True:
        started = dict(
            JournalEntry.objects.filter(instance_id__in=list(committed), name="step-0").values_list(
                "instance_id", "document"
            )
        )
        if len(started) == len(committed) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return sorted(
        (datetime.fromisoformat(doc["started_at"]).timestamp() - committed[id]) * 1000
        for id, doc in started.items()
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def prepare_database(args: argparse.Namespace) -> None:
    """Drop, re-create and migrate the benchmark database (Django's connections closed first)."""
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    recreate_database(args.db)
    call_command("migrate", verbosity=0)
    settle_stats(args.db)


def measure(args: argparse.Namespace, env: dict[str, str], processes: int) -> dict[str, float]:
    """Start N instances, drain them with `processes` workers, print and return the figures."""
    args = argparse.Namespace(**{**vars(args), "processes": processes})
    print(
        f"run: {args.workflows} workflows x {args.steps} steps, concurrency {args.concurrency}, "
        + (
            f"{args.keys} customers {'without a limit' if args.unkeyed else 'limit 1 each'}, "
            if args.keys
            else ""
        )
        + f"{'in-process Worker' if args.in_process else f'{processes} runworkflows process(es)'}"
    )
    before_start = xact_commit(args.db)
    wal_before_start = wal_bytes(args.db)
    mysql_before_start = mysql_commits(args.db)
    start_seconds = start_phase(args)
    settle_stats(args.db)
    after_start = xact_commit(args.db)
    wal_after_start = wal_bytes(args.db)
    mysql_after_start = mysql_commits(args.db)
    print(
        f"start(): {args.workflows} in {start_seconds:.2f}s = "
        f"{args.workflows / start_seconds:.0f} starts/s"
    )

    workers = Workers(args, env)
    samples: list[cpu.Sample] = []
    launched = time.perf_counter()
    workers.start()
    idle_rate = None
    try:
        _, polls = wait_until_completed(args, workers, args.workflows, samples)
        wall = time.perf_counter() - launched
        first_step, last_completion = active_window()
        window = (last_completion - first_step).total_seconds()
        idle_rate = idle_transactions(args.db)
    finally:
        workers.stop()  # exiting backends flush their statistics
        lifetime = time.perf_counter() - launched
    settle_stats(args.db)
    after_drain = xact_commit(args.db)
    wal_after_drain = wal_bytes(args.db)
    mysql_after_drain = mysql_commits(args.db)
    steps = args.workflows * args.steps
    print(
        f"drain (wall, worker start-up included): {wall:.2f}s = "
        f"{args.workflows / wall:.0f} workflows/s, {steps / wall:.0f} steps/s"
    )
    print(
        f"drain (active window, first step to last completion): {window:.2f}s = "
        f"{args.workflows / window:.0f} workflows/s, {steps / window:.0f} steps/s"
    )

    print_cpu(args, samples, first_step.timestamp(), last_completion.timestamp())

    if before_start is not None and after_start is not None and after_drain is not None:
        started = after_start - before_start
        # this script's own reads during the drain: the polls, the window's 2 and settle's none
        drained = after_drain - after_start - polls - 2
        total = started + drained
        print(
            f"transactions (pg_stat_database.xact_commit): start phase {started} "
            f"({started / args.workflows:.2f}/workflow); drain phase {drained} "
            f"({drained / args.workflows:.2f}/workflow, {drained / steps:.2f}/step); "
            f"total {total / args.workflows:.2f}/workflow, {total / steps:.2f}/step"
        )
        print(
            "  (the drain phase includes the workers' idle polls between the last completion "
            "and their shutdown, about one claim per process per poll interval)"
        )
        if idle_rate is not None:
            timed = idle_rate * lifetime
            print(
                f"  idle, the workers commit {idle_rate:.1f} transactions/s (claims that find "
                f"nothing, schedule ticks, lease renewals, registry beats): over their "
                f"{lifetime:.1f}s at most {timed:.0f} of the drain phase; without them, total "
                f"{(total - timed) / args.workflows:.2f}/workflow"
            )
    if wal_before_start is not None and wal_after_start is not None and wal_after_drain:
        started, drained = wal_after_start - wal_before_start, wal_after_drain - wal_after_start
        print(
            f"WAL (server-wide): start phase {started / args.workflows:.0f} bytes/workflow; "
            f"drain phase {drained / args.workflows:.0f} bytes/workflow"
        )
    if mysql_before_start and mysql_after_start and mysql_after_drain:
        for name in MYSQL_COUNTERS:
            started = mysql_after_start[name] - mysql_before_start[name]
            drained = mysql_after_drain[name] - mysql_after_start[name]
            if name == "Handler_commit":
                drained -= polls + 2  # this script's own autocommit reads during the drain
            total = started + drained
            print(
                f"{name} (server-wide): start phase {started} "
                f"({started / args.workflows:.2f}/workflow); drain phase {drained} "
                f"({drained / args.workflows:.2f}/workflow, {drained / steps:.2f}/step); "
                f"total {total / args.workflows:.2f}/workflow"
            )
        print(
            "  (Com_commit counts explicit COMMITs, i.e. multi-statement transactions; "
            "Handler_commit counts storage-engine commits, autocommit statements and reads included)"
        )
    return {"wall": args.workflows / wall, "window": args.workflows / window}


def print_cpu(
    args: argparse.Namespace, samples: list[cpu.Sample], begin: float, end: float
) -> None:
    """CPU per workflow in the steady state, by whom, and the drain rate at which this machine's
    cores would all be busy at that cost."""
    from benchmarks import cpu

    figures = cpu.steady_state(samples, begin, end)
    if figures is None:
        print("cpu: the drain was too short to sample (fewer than two polls inside it)")
        return
    workers = "the in-process Worker" if args.in_process else "worker processes"
    print(
        f"cpu, steady state ({figures.workflows} workflows in {figures.seconds:.1f}s, "
        f"{figures.workflows / figures.seconds:.0f}/s): the {figures.cores} cores "
        f"{figures.busy_fraction:.0%} busy; per workflow {figures.total_ms:.2f} ms = "
        f"{figures.workers_ms:.2f} {workers} + {figures.server_ms:.2f} database server + "
        f"{figures.this_script_ms:.2f} this script + {figures.other_ms:.2f} other (kernel)"
    )
    print(
        f"  at that cost, every core busy would drain {figures.ceiling:.0f} workflows/s "
        "(the most any number of worker processes can reach on this machine)"
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.compare_processes and (args.processes < 2 or args.in_process):
        raise SystemExit("--compare-processes needs --processes 2 or more, and no --in-process.")
    env = {
        **os.environ,
        "DB": args.db,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    if args.otel:
        env["BENCH_OTEL"] = "1"
    if args.keys and not args.unkeyed:
        env["BENCH_KEYED"] = os.environ["BENCH_KEYED"] = "1"  # bench-keyed registered
    os.environ.update(DB=args.db, DJANGO_SETTINGS_MODULE=SETTINGS)
    if args.otel:
        os.environ["BENCH_OTEL"] = "1"
    sys.path.insert(0, str(ROOT))

    import django
    from django.conf import settings

    settings.DATABASES  # noqa: B018 - load the settings before django.setup()
    recreate_database(args.db)
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    if args.db == "sqlite":
        import sqlite3

        version = sqlite3.sqlite_version
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            version = cursor.fetchone()[0].split(" on ")[0]
    settle_stats(args.db)

    print(f"database: {args.db} ({version}) {settings.DATABASES['default']['NAME']}")
    from django_workflows.codecs import configured_codecs
    from django_workflows.conf import get_settings

    print(f"codec: {', '.join(repr(c) for c in configured_codecs()) or 'none (plain JSON)'}")
    print(f"step middleware: {', '.join(get_settings().step_middleware) or 'none'}")
    options = settings.DATABASES["default"].get("OPTIONS", {})
    if args.db == "postgres":
        prepared = options.get("server_side_binding") and options.get("prepare_threshold")
        print(
            "statements: server-side binding, prepared after "
            f"{options['prepare_threshold']} runs (DB_PREPARED=1)"
            if prepared
            else "statements: client-side binding, none prepared (Django's default)"
        )
    print(
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"Django {django.__version__}"
    )
    if args.compare_processes:
        one = measure(args, env, 1)
        prepare_database(args)
        print()
        many = measure(args, env, args.processes)
        print()
        print(
            f"{args.processes} processes / 1 process: "
            f"{many['window'] / one['window']:.2f}x (active window: {one['window']:.0f} -> "
            f"{many['window']:.0f} workflows/s), {many['wall'] / one['wall']:.2f}x (wall: "
            f"{one['wall']:.0f} -> {many['wall']:.0f} workflows/s)"
        )
    else:
        measure(args, env, args.processes)
    if args.once:
        return  # --once workers exit when idle: no wake-up to measure

    # Latency, with fresh workers that have nothing to do: they wait for their next poll.
    workers = Workers(args, env)
    workers.start()
    try:
        time.sleep(3)  # Python and Django start-up
        workers.check_alive()
        latencies = latency_phase(args)
    finally:
        workers.stop()
    if latencies:
        print(
            f"wake-up latency, committed start() here -> first step in a worker "
            f"({len(latencies)} samples, {args.processes} process(es), poll interval "
            f"{args.poll_interval or 'default'}): "
            f"median {statistics.median(latencies):.0f} ms, p95 {percentile(latencies, 0.95):.0f} ms, "
            f"min {latencies[0]:.0f} ms, max {latencies[-1]:.0f} ms"
        )


if __name__ == "__main__":
    main()
