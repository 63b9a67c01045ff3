"""Guards for the project itself: migrations in step, and the database the run claims to use."""

from __future__ import annotations

import io
import os

import pytest
from django.core.management import call_command
from django.db import connection


@pytest.mark.django_db
def test_models_and_migrations_are_in_step():
    out = io.StringIO()
    try:
        call_command("makemigrations", "django_workflows", "--check", "--dry-run", stdout=out)
    except SystemExit:
        pytest.fail(f"django_workflows has model changes without a migration:\n{out.getvalue()}")


def _server_version() -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sqlite_version()" if connection.vendor == "sqlite" else "SELECT version()"
        )
        return str(cursor.fetchone()[0])


@pytest.mark.django_db
def test_the_run_uses_the_database_it_claims_to():
    claimed = os.environ.get("DB", "sqlite") or "sqlite"
    vendor = {"sqlite": "sqlite", "postgres": "postgresql", "mysql": "mysql"}[claimed]
    assert connection.vendor == vendor
    version = _server_version()
    if claimed == "postgres":
        assert "PostgreSQL" in version
    elif claimed == "mysql":
        # MariaDB says so in its version string; MySQL's is a bare number such as "8.0.36".
        assert "MariaDB" in version or not connection.mysql_is_mariadb
        assert version.split(".")[0].isdigit()
    else:
        # Tests run threads with their own connections: an in-memory database would not be shared.
        assert not connection.is_in_memory_db()
