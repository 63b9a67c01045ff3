"""Django settings for the test suite; the database comes from the environment.

DB=sqlite (default), DB=postgres or DB=mysql; for the servers DB_HOST (127.0.0.1), DB_PORT
(5432 / 3306), DB_USER, DB_PASSWORD and DB_NAME (all three "workflows").
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

import django
from django.core.exceptions import ImproperlyConfigured

SECRET_KEY = "django-workflows-tests-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ALLOWED_HOSTS = ["*"]
STATIC_URL = "/static/"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.admin",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_workflows",
    "tests.testapp",
    "tests.procapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


SQLITE_PRAGMAS = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
"""What every connection to the SQLite file runs first (OPTIONS["init_command"], Django 5.1+)."""


def database_from_environment() -> dict[str, Any]:
    """The `default` database for the DB environment variable."""
    vendor = os.environ.get("DB", "sqlite") or "sqlite"
    if vendor == "sqlite":
        # A file, not :memory:: tests run real threads, each with its own connection. DB_NAME,
        # when set, names it too, so that two runs at once on one machine keep apart; a path
        # is the file itself (the test database, handed to the processes a test starts).
        name = os.environ.get("DB_NAME", "")
        file = f"django_workflows_test_{name}.sqlite3" if name else "django_workflows_test.sqlite3"
        path = name if os.path.isabs(name) else str(Path(tempfile.gettempdir()) / file)
        # The documented set-up (docs/how-to/run-the-worker.md): WAL, synchronous=NORMAL,
        # IMMEDIATE transactions and a busy timeout; Django 4.2 gets the pragmas from
        # tests.testapp's connection_created receiver instead of init_command.
        options: dict[str, Any] = {"timeout": 30}
        if django.VERSION >= (5, 1):
            options["transaction_mode"] = "IMMEDIATE"
            options["init_command"] = SQLITE_PRAGMAS
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            "OPTIONS": options,
            "TEST": {"NAME": path},
        }
    server = {
        "HOST": os.environ.get("DB_HOST", "127.0.0.1"),
        "USER": os.environ.get("DB_USER", "workflows"),
        "PASSWORD": os.environ.get("DB_PASSWORD", "workflows"),
        "NAME": os.environ.get("DB_NAME", "workflows"),
    }
    if vendor == "postgres":
        # DB_PREPARED=1: psycopg's server-side binding, and statements prepared after their
        # fifth execution on a connection (Django's default prepares none), as the docs
        # recommend for the workflows' database.
        prepared = {"server_side_binding": True, "prepare_threshold": 5}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "PORT": os.environ.get("DB_PORT", "5432"),
            "OPTIONS": prepared if os.environ.get("DB_PREPARED") else {},
            **server,
        }
    if vendor == "mysql":
        # Django's default isolation there is READ COMMITTED; DB_ISOLATION="repeatable read"
        # (MySQL's own default, which the product supports too) runs the suite under that.
        options = {"charset": "utf8mb4"}
        if os.environ.get("DB_ISOLATION"):
            options["isolation_level"] = os.environ["DB_ISOLATION"]
        return {
            "ENGINE": "django.db.backends.mysql",
            "PORT": os.environ.get("DB_PORT", "3306"),
            "OPTIONS": options,
            "TEST": {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_bin"},
            **server,
        }
    raise ImproperlyConfigured(f"DB={vendor!r}: expected 'sqlite', 'postgres' or 'mysql'.")


DATABASES = {"default": database_from_environment()}

# Django Tasks on the engine (tests/tasks/): Django 6's django.tasks, or the backport.
if django.VERSION >= (6, 0) or importlib.util.find_spec("django_tasks"):
    if django.VERSION < (6, 0):
        INSTALLED_APPS.append("django_tasks")  # the backport's checks and signals
    TASKS = {
        "default": {
            "BACKEND": "django_workflows.tasks.WorkflowTaskBackend",
            "QUEUES": ["default", "mail", "gpu"],
        },
        "retrying": {
            "BACKEND": "django_workflows.tasks.WorkflowTaskBackend",
            "OPTIONS": {"RETRY": {"attempts": 3, "delay": "10s", "factor": 1}},
        },
    }

# Quiet by default; pytest's caplog still captures records (it attaches its own handler).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"null": {"class": "logging.NullHandler"}},
    "root": {"handlers": ["null"], "level": "WARNING"},
}

# CODEC=1 runs the whole suite with every payload encrypted, as a deployment with a codec would.
if os.environ.get("CODEC"):
    from django_workflows.codecs import AesGcmPayloadCodec

    DJANGO_WORKFLOWS = {
        "CODEC": AesGcmPayloadCodec(keys={"tests": "dGVzdHMtb25seS1rZXktMzItYnl0ZXMtbG9uZy4uLi4="})
    }
