"""The app's migrations: 0001_initial makes every table (MySQL's and MariaDB's key columns on
their exact collation), 0002_routines the database's own routines from the package's frozen
files; both are undone by `migrate django_workflows zero`. And the check W002: key columns on a
collation that is not exact, as tables restored from elsewhere may have them (on PostgreSQL and
SQLite there is nothing to put back: their comparisons are exact all along).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from importlib import import_module
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection

import django_workflows as wf
from django_workflows.checks import check_database
from django_workflows.models import StoreLock, WorkflowInstance
from django_workflows.store.backends import routines
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
    """The workflow tables on MySQL and MariaDB with their key columns on utf8mb4_bin (as tables
    restored from an older dump may have them), with an application's table whose foreign key
    references the instances; the exact tables back afterwards, whatever the test did."""
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


ROUTINES = (
    *import_module("django_workflows.migrations.0002_routines").ROUTINES,
    *import_module("django_workflows.migrations.0003_start_routine").ROUTINES,
    *import_module("django_workflows.migrations.0004_signal_routine").ROUTINES,
    *import_module("django_workflows.migrations.0005_mysql_signal_routine").ROUTINES,
)


def routine_names() -> set[str]:
    """The names of the database's own functions and procedures that start with dw_."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT proname FROM pg_proc WHERE proname LIKE 'dw%' AND pg_function_is_visible(oid)"
            )
        elif connection.vendor == "mysql":
            cursor.execute(
                "SELECT ROUTINE_NAME FROM information_schema.ROUTINES "
                "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE 'dw%'"
            )
        else:
            return set()
        return {row[0] for row in cursor.fetchall()}


def workflow_tables() -> set[str]:
    tables = {model._meta.db_table for model in workflow_models()}
    return tables & set(connection.introspection.table_names())


def test_migrate_makes_every_key_column_exact():
    assert w002() == []
    if ON_MYSQL:
        found = collations()
        exact = exact_collation(connection)
        for column in key_columns(workflow_models()):
            assert found[column] == exact, column
        assert found[("django_workflows_workflowinstance", "status")] != exact  # not a key


def test_migrate_makes_the_routines_of_the_connections_database():
    expected = {
        "postgresql": {
            "dw_journal_write_v1",
            "dw_final_write_v1",
            "dw_final_write_ride_v1",
            "dw_final_write_ride_v2",
            "dw_start_v1",
            "dw_signal_v1",
        },
        "mysql": {"dw_journal_write_v1", "dw_final_write_v1", "dw_signal_v1"},
    }.get(connection.vendor, set())
    assert routine_names() == expected


def test_migrating_to_zero_and_back_drops_and_makes_everything():
    call_command("migrate", "django_workflows", "0001", verbosity=0)
    try:
        without_routines = routine_names()
        call_command("migrate", "django_workflows", "zero", verbosity=0)
        tables_at_zero = workflow_tables()
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert without_routines == set()
    assert tables_at_zero == set()
    assert workflow_tables() == {model._meta.db_table for model in workflow_models()}
    assert len(routine_names()) == {"postgresql": 6, "mysql": 3}.get(connection.vendor, 0)
    assert StoreLock.objects.filter(name="signals").exists()
    assert w002() == []
    wf.start("wait-once", {"key": "user-1"}, id="after")
    assert WorkflowInstance.objects.filter(pk="after").exists()


def test_each_routine_file_ships_with_the_package():
    """The files the migrations name are read from the installed package, and its
    package-data globs take them into the wheel and the sdist."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["django_workflows"]
    package = Path(import_module("django_workflows").__file__).parent
    for path in ROUTINES:
        assert (package / "store" / "backends" / path).is_file(), path
        assert routines.text(path).startswith("CREATE "), path
        assert any(fnmatch(f"store/backends/{path}", glob) for glob in globs), path


def test_a_routine_file_names_its_routine_and_version():
    for path in ROUTINES:
        name = Path(path).stem  # dw_final_write_v1
        assert name.rsplit("_v", 1)[1].isdigit(), path
        assert f" {name}(" in routines.text(path).splitlines()[0], path


def test_after_migrate_a_key_with_a_trailing_space_is_another_key(workflow_clock):
    wf.start("wait-once", {"key": "user-1"}, id="waiting")
    assert wf.start("wait-once", {"key": "user-1"}, id="waiting ").created is True
    wf.drain()
    assert wf.signal("ping", None, key="user-1 ").woken == 0
    assert WorkflowInstance.objects.filter(pk="waiting").get().status == "suspended"
