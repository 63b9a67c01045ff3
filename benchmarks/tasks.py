"""Django tasks enqueued and drained by WorkflowTaskBackend and by other Django Tasks backends,
one backend at a time, in the same Django project (benchmarks/task_settings.py).

The peers and the Django they are compared under are pinned in benchmarks/tasks-peers.txt, a
virtualenv of their own (Django 6 needs Python 3.12 or later):

    python3.13 benchmarks/tasks.py --make-venv .venv-tasks
    # the same as: python3.13 -m venv .venv-tasks &&
    #   .venv-tasks/bin/pip install -r benchmarks/tasks-peers.txt -e ".[postgres]"
    .venv-tasks/bin/python benchmarks/tasks.py --db postgres sqlite [--tasks 2000]

Backends (`--backends`, all by default), each the `default` alias as its README configures it,
drained by its own worker command at its defaults, with 10 threads (`--concurrency`) where it
has them:

    workflows  WorkflowTaskBackend   runworkflows --once --concurrency 10
    tasks-db   django-tasks-db       db_worker --batch (one task at a time)
    dj-queue   dj-queue              dj_queue (OPTIONS workers: [{"threads": 10}])
    ox         django-ox             ox_worker --concurrency 10 --batch

For each backend, each database and each task kind (`noop`, and `insert3`: three ORM inserts
into benchmarks.benchapp's BenchRow), in a process of its own: drop, re-create and migrate the
database (BENCH_DB_NAME, default `workflows_tasks`; a file in the temp dir on SQLite, with the
documented set-up unless BENCH_SQLITE_DEFAULTS=1), time N `enqueue()` calls from one thread
(calls/s, and `time.thread_time()` per call), then start the worker process and time the drain:
from the first task's start to the last one's finish as the results record them. dj-queue's
results keep no start, so its drain starts at its first claim: the script polls its ready and
claimed executions every 5 ms until the worker claims, and takes the earlier of that poll and the
oldest claim still held then. Either way the worker's start-up is left out.
A worker that does not exit when the queue is empty (dj-queue) is stopped with SIGTERM once every
task has finished. Each round also prints the worker's CPU a task: its processes' user and
system time (resource.RUSAGE_CHILDREN once they are reaped), start-up and shutdown included,
which is steadier from run to run than a rate. Then it times the N `get_result()` calls that
check the outcome, one thread, each task finished: what a web request that shows a task's
result pays.

Prints each round, then a table of enqueue/s and get_result/s (both kinds' calls) and drain/s
per database, ours divided by each peer's per cell, and the worker's CPU a task per database
and kind. A backend that is not installed or fails on a database shows why in place of its
figures. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "benchmarks" / "tasks-peers.txt"
SETTINGS = "benchmarks.task_settings"
KINDS = {"noop": "no-op", "insert3": "3 inserts"}
DATABASES = {"postgres": "PG", "mysql": "MariaDB", "sqlite": "SQLite"}

# name: (what the table calls it, the module it needs, its worker's command; {c} the threads)
BACKENDS: dict[str, tuple[str, str, list[str]]] = {
    "workflows": (
        "WorkflowTaskBackend",
        "django_workflows",
        ["runworkflows", "--once", "--concurrency", "{c}"],
    ),
    "tasks-db": ("django-tasks-db", "django_tasks_db", ["db_worker", "--batch"]),
    "dj-queue": ("dj-queue", "dj_queue", ["dj_queue"]),
    "ox": ("django-ox", "django_ox", ["ox_worker", "--concurrency", "{c}", "--batch"]),
}
OURS = "workflows"


def make_venv(path: Path) -> None:
    """A virtualenv at `path` with this checkout, psycopg and the pinned peers."""
    venv.create(path, with_pip=True)
    python = str(path / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-r", str(PINS), "-e", f"{ROOT}[postgres]"], check=True
    )
    print(f"made {path}: run {python} benchmarks/tasks.py")


# --- one round, in a process of its own -------------------------------------------------------


def one_round(
    backend: str, kind: str, db: str, count: int, concurrency: int, timeout: float
) -> dict:
    """Enqueue `count` tasks of `kind` on a fresh database, drain them with the backend's
    worker; what `main()` prints."""
    env = {
        "DB": db,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "BENCH_TASKS": backend,
        "BENCH_THREADS": str(concurrency),
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))

    import django
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from benchmarks.run import recreate_database

    settings.DATABASES  # noqa: B018 - load the settings before django.setup()
    recreate_database(db)
    django.setup()
    call_command("migrate", verbosity=0)

    from benchmarks import benchtasks
    from benchmarks.benchapp.models import BenchRow

    task = getattr(benchtasks, kind)
    wall, cpu = time.perf_counter(), time.thread_time()
    ids = [task.enqueue().id for _ in range(count)]
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    connections.close_all()

    command = [part.format(c=concurrency) for part in BACKENDS[backend][2]]
    worker_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryFile("w+") as log:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "django", *command],
            env=worker_env,
            cwd=str(ROOT),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            claimed = _run_worker(backend, process, count, started + timeout)
        finally:
            _stop(process)
        worker_wall = time.monotonic() - started
        # The worker's processes, reaped by _stop(): its CPU, start-up and shutdown included.
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        worker_cpu = (reaped.ru_utime - children.ru_utime) + (reaped.ru_stime - children.ru_stime)
        log.seek(0)
        output = log.read()

    reading, reading_cpu = time.perf_counter(), time.thread_time()
    results = [task.get_result(id) for id in ids]
    reading, reading_cpu = time.perf_counter() - reading, time.thread_time() - reading_cpu
    done = [r for r in results if r.status == "SUCCESSFUL"]
    if len(done) < count:
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise SystemExit(
            f"{len(done)} of {count} tasks successful after {worker_wall:.1f} s "
            f"(worker exit {process.returncode}): {tail}"
        )
    if kind == "insert3" and BenchRow.objects.count() != 3 * count:
        raise SystemExit(f"{BenchRow.objects.count()} rows inserted, not {3 * count}")
    starts = [r.started_at for r in results if r.started_at is not None]
    first = min(starts) if len(starts) == count else claimed
    if first is None:
        raise SystemExit("the results record no start, and no claim was seen")
    drain = (max(r.finished_at for r in results) - first).total_seconds()
    first_end = (min(r.finished_at for r in results) - first).total_seconds()
    return {
        "enqueue_wall": wall,
        "enqueue_cpu": cpu,
        "result_wall": reading,
        "result_cpu": reading_cpu,
        "drain": drain,
        "from": "results" if len(starts) == count else "first claim seen",
        "first_end": first_end,
        "worker_wall": worker_wall,
        "worker_cpu": worker_cpu,
    }


def _run_worker(backend: str, process: subprocess.Popen, count: int, deadline: float) -> Any:
    """Wait for the worker to exit, or (dj-queue, which does not) for every task to finish;
    where the results record no start (dj-queue), the first claim, else None."""
    if backend != "dj-queue":
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        return None
    from dj_queue.models import ClaimedExecution, Job, ReadyExecution
    from django.db.models import Min
    from django.utils import timezone

    # Every 5 ms until the worker has claimed (its start-up), then every 0.2 s. The first
    # claim is the earlier of this poll and the oldest claim still held then, both after it.
    first = None
    while time.monotonic() < deadline and process.poll() is None:
        if first is None:
            seen = timezone.now()
            if ReadyExecution.objects.count() < count:
                held = ClaimedExecution.objects.aggregate(first=Min("created_at"))["first"]
                first = min(filter(None, [seen, held]))
            time.sleep(0.005)
            continue
        if Job.objects.filter(finished_at__isnull=False).count() >= count:
            break
        time.sleep(0.2)
    return first


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM (a graceful stop, for every worker here), then SIGKILL to its process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # forked children (dj-queue's supervisor)
    except ProcessLookupError:
        pass
    process.wait()


# --- the whole run ------------------------------------------------------------------------------


def run_round(args: argparse.Namespace, backend: str, kind: str, db: str) -> dict | str:
    """One round in a child process: its figures, or why there are none."""
    command = [sys.executable, __file__, "--round", backend, kind, "--db", db]
    command += ["--tasks", str(args.tasks), "--concurrency", str(args.concurrency)]
    command += ["--timeout", str(args.timeout)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=str(ROOT))
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        return json.loads(lines[-1])
    why = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return why[:200]


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", nargs="+", choices=list(DATABASES), default=["postgres"])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--backends", nargs="+", choices=list(BACKENDS), default=list(BACKENDS))
    parser.add_argument("--concurrency", type=int, default=10, help="the threads of a worker")
    parser.add_argument("--timeout", type=float, default=600, help="seconds for one drain")
    parser.add_argument("--make-venv", type=Path, metavar="PATH")
    parser.add_argument("--round", nargs=2, metavar=("BACKEND", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.make_venv:
        make_venv(args.make_venv)
        return
    os.environ.setdefault("BENCH_DB_NAME", "workflows_tasks")
    if args.round:
        backend, kind = args.round
        figures = one_round(backend, kind, args.db[0], args.tasks, args.concurrency, args.timeout)
        print(json.dumps(figures))
        return

    import importlib.metadata
    import importlib.util

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    print(
        f"{args.tasks} tasks a round; Django {version('django')}, django-tasks-db "
        f"{version('django-tasks-db')}, dj-queue {version('dj-queue')}, django-ox "
        f"{version('django-ox')}; {os.getloadavg()[0]:.2f} load"
    )
    figures: dict[tuple[str, str, str], dict | str] = {}
    for backend in args.backends:
        installed = importlib.util.find_spec(BACKENDS[backend][1]) is not None
        for db in args.db:
            for kind in KINDS:
                key = (backend, db, kind)
                if not installed:
                    figures[key] = f"not installed (pip install -r {PINS.relative_to(ROOT)})"
                    continue
                figures[key] = found = run_round(args, backend, kind, db)
                if isinstance(found, str):
                    print(f"{backend:10} {db:8} {kind:8} failed: {found}", flush=True)
                    continue
                print(
                    f"{backend:10} {db:8} {kind:8} enqueue {rate(args.tasks, found['enqueue_wall']):6.0f}/s "
                    f"{found['enqueue_cpu'] / args.tasks * 1000:.3f} ms CPU/call; get_result "
                    f"{rate(args.tasks, found['result_wall']):6.0f}/s "
                    f"{found['result_cpu'] / args.tasks * 1000:.3f} ms CPU/call; drain "
                    f"{found['drain']:6.2f} s {rate(args.tasks, found['drain']):6.0f}/s "
                    f"(from {found['from']}, first end +{found['first_end'] * 1000:.0f} ms); "
                    f"worker {found['worker_wall']:.1f} s, its CPU "
                    f"{found['worker_cpu'] / args.tasks * 1000:.2f} ms a task; "
                    f"load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    print_tables(args, figures)


def cells(args: argparse.Namespace, figures: dict, backend: str) -> list[float | str]:
    """A backend's row: per database, enqueue/s and get_result/s over both kinds' calls, then
    drain/s per kind."""
    row: list[float | str] = []
    for db in args.db:
        rounds = [figures[(backend, db, kind)] for kind in KINDS]
        failed = next((r for r in rounds if isinstance(r, str)), None)
        for wall in ("enqueue_wall", "result_wall"):
            row.append(
                failed if failed else rate(args.tasks * len(rounds), sum(r[wall] for r in rounds))
            )
        row += [
            r if isinstance(r, str) else rate(args.tasks, r["drain"])
            for r in (figures[(backend, db, kind)] for kind in KINDS)
        ]
    return row


def print_tables(args: argparse.Namespace, figures: dict) -> None:
    heads = []
    for db in args.db:
        name = DATABASES[db]
        heads += [f"enqueue/s {name}", f"get_result/s {name}"]
        heads += [f"drain/s {name} {label}" for label in KINDS.values()]
    rows = {backend: cells(args, figures, backend) for backend in args.backends}
    notes: dict[str, int] = {}

    def show(value: float | str, digits: int = 0) -> str:
        if isinstance(value, str):
            return f"[{notes.setdefault(value, len(notes) + 1)}]"
        return f"{value:.{digits}f}"

    print("\n| backend | " + " | ".join(heads) + " |")
    print("| --- |" + " --- |" * len(heads))
    for backend, row in rows.items():
        print(f"| {BACKENDS[backend][0]} | " + " | ".join(show(v) for v in row) + " |")
    if OURS in rows and len(rows) > 1:
        print(f"\n{BACKENDS[OURS][0]} divided by each peer:\n")
        print("| peer | " + " | ".join(heads) + " |")
        print("| --- |" + " --- |" * len(heads))
        for backend, row in rows.items():
            if backend == OURS:
                continue
            ratios = [
                f"{ours / theirs:.2f}×"
                if isinstance(ours, float) and isinstance(theirs, float)
                else "-"
                for ours, theirs in zip(rows[OURS], row, strict=True)
            ]
            print(f"| {BACKENDS[backend][0]} | " + " | ".join(ratios) + " |")
    print("\nThe worker's CPU a task in ms (its processes, start-up included):\n")
    drains = [f"{DATABASES[db]} {label}" for db in args.db for label in KINDS.values()]
    print("| backend | " + " | ".join(drains) + " |")
    print("| --- |" + " --- |" * len(drains))
    for backend in args.backends:
        found = [figures[(backend, db, kind)] for db in args.db for kind in KINDS]
        spent = [r if isinstance(r, str) else r["worker_cpu"] / args.tasks * 1000 for r in found]
        print(f"| {BACKENDS[backend][0]} | " + " | ".join(show(v, 2) for v in spent) + " |")
    for note, number in notes.items():
        print(f"[{number}] {note}")


if __name__ == "__main__":
    main()
