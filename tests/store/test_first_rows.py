"""Backend.first_rows(): the SELECTs inside it are planned for their first rows where the
database must be told (on MariaDB a variable set for each statement), and run unchanged."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workflows.store.backends import backend

pytestmark = pytest.mark.django_db


def one(sql: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


def test_a_select_inside_runs_as_it_is():
    with backend(connection.alias).first_rows():
        assert one("SELECT 1 + 1") == 2


def test_the_limit_preference_holds_for_each_statement_inside_only():
    if not getattr(backend(connection.alias), "has_limit_preference", False):
        pytest.skip("no optimizer_join_limit_pref_ratio on this database")
    from django_workflows.store.backends.mysql.backend import LIMIT_PREFERENCE

    before = one("SELECT @@optimizer_join_limit_pref_ratio")
    with backend(connection.alias).first_rows():
        assert one("SELECT @@optimizer_join_limit_pref_ratio") == LIMIT_PREFERENCE
    assert one("SELECT @@optimizer_join_limit_pref_ratio") == before
