"""Django settings for benchmarks/admin_scale.py: the benchmark settings, with Django's admin
and what it needs (auth, sessions, messages; the tests' middleware and templates) and the
admin's URLs."""

from __future__ import annotations

from benchmarks.settings import *  # noqa: F403
from benchmarks.settings import INSTALLED_APPS
from tests.settings import MIDDLEWARE, TEMPLATES  # noqa: F401

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    *INSTALLED_APPS,
]
ROOT_URLCONF = "benchmarks.admin_urls"
ALLOWED_HOSTS = ["testserver"]
