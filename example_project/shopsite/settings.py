"""Settings of the example shop: SQLite next to this project, one worker process."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import django
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

# A development project: never deploy these values.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "django-insecure-example-shop-only")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_workflows",
    "shop",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "shopsite.urls"
WSGI_APPLICATION = "shopsite.wsgi.application"

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


def database_from_environment() -> dict[str, Any]:
    """SQLite next to this project; DB=postgres or DB=mysql picks a server instead.

    The servers take DB_HOST (127.0.0.1), DB_PORT (5432 / 3306), DB_USER, DB_PASSWORD and
    DB_NAME (all three "workflows"), as the test suite's settings do; the shop's test database is
    test_shop_<DB_NAME>.
    """
    vendor = os.environ.get("DB", "sqlite") or "sqlite"
    if vendor == "sqlite":
        suffix = f"_{os.environ['DB_NAME']}" if os.environ.get("DB_NAME") else ""
        # The web server and the `runworkflows` worker share this file. A 30 s busy timeout and
        # BEGIN IMMEDIATE keep their transactions from failing with "database is locked"; WAL
        # lets readers read while one writes, and synchronous=NORMAL skips the fsync of every
        # commit (a power cut can lose the last commits, never corrupt the file). Django 4.2
        # has no init_command for SQLite: shop.apps runs the pragmas on each connection there.
        options: dict[str, Any] = {"timeout": 30}
        if django.VERSION >= (5, 1):
            options["transaction_mode"] = "IMMEDIATE"
            options["init_command"] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "db.sqlite3",
            "OPTIONS": options,
            # A file, not :memory:, for the tests: the worker's threads each open a connection.
            # DB_NAME, when set, names it too: two runs at once on one machine keep apart.
            "TEST": {"NAME": str(Path(tempfile.gettempdir()) / f"shop_test{suffix}.sqlite3")},
        }
    server = {
        "HOST": os.environ.get("DB_HOST", "127.0.0.1"),
        "USER": os.environ.get("DB_USER", "workflows"),
        "PASSWORD": os.environ.get("DB_PASSWORD", "workflows"),
        "NAME": os.environ.get("DB_NAME", "workflows"),
    }
    # Not the test suite's test_<DB_NAME>: the two runs may share a server. Named after DB_NAME
    # too, so that runs from two checkouts with their own DB_NAME do not share one.
    test_name = f"test_shop_{server['NAME']}"
    if vendor == "postgres":
        return {
            "ENGINE": "django.db.backends.postgresql",
            "PORT": os.environ.get("DB_PORT", "5432"),
            # The recommended set-up: statements bound on the server and prepared after five
            # runs on a connection (docs/how-to/run-the-worker.md, "The PostgreSQL set-up").
            "OPTIONS": {"server_side_binding": True, "prepare_threshold": 5},
            "TEST": {"NAME": test_name},
            **server,
        }
    if vendor == "mysql":
        return {
            "ENGINE": "django.db.backends.mysql",
            "PORT": os.environ.get("DB_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4"},
            "TEST": {"NAME": test_name, "CHARSET": "utf8mb4", "COLLATION": "utf8mb4_bin"},
            **server,
        }
    raise ImproperlyConfigured(f"DB={vendor!r}: expected 'sqlite', 'postgres' or 'mysql'.")


DATABASES = {"default": database_from_environment()}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"

DJANGO_WORKFLOWS = {
    "WORKER": {"CONCURRENCY": 4, "POLL_INTERVAL": "1s"},
}

# The stand-in payment provider declines cards for orders above this total (in cents).
SHOP_CARD_LIMIT = 100_000

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "console": {"format": "{asctime} {levelname} [{name}] {message}", "style": "{"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "console"},
    },
    "loggers": {
        # DEBUG: the worker's console shows each step as it completes (`step-completed`) and
        # each wait (`workflow-suspended`), besides the starts, ends and failures logged at INFO.
        # A production project would keep INFO (docs/reference/events.md).
        "django_workflows": {"handlers": ["console"], "level": "DEBUG", "propagate": False},
        "shop": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
