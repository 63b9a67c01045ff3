"""Django settings for django-absurd: its documented quickstart (the `AbsurdBackend` of Django's
tasks, the `default` queue) on the database DPEER_ABSURD_NAME, psycopg 3.

    python -m django absurd_worker --concurrency 10   (DJANGO_SETTINGS_MODULE=this module)
"""

from __future__ import annotations

import os

SECRET_KEY = "django-workflows-peers-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["django.contrib.contenttypes", "django_absurd"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("DB_HOST", "127.0.0.1"),
        "PORT": os.environ.get("DB_PORT", "5432"),
        "USER": os.environ.get("DB_USER", "workflows"),
        "PASSWORD": os.environ.get("DB_PASSWORD", "workflows"),
        "NAME": os.environ.get("DPEER_ABSURD_NAME", "dpeer_absurd"),
    }
}
TASKS = {"default": {"BACKEND": "django_absurd.backends.AbsurdBackend"}}
