"""Migration 0003 and the check W002: key columns of tables created before 0003 made exact.

Before 0003, MySQL's and MariaDB's key columns were `utf8mb4_bin`, a PAD SPACE collation. These
tests put the tables back in that state (on PostgreSQL and SQLite there is nothing to put back:
their comparisons were exact all along), then check what W002 says and what 0003 does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection

import django_workflows as wf
from django_workflows.checks import check_database
from django_workflows.models import WorkflowInstance
from django_workflows.store.backends.mysql.collations import (
    PADDED_BINARY,
    exact_collation,
    key_columns,
    move_key_columns,
)

pytestmark = pytest.mark.django_db(transaction=True)  # ALTER TABLE commits on MySQL

ON_MYSQL = connection.vendor == "mysql"
OTHER_TABLE = "dw_test_invoice"  # an application's table with a foreign key to the instances


def workflow_models() -> list[object]:
    return list(apps.get_app_config("django_workflows").get_models())


def collations() -> dict[tuple[str, str], str]:
    """(table, column) -> collation of every text column of the workflow tables and the
    application's table."""
    tables = {table for table, _ in key_columns(workflow_models())} | {OTHER_TABLE}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND COLLATION_NAME IS NOT NULL AND TABLE_NAME IN "
            f"({', '.join(['%s'] * len(tables))})",
            sorted(tables),
        )
        return {(table, column): collation for table, column, collation in cursor.fetchall()}


def foreign_keys() -> set[tuple[str, str, str, str]]:
    """(table, column, referenced table, referenced column) of the database's foreign keys."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
            "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() "
            "AND REFERENCED_TABLE_NAME IS NOT NULL"
        )
        return set(cursor.fetchall())


def w002() -> list[str]:
    return [
        problem.msg
        for problem in check_database(databases=[connection.alias])
        if problem.id == "django_workflows.W002"
    ]


@pytest.fixture
def padded_tables() -> Iterator[None]:
    """The workflow tables as 0001 created them on MySQL and MariaDB before 0003 (key columns
    on utf8mb4_bin), with an application's table whose foreign key references the instances;
    the exact tables back afterwards, whatever the test did."""
    if ON_MYSQL:
        with connection.schema_editor() as editor:
            move_key_columns(editor, workflow_models(), PADDED_BINARY)
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE {OTHER_TABLE} (id integer PRIMARY KEY, instance_id varchar(255) "
                f"CHARACTER SET utf8mb4 COLLATE {PADDED_BINARY} NULL, CONSTRAINT "
                f"dw_test_invoice_instance FOREIGN KEY (instance_id) REFERENCES "
                f"django_workflows_workflowinstance (id)) ENGINE=InnoDB"
            )
    try:
        yield
    finally:
        if ON_MYSQL:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {OTHER_TABLE}")
            with connection.schema_editor() as editor:
                move_key_columns(editor, workflow_models())


@pytest.mark.skipif(not ON_MYSQL, reason="PostgreSQL and SQLite have no PAD SPACE collation")
def test_a_key_column_on_a_pad_space_collation_is_w002_naming_it(padded_tables):
    [message] = w002()
    assert "django_workflows_signal.key (utf8mb4_bin)" in message
    assert "django_workflows_workflowinstance.id (utf8mb4_bin)" in message
    assert "django_workflows_journalentry.instance_id (utf8mb4_bin)" in message


@pytest.mark.skipif(not ON_MYSQL, reason="PostgreSQL and SQLite have no PAD SPACE collation")
def test_w002_names_only_the_key_columns_still_padded(padded_tables):
    with connection.cursor() as cursor:
        cursor.execute(
            f"ALTER TABLE django_workflows_signal MODIFY dedupe_id varchar(255) "
            f"CHARACTER SET utf8mb4 COLLATE {exact_collation(connection)} NULL"
        )
    [message] = w002()
    assert "django_workflows_signal.dedupe_id" not in message
    assert "django_workflows_signal.key (utf8mb4_bin)" in message
    assert "status" not in message and "input" not in message  # not key columns


def test_migration_0003_moves_every_key_column_onto_the_exact_collation(padded_tables):
    call_command("migrate", "django_workflows", "0002", verbosity=0)
    call_command("migrate", "django_workflows", verbosity=0)
    assert w002() == []
    if ON_MYSQL:
        found = collations()
        exact = exact_collation(connection)
        for column in key_columns(workflow_models()) | {(OTHER_TABLE, "instance_id")}:
            assert found[column] == exact, column
        assert found[("django_workflows_workflowinstance", "status")] != exact  # left alone


def test_migration_0003_keeps_the_foreign_keys(padded_tables):
    before = foreign_keys() if ON_MYSQL else set()
    call_command("migrate", "django_workflows", "0002", verbosity=0)
    call_command("migrate", "django_workflows", verbosity=0)
    if ON_MYSQL:
        assert foreign_keys() == before
        assert (OTHER_TABLE, "instance_id", "django_workflows_workflowinstance", "id") in before
        assert (
            "django_workflows_journalentry",
            "instance_id",
            "django_workflows_workflowinstance",
            "id",
        ) in before


def test_after_migration_0003_a_key_with_a_trailing_space_is_another_key(
    padded_tables, workflow_clock
):
    call_command("migrate", "django_workflows", "0002", verbosity=0)
    call_command("migrate", "django_workflows", verbosity=0)
    wf.start("wait-once", {"key": "user-1"}, id="waiting")
    assert wf.start("wait-once", {"key": "user-1"}, id="waiting ").created is True
    wf.drain()
    assert wf.signal("ping", None, key="user-1 ").woken == 0
    assert WorkflowInstance.objects.filter(pk="waiting").get().status == "suspended"
