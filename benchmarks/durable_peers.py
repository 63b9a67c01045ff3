"""Drain rates of django-durable-workflows and its peers, each on a fresh PostgreSQL database.

    python3.12 -m venv /work/venvs/durable-peers
    /work/venvs/durable-peers/bin/pip install -r benchmarks/durable-peers.txt -e .
    /work/venvs/durable-peers/bin/python benchmarks/durable_peers.py --workflows 2000

The peers (pinned in benchmarks/durable-peers.txt: DBOS Transact 3.4.0, django-absurd 1.0.1,
Procrastinate 3.10.0) are benchmark-only, in a virtualenv of their own, never the package's
dependencies. Ours runs in the same virtualenv, this checkout installed with `pip install -e .`
(django-absurd needs Python 3.12+ and Django 6, so ours runs there on Django 6 too). The server
is DB_HOST/DB_PORT/DB_USER/DB_PASSWORD (127.0.0.1:5432, `workflows`/`workflows`); the user must
be able to CREATE DATABASE.

One system at a time (`--systems`, default all, each of ours just before the peers it is
compared with, so that a change in the machine's load falls on both less often), each in a child
process of this script on a database of its own that is dropped and created first
(`dpeer_ours3`, `dpeer_ours1`, `dpeer_dbos`, `dpeer_absurd`, `dpeer_procrastinate`); a table of
the rates, the transactions, the load average before each, and our ratios (ours three-step /
DBOS and / django-absurd, ours one-step / Procrastinate) ends the output:

- ours, three steps and one step: N instances of `bench` (benchmarks/benchapp/workflows.py, K
  trivial steps each returning a small dict), started one `start()` after another, drained by
  one `python -m django runworkflows --concurrency 10` process, as benchmarks/run.py does;
- DBOS (`dbos`, `dbos-default`): N workflows of three `@DBOS.step()`s
  (benchmarks/peers/dbos_app.py) enqueued one by one with a `DBOSClient`, drained by one process
  that calls `DBOS.launch()`, on a queue registered with `worker_concurrency=10` (`dbos`) or
  without a limit per process (`dbos-default`, DBOS's default: it dequeues every due workflow at
  each poll of the queue, once a second, into an unbounded thread pool). With the limit of 10, a
  poll dequeues at most 10, so the drain is bound by the polling interval (about 10/s);
- django-absurd: N Django tasks of three `get_absurd_context().step()`s
  (benchmarks/peers/absurd_tasks.py), `enqueue()`d one by one, drained by one
  `python -m django absurd_worker --concurrency 10`;
- Procrastinate: N one-step tasks (benchmarks/peers/procrastinate_app.py) deferred one by one,
  drained by one `procrastinate worker --concurrency 10`.

Every workflow or task is enqueued before the worker starts. The drain rate is N over the
window from the first claim to the last completion, read from each system's own records, so the
worker's start-up is left out: ours, the first step's `started_at` in the journal to the last
instance's `updated_at`; DBOS, the least `started_at_epoch_ms` (set at dequeue) to the greatest
`updated_at` of `workflow_status`; django-absurd, the least `started_at` to the greatest
`completed_at` of its runs (`absurd.r_default`); Procrastinate, the first `started` event to the
last `succeeded` one (`procrastinate_events`).

Transactions per workflow: `pg_stat_database.xact_commit` of the system's database from before
the enqueues to after the worker exited, over N, this script's own reads (its polls for the
count of finished ones) taken off: the enqueues included, and so are the worker's start-up and
the idle polls until it is stopped (stopped within a quarter of a second of the last
completion), as in benchmarks/run.py's total. "In the window" takes off what the worker commits
outside the rate's window: the same worker command runs once more on the drained database for
as long as the drain's worker lived outside the window (its start-up before the first claim,
and the time from the last completion to its stop), and is stopped the same way; its
transactions (start-up, idle polls, shutdown) are subtracted. Each database is created with
`ALTER DATABASE ... SET timezone TO 'UTC'`, as the PostgreSQL set-up page advises for Django.
Everything else is each system's default, apart from the concurrency. Figures are printed;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# each of ours next to the peers it is compared with, the slow one (about 10/s) last
SYSTEMS = ["ours3", "dbos-default", "absurd", "ours1", "procrastinate", "dbos"]
CONCURRENCY = 10
LABELS = {
    "ours3": "django-durable-workflows, three steps",
    "ours1": "django-durable-workflows, one step",
    "dbos": "DBOS Transact, three steps, worker_concurrency=10",
    "dbos-default": "DBOS Transact, three steps, no worker_concurrency",
    "absurd": "django-absurd, three steps",
    "procrastinate": "Procrastinate, one-step tasks",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=2000, help="N per system")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=SYSTEMS)
    parser.add_argument("--timeout", type=float, default=600, help="give up a drain after (s)")
    parser.add_argument(
        "--pause",
        type=float,
        default=15,
        help="seconds of rest before each system, so that the load printed is not the last one's",
    )
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# -- the server ----------------------------------------------------------------------------------


def server() -> dict[str, Any]:
    return {
        "host": os.environ.get("DB_HOST", "127.0.0.1"),
        "port": int(os.environ.get("DB_PORT", "5432")),
        "user": os.environ.get("DB_USER", "workflows"),
        "password": os.environ.get("DB_PASSWORD", "workflows"),
    }


def url(dbname: str) -> str:
    s = server()
    return f"postgresql://{s['user']}:{s['password']}@{s['host']}:{s['port']}/{dbname}"


def recreate(dbname: str) -> None:
    import psycopg

    with psycopg.connect(**server(), dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dbname}"')
        conn.execute(f'CREATE DATABASE "{dbname}"')
        # The set-up page's advice for Django (ALTER ROLE ... SET timezone TO 'UTC'), here
        # for every system's database: Django then sends no set_config() per connection.
        conn.execute(f"ALTER DATABASE \"{dbname}\" SET timezone TO 'UTC'")


def xact_commit(dbname: str) -> int:
    """Committed transactions of `dbname`, read from the `postgres` database (not counted).
    Backends flush their counters at exit and at most once a second: wait a little first."""
    import psycopg

    time.sleep(1.5)
    with psycopg.connect(**server(), dbname="postgres", autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", [dbname]
        ).fetchone()
    assert row is not None
    return int(row[0])


def server_version() -> str:
    import psycopg

    with psycopg.connect(**server(), dbname="postgres", autocommit=True) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    assert row is not None
    return str(row[0])


# -- one worker process and its drain ------------------------------------------------------------


class Drain:
    """One worker process, started after the enqueues, polled until every one is finished."""

    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        self.log = Path(tempfile.gettempdir()) / f"dpeer_{name}_worker.log"
        self.command = command
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self.polls = 0
        self.started = self.stopped = 0.0  # time.time() of its start and of its SIGTERM

    def run(self, count_done: Callable[[], int], total: int, timeout: float) -> None:
        self.start()
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            time.sleep(0.25)
            if self.process.poll() is not None:
                raise SystemExit(
                    f"the worker exited with {self.process.returncode}; see {self.log}:\n"
                    f"{self.log.read_text()[-3000:]}"
                )
            self.polls += 1
            done = count_done()
            if done >= total:
                return
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(
                    f"only {done} of {total} finished in {timeout}s; see {self.log}:\n"
                    f"{self.log.read_text()[-3000:]}"
                )

    def start(self) -> None:
        with open(self.log, "wb") as out:
            self.started = time.time()
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    def outside(self, first: float, last: float) -> float:
        """The seconds it lived outside the window from `first` to `last` (time.time()): its
        start-up before the first claim, and the time after the last completion until it
        was stopped."""
        return max(0.0, first - self.started) + max(0.0, self.stopped - last)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.stopped = time.time()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def sql_counter(dbname: str, query: str) -> tuple[Callable[[], int], Callable[[], None]]:
    """A function running the count `query` (one autocommit transaction each), one closing it."""
    import psycopg

    conn = psycopg.connect(**server(), dbname=dbname, autocommit=True)

    def run() -> int:
        row = conn.execute(query).fetchone()
        assert row is not None
        return int(row[0])

    return run, conn.close


def sql_row(dbname: str, query: str) -> tuple[Any, ...]:
    """One row of `query`, in one autocommit transaction of a connection of its own."""
    import psycopg

    with psycopg.connect(**server(), dbname=dbname, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return tuple(row)


def idle_transactions(dbname: str, drain: Drain, seconds: float) -> int:
    """The transactions of the same worker command, on the drained database, alive for
    `seconds` and then stopped as the drain's was: its start-up, idle polls and shutdown."""
    before = xact_commit(dbname)
    idle = Drain(f"{drain.log.stem}_idle", drain.command, drain.env)
    idle.start()
    try:
        time.sleep(seconds)
    finally:
        idle.stop()
    return xact_commit(dbname) - before


def child_env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def result(
    system: str,
    n: int,
    steps: int,
    first: float,
    last: float,
    transactions: int,
    idle: int,
) -> dict[str, Any]:
    """The figures of one drain: `transactions` from before the enqueues to the worker's exit
    (this script's reads taken off), and `idle` of them (idle_transactions()) outside the
    window."""
    window = last - first
    return {
        "system": system,
        "workflows": n,
        "steps": steps,
        "window": window,
        "rate": n / window,
        "transactions": transactions / n,
        "in_window": (transactions - idle) / n,
    }


# -- ours ----------------------------------------------------------------------------------------


def measure_ours(system: str, n: int, timeout: float) -> dict[str, Any]:
    steps = 3 if system == "ours3" else 1
    dbname = f"dpeer_{system}"
    env = child_env(
        DB="postgres", DJANGO_SETTINGS_MODULE="benchmarks.settings", BENCH_DB_NAME=dbname
    )
    os.environ.update(env)
    recreate(dbname)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    import django_workflows as wf
    from benchmarks.run import active_window
    from django_workflows.models import WorkflowInstance

    call_command("migrate", verbosity=0)
    connections.close_all()
    before = xact_commit(dbname)
    for index in range(n):
        wf.start("bench", {"steps": steps}, id=f"bench-{index:06d}")
    connections.close_all()
    command = [sys.executable, "-m", "django", "runworkflows", "--concurrency", str(CONCURRENCY)]
    drain = Drain(system, command, env)
    try:
        drain.run(WorkflowInstance.objects.filter(status="completed").count, n, timeout)
        first, last = active_window()
    finally:
        drain.stop()
    connections.close_all()
    total = xact_commit(dbname) - before - drain.polls - 2
    first_at, last_at = first.timestamp(), last.timestamp()
    idle = idle_transactions(dbname, drain, drain.outside(first_at, last_at))
    return result(system, n, steps, first_at, last_at, total, idle)


# -- DBOS Transact -------------------------------------------------------------------------------


def measure_dbos(system: str, n: int, timeout: float) -> dict[str, Any]:
    from dbos import DBOSClient

    from benchmarks.peers import dbos_app

    dbname = "dpeer_dbos"
    recreate(dbname)
    limit = "default" if system == "dbos-default" else str(CONCURRENCY)
    env = child_env(DPEER_DBOS_URL=url(dbname), DPEER_DBOS_WORKER_CONCURRENCY=limit)
    app = [sys.executable, "-m", "benchmarks.peers.dbos_app"]
    # one launch first: DBOS migrates its system database and registers the queue
    subprocess.run([*app, "prepare"], cwd=ROOT, env=env, check=True, capture_output=True)
    before = xact_commit(dbname)
    client = DBOSClient(system_database_url=url(dbname))
    for index in range(n):
        client.enqueue(
            {
                "queue_name": dbos_app.QUEUE,
                "workflow_name": dbos_app.WORKFLOW,
                "workflow_id": f"bench-{index:06d}",
            }
        )
    client.destroy()
    count, close = sql_counter(
        dbname, "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'"
    )
    drain = Drain(system, [*app, "worker"], env)
    try:
        drain.run(count, n, timeout)
        first, last = sql_row(  # epoch milliseconds
            dbname,
            "SELECT min(started_at_epoch_ms), max(updated_at) FROM dbos.workflow_status "
            "WHERE status = 'SUCCESS'",
        )
    finally:
        drain.stop()
        close()
    total = xact_commit(dbname) - before - drain.polls - 1
    idle = idle_transactions(dbname, drain, drain.outside(first / 1000, last / 1000))
    return result(system, n, 3, first / 1000, last / 1000, total, idle)


# -- django-absurd -------------------------------------------------------------------------------


def measure_absurd(n: int, timeout: float) -> dict[str, Any]:
    dbname = "dpeer_absurd"
    env = child_env(
        DJANGO_SETTINGS_MODULE="benchmarks.peers.absurd_settings", DPEER_ABSURD_NAME=dbname
    )
    os.environ.update(env)
    recreate(dbname)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from benchmarks.peers.absurd_tasks import bench_three

    call_command("migrate", verbosity=0)  # Absurd's schema and the `default` queue
    connections.close_all()
    before = xact_commit(dbname)
    for _ in range(n):
        bench_three.enqueue()
    connections.close_all()
    count, close = sql_counter(
        dbname, "SELECT count(*) FROM absurd.t_default WHERE state = 'completed'"
    )
    command = [sys.executable, "-m", "django", "absurd_worker", "--concurrency", str(CONCURRENCY)]
    drain = Drain("absurd", command, env)
    try:
        drain.run(count, n, timeout)
        first, last = sql_row(
            dbname,
            "SELECT extract(epoch FROM min(started_at)), extract(epoch FROM max(completed_at)) "
            "FROM absurd.r_default WHERE state = 'completed'",
        )
    finally:
        drain.stop()
        close()
    total = xact_commit(dbname) - before - drain.polls - 1
    idle = idle_transactions(dbname, drain, drain.outside(float(first), float(last)))
    return result("absurd", n, 3, float(first), float(last), total, idle)


# -- Procrastinate -------------------------------------------------------------------------------


def measure_procrastinate(n: int, timeout: float) -> dict[str, Any]:
    dbname = "dpeer_procrastinate"
    env = child_env(DPEER_PROCRASTINATE_CONNINFO=url(dbname))
    os.environ.update(env)
    recreate(dbname)
    from benchmarks.peers.procrastinate_app import app, one_step

    with app.open():
        app.schema_manager.apply_schema()
    before = xact_commit(dbname)
    with app.open():
        for _ in range(n):
            one_step.defer()
    count, close = sql_counter(
        dbname, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
    )
    command = [
        sys.executable,
        "-m",
        "procrastinate",
        "--app=benchmarks.peers.procrastinate_app.app",
        "worker",
        "--concurrency",
        str(CONCURRENCY),
    ]
    drain = Drain("procrastinate", command, env)
    try:
        drain.run(count, n, timeout)
        first, last = sql_row(
            dbname,
            "SELECT extract(epoch FROM min(at) FILTER (WHERE type = 'started')), "
            "extract(epoch FROM max(at) FILTER (WHERE type = 'succeeded')) "
            "FROM procrastinate_events",
        )
    finally:
        drain.stop()
        close()
    total = xact_commit(dbname) - before - drain.polls - 1
    idle = idle_transactions(dbname, drain, drain.outside(float(first), float(last)))
    return result("procrastinate", n, 1, float(first), float(last), total, idle)


# -- the table -----------------------------------------------------------------------------------


def child(system: str, n: int, timeout: float) -> None:
    sys.path.insert(0, str(ROOT))
    if system in ("ours3", "ours1"):
        figures = measure_ours(system, n, timeout)
    elif system in ("dbos", "dbos-default"):
        figures = measure_dbos(system, n, timeout)
    elif system == "absurd":
        figures = measure_absurd(n, timeout)
    else:
        figures = measure_procrastinate(n, timeout)
    print("RESULT " + json.dumps(figures), flush=True)


def run_child(system: str, args: argparse.Namespace) -> dict[str, Any] | None:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", system]
    command += ["--workflows", str(args.workflows), "--timeout", str(args.timeout)]
    began = time.perf_counter()
    load = os.getloadavg()[0]
    process = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    if process.returncode or not lines:
        print(f"{system}: failed ({process.returncode})\n{process.stderr[-3000:]}", flush=True)
        return None
    figures: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    figures["load"] = load
    print(
        f"{LABELS[system]}: {figures['workflows']} in {figures['window']:.2f}s = "
        f"{figures['rate']:.0f}/s, {figures['transactions']:.2f} transactions each, "
        f"{figures['in_window']:.2f} in the window "
        f"({time.perf_counter() - began:.0f}s in all, load {load:.2f} before it)",
        flush=True,
    )
    return figures


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("django-durable-workflows", "Django", "dbos", "django-absurd", "procrastinate"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} missing")
    return ", ".join(found)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        child(args.child, args.workflows, args.timeout)
        return
    print(
        f"PostgreSQL {server_version()}; Python {sys.version.split()[0]}; {versions()}; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; N = {args.workflows}, "
        f"concurrency {CONCURRENCY}",
        flush=True,
    )
    results = {}
    for system in args.systems:
        time.sleep(args.pause)
        results[system] = run_child(system, args)
    print()
    print(
        "| system | workflows/s | transactions/workflow | in the window | window (s) "
        "| load before it |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for system, figures in results.items():
        if figures:
            print(
                f"| {LABELS[system]} | {figures['rate']:.0f} | {figures['transactions']:.2f} | "
                f"{figures['in_window']:.2f} | {figures['window']:.2f} | {figures['load']:.2f} |"
            )
        else:
            print(f"| {LABELS[system]} | failed | | | | |")
    print()
    pairs = [("ours3", "dbos"), ("ours3", "dbos-default"), ("ours3", "absurd")]
    for ours, peer in [*pairs, ("ours1", "procrastinate")]:
        if results.get(ours) and results.get(peer):
            ratio = results[ours]["rate"] / results[peer]["rate"]  # type: ignore[index]
            print(f"{LABELS[ours]} / {LABELS[peer]}: {ratio:.2f}x")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
