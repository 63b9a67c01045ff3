"""2,000 no-op Django tasks drained by one worker process, on WorkflowTaskBackend and on the
django-tasks-db backend, side by side on the same database.

    pip install django-tasks-db   # benchmark-only: the backend compared against
    python benchmarks/tasks.py --db postgres [--tasks 2000] [--concurrency 1 10]

Drops, re-creates and migrates the benchmark database (benchmarks/task_settings.py;
BENCH_DB_NAME names it). For each round: enqueue the tasks (not timed), then start one worker
process and time it until it exits with every task done: `runworkflows --once` (once for each
--concurrency) for WorkflowTaskBackend, `db_worker --batch --interval 0` for django-tasks-db
(which runs one task at a time). Two figures each: the process's wall time (its start-up
included) and the drain, from the first task's start to the last one's finish as the results
record them. Rates are tasks per second.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = "benchmarks.task_settings"


def worker(command: list[str], env: dict[str, str]) -> float:
    """Run one worker process to its end; its wall time in seconds."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "django", *command], env=env, check=True, cwd=str(ROOT))
    return time.monotonic() - started


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:8.0f}/s" if seconds > 0 else "       -"


def round_workflows(count: int, concurrency: int, env: dict[str, str]) -> tuple[float, float]:
    from benchmarks.benchtasks import noop
    from django_workflows.models import WorkflowInstance
    from django_workflows.tasks.names import TASK_WORKFLOW

    WorkflowInstance.objects.filter(workflow=TASK_WORKFLOW).delete()
    ids = [noop.enqueue().id for _ in range(count)]
    wall = worker(["runworkflows", "--once", "--no-reload", "--concurrency", str(concurrency)], env)
    results = [noop.get_result(id) for id in ids]
    undone = [r.id for r in results if r.status != "SUCCESSFUL"]
    if undone:
        raise SystemExit(f"runworkflows left {len(undone)} task(s) unfinished.")
    drain = max(r.finished_at for r in results) - min(r.started_at for r in results)
    return wall, drain.total_seconds()


def round_db(count: int, env: dict[str, str]) -> tuple[float, float]:
    from django.db.models import Max, Min
    from django_tasks_db.models import DBTaskResult

    from benchmarks.benchtasks import db_noop

    DBTaskResult.objects.all().delete()
    for _ in range(count):
        db_noop.enqueue()
    wall = worker(
        [
            "db_worker",
            "--batch",
            "--interval",
            "0",
            "--no-startup-delay",
            "--backend",
            "db",
            "-v",
            "0",
        ],
        env,
    )
    rows: Any = DBTaskResult.objects.all()
    if rows.exclude(status="SUCCESSFUL").exists():
        raise SystemExit("db_worker left tasks unfinished.")
    span = rows.aggregate(first=Min("started_at"), last=Max("finished_at"))
    return wall, (span["last"] - span["first"]).total_seconds()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10])
    args = parser.parse_args(argv)
    env = {
        **os.environ,
        "DB": args.db,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    os.environ.update(DB=args.db, DJANGO_SETTINGS_MODULE=SETTINGS)
    sys.path.insert(0, str(ROOT))

    import django
    from django.conf import settings

    from benchmarks.run import recreate_database

    settings.DATABASES  # noqa: B018 - load the settings before django.setup()
    recreate_database(args.db)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(f"database: {args.db} {settings.DATABASES['default']['NAME']}, {args.tasks} no-op tasks")
    print(f"{'worker':44} {'wall':>8} {'rate':>10} {'drain':>8} {'rate':>10}")
    rows = [
        (f"runworkflows --once --concurrency {n}", round_workflows(args.tasks, n, env))
        for n in args.concurrency
    ]
    rows.append(("db_worker --batch (django-tasks-db)", round_db(args.tasks, env)))
    for name, (wall, drain) in rows:
        print(
            f"{name:44} {wall:7.2f}s {rate(args.tasks, wall)} {drain:7.2f}s "
            f"{rate(args.tasks, drain)}"
        )


if __name__ == "__main__":
    main()
