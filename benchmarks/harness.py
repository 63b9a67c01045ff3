"""What the benchmark scripts that start `runworkflows` processes do first.

A script puts the repository root on `sys.path` (it runs as `python benchmarks/<name>.py`, so
only `benchmarks/` is there), then calls `fresh_database()` before it imports anything that needs
Django set up, and passes `worker_environment()` to the processes it starts.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = "benchmarks.settings"


def worker_environment(db: str, **extra: str) -> dict[str, str]:
    """The environment of the `runworkflows` processes a benchmark starts: this one's, with the
    benchmark settings, the database and the repository root on the path (plus `extra`)."""
    return {
        **os.environ,
        "DB": db,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def fresh_database(db: str) -> None:
    """Drop, re-create and migrate the benchmark database (BENCH_DB_NAME, benchmarks/settings.py)
    and set Django up in this process; prints which database and which code it measures."""
    os.environ.update(DB=db, DJANGO_SETTINGS_MODULE=SETTINGS)

    import django
    from django.conf import settings

    from benchmarks.run import recreate_database

    settings.DATABASES  # noqa: B018 - load the settings before django.setup()
    recreate_database(db)
    django.setup()
    from django.core.management import call_command

    import django_workflows

    call_command("migrate", verbosity=0)
    name = settings.DATABASES["default"]["NAME"]
    print(f"database: {db} {name}; code: {django_workflows.__file__}")
