"""Django settings for the benchmark: the test settings' database, under its own name.

DB=sqlite|postgres|mysql and DB_HOST/DB_PORT/DB_USER/DB_PASSWORD as for the tests; the database
is BENCH_DB_NAME (default `workflows_bench`; on SQLite a file of that name in the temp dir),
which benchmarks/run.py drops and re-creates at every run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.settings import database_from_environment

SECRET_KEY = "django-workflows-benchmark-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django_workflows",
    "benchmarks.benchapp",
]

BENCH_DB_NAME = os.environ.get("BENCH_DB_NAME", "workflows_bench")
_database = database_from_environment()
if _database["ENGINE"].endswith("sqlite3"):
    _path = str(Path(tempfile.gettempdir()) / f"{BENCH_DB_NAME}.sqlite3")
    _database.update(NAME=_path, TEST={"NAME": _path})
    # BENCH_SQLITE_DEFAULTS=1: Django's own SQLite options (none), what a project has until it
    # follows the set-up of docs/how-to/run-the-worker.md.
    if os.environ.get("BENCH_SQLITE_DEFAULTS"):
        _database["OPTIONS"] = {}
else:
    _database["NAME"] = BENCH_DB_NAME
DATABASES = {"default": _database}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_workflows": {"handlers": ["console"], "level": "WARNING"}},
}

# CODEC=1: every payload encrypted with the tests' AES-GCM codec, to measure what it costs.
if os.environ.get("CODEC"):
    from tests.settings import DJANGO_WORKFLOWS  # noqa: F401

# BENCH_OTEL=1 (run.py --otel): the OpenTelemetry middleware on, and the SDK in this process.
if os.environ.get("BENCH_OTEL"):
    from benchmarks import otel

    otel.install()
    DJANGO_WORKFLOWS = {
        **globals().get("DJANGO_WORKFLOWS", {}),
        "STEP_MIDDLEWARE": [otel.MIDDLEWARE],
    }

# BENCH_METRICS=1: the worker's Prometheus counters on (DJANGO_WORKFLOWS["METRICS"]).
if os.environ.get("BENCH_METRICS"):
    DJANGO_WORKFLOWS = {**globals().get("DJANGO_WORKFLOWS", {}), "METRICS": True}

# BENCH_STATEMENTS=<path> (benchmarks/wakeup.py): every statement this process sends is noted
# (its time and first word) and written to <path> at exit, to count an idle worker's queries.
if os.environ.get("BENCH_STATEMENTS"):
    from benchmarks import statements

    statements.install(os.environ["BENCH_STATEMENTS"])

# BENCH_TRACEMALLOC=<dir> (benchmarks/memory.py): a runworkflows process traces its allocations
# and writes a snapshot to <dir> at each SIGUSR1.
if os.environ.get("BENCH_TRACEMALLOC") and "runworkflows" in __import__("sys").argv:
    from benchmarks import memory_trace

    memory_trace.install(os.environ["BENCH_TRACEMALLOC"])
